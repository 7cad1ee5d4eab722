#include "shim/base/rm_abi.h"

#include <gtest/gtest.h>

#include <cstring>

namespace vgpu::shim::rm {
namespace {

template <typename T>
void Put(uint8_t* p, size_t off, T v) {
  memcpy(p + off, &v, sizeof v);
}

TEST(RmAbi, RequestWordDecoding) {
  EXPECT_EQ(IocNr(0xC030462Bul), NV_ESC_RM_ALLOC);
  EXPECT_EQ(IocSize(0xC030462Bul), 48u);
  EXPECT_EQ(IocSize(0xC90046C8ul), 2304u);  // CARD_INFO x32
}

TEST(RmAbi, AllocParamsSizeByClass) {
  EXPECT_EQ(AllocParamsSize(0x40), 128u);
  EXPECT_EQ(AllocParamsSize(0x50a0), 128u);
  EXPECT_EQ(AllocParamsSize(0x41), 120u);
  EXPECT_EQ(AllocParamsSize(0xa06c), 20u);
  EXPECT_EQ(AllocParamsSize(0xc86f), 368u);
  EXPECT_EQ(AllocParamsSize(0x123456), 0u);
}

TEST(RmAbi, NestedPointersOfAllocControlXferEvent) {
  uint8_t top[48] = {};
  NestedPtr out[2];
  Put<uint32_t>(top, 12, 0x40);
  Put<uint64_t>(top, 16, 0x7000);
  ASSERT_EQ(NestedPointers(NV_ESC_RM_ALLOC, top, 48, out), 1);
  EXPECT_EQ(out[0].off, 16u);
  EXPECT_EQ(out[0].ptr, 0x7000u);
  EXPECT_EQ(out[0].len, 128u);
  EXPECT_FALSE(out[0].len_unknown);

  Put<uint32_t>(top, 12, 0x777);  // class without a row: length unknown
  ASSERT_EQ(NestedPointers(NV_ESC_RM_ALLOC, top, 32, out), 1);
  EXPECT_TRUE(out[0].len_unknown);

  uint8_t ctl[32] = {};
  Put<uint64_t>(ctl, 16, 0x9000);
  Put<uint32_t>(ctl, 24, 1028);
  ASSERT_EQ(NestedPointers(NV_ESC_RM_CONTROL, ctl, 32, out), 1);
  EXPECT_EQ(out[0].len, 1028u);
  Put<uint32_t>(ctl, 24, 0);
  EXPECT_EQ(NestedPointers(NV_ESC_RM_CONTROL, ctl, 32, out), 0);

  uint8_t xfer[16] = {};
  Put<uint32_t>(xfer, 4, 32);
  Put<uint64_t>(xfer, 8, 0xa000);
  ASSERT_EQ(NestedPointers(NV_ESC_IOCTL_XFER_CMD, xfer, 16, out), 1);
  EXPECT_EQ(out[0].off, 8u);
  Put<uint32_t>(xfer, 4, 20000);  // over NV_ABSOLUTE_MAX_IOCTL_SIZE
  EXPECT_EQ(NestedPointers(NV_ESC_IOCTL_XFER_CMD, xfer, 16, out), 0);

  uint8_t ev[16] = {};
  Put<uint64_t>(ev, 0, 0xb000);
  ASSERT_EQ(NestedPointers(NV_ESC_RM_GET_EVENT_DATA, ev, 16, out), 1);
  EXPECT_EQ(out[0].len, 16u);

  // Wrong top-level sizes yield nothing rather than a misread.
  EXPECT_EQ(NestedPointers(NV_ESC_RM_ALLOC, top, 40, out), 0);
  EXPECT_EQ(NestedPointers(NV_ESC_RM_CONTROL, ctl, 16, out), 0);
}

}  // namespace
}  // namespace vgpu::shim::rm

// The calls that run from a sealed copy (issue 17 F2/F3; kmod/core/seal.c vcore_sealed_size and
// vcore_sealed_next: one definition, from the escape, class, control and UVM tables) and the
// core's answer when the host says that copy was replaced during a map
// (vcore_call_params_replaced): tampering, the caller killed, and every memory object of the
// caller's process held by the UVM file until it closes, since UVM may have dupped any of them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "abi/classes.h"
#include "abi/ctrl.h"
#include "abi/nv_escape.h"
#include "abi/nvos.h"
#include "abi/uvm.h"
#include "kmod/core/vcore_internal.h"
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

int g_kills = 0;

// The host's driver_memory op as the kernel host answers a tampered call: (0, 0) kills the
// caller; a question about an object it cannot answer (the core then settles from the reply).
int KillOnly(void*, vcore_u32 h_client, vcore_u32, vcore_u32 h_object, vcore_driver_mem* bytes) {
  if (bytes != nullptr) return -5;
  if (h_client == 0 && h_object == 0) ++g_kills;
  return 0;
}

vcore_host_ops KillingOps() {
  vcore_host_ops ops = SimHost::kOps;
  ops.driver_memory = KillOnly;
  return ops;
}
const vcore_host_ops kKillingOps = KillingOps();

vcore_u32 SealedSize(const vcore_file* f, vcore_u32 req) {
  vcore_seal_piece top{};
  return vcore_sealed_size(f, req, &top);
}

TEST_F(CoreTest, UvmCallsThatRunSealedAreTheUvmTablesSealedRows) {
  MakeSlot(0);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_NE(uvm, nullptr);
  EXPECT_EQ(SealedSize(uvm, UVM_MAP_EXTERNAL_ALLOCATION), 9264u);
  EXPECT_EQ(SealedSize(uvm, UVM_CREATE_EXTERNAL_RANGE), 24u);
  EXPECT_EQ(SealedSize(uvm, UVM_FREE), 24u);
  EXPECT_EQ(SealedSize(uvm, UVM_UNMAP_EXTERNAL), 40u);
  EXPECT_EQ(SealedSize(uvm, UVM_MM_INITIALIZE), 8u)
      << "runs from a kernel thread whose only user memory is the sealed copy";
  EXPECT_EQ(SealedSize(uvm, UVM_MIGRATE), 0u);
  EXPECT_EQ(SealedSize(uvm, 4000), 0u) << "unknown: refused by the core, not sealed";
  vcore_seal_piece top{};
  ASSERT_EQ(vcore_sealed_size(uvm, UVM_FREE, &top), 24u);
  vcore_seal_piece next{};
  const std::vector<uint8_t> fp(UVM_FREE_SIZE);
  EXPECT_EQ(vcore_sealed_next(uvm, &top, fp.data(), &next), 0u) << "UVM params nest nothing";
  vcore_file_close(uvm);
}

vcore_u32 Req(vcore_u32 nr, vcore_u32 size) { return 0xc0004600u | nr | (size << 16); }

// RM escapes: every one the core decides on is sealed whole (nvidia_ioctl copies _IOC_SIZE bytes
// in again), with the nested params the core reads: RM_ALLOC's class params, sized by class as RM
// sizes them, and a handled control's params; an XFER's payload when the core decides on its
// escape. A plain control's params, a pass, an unknown escape or a wrong size: no seal of them.
TEST_F(CoreTest, RmEscapesTheCoreDecidesOnAreSealedWithTheParamsItReads) {
  MakeSlot(64 * kMiB);
  vcore_seal_piece top{}, next{};

  // RM_ALLOC (NVOS64) of a virtual range: the argument, then its class params at pAllocParms.
  ASSERT_EQ(vcore_sealed_size(ctl_, Req(NV_ESC_RM_ALLOC, 48), &top), 48u);
  EXPECT_EQ(top.nr, static_cast<vcore_u32>(NV_ESC_RM_ALLOC));
  uint8_t alloc[48] = {};
  const vcore_u32 cls = NV50_MEMORY_VIRTUAL;
  const uint64_t params = 0x7000;
  std::memcpy(alloc + 12, &cls, 4);
  std::memcpy(alloc + 16, &params, 8);
  ASSERT_EQ(vcore_sealed_next(ctl_, &top, alloc, &next), sizeof(NV_MEMORY_ALLOCATION_PARAMS));
  EXPECT_EQ(next.ptr_off, 16u);
  EXPECT_EQ(next.nr, VCORE_SEAL_LEAF);
  EXPECT_EQ(vcore_sealed_next(ctl_, &next, alloc, &top), 0u) << "class params nest nothing here";
  std::memset(alloc + 16, 0, 8);
  top = {NV_ESC_RM_ALLOC, 48, 0};
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, alloc, &next), 0u) << "no params pointer";

  // RM_CONTROL: the NVOS54 always; the params of a control with a handler.
  ASSERT_EQ(vcore_sealed_size(ctl_, Req(NV_ESC_RM_CONTROL, 32), &top), 32u);
  NVOS54_PARAMETERS c{};
  c.params = 0x8000;
  c.cmd = NVA06C_CTRL_CMD_GET_TIMESLICE;
  c.paramsSize = 8;
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, &c, &next), 0u) << "a plain control's params";
  c.cmd = NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS;
  const vcore_ctrl_row* row = vcore_slot_ctrl(slot_, c.cmd);
  ASSERT_TRUE(row != nullptr && row->pre != nullptr) << "a control the core handles";
  c.paramsSize = row->size;
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, &c, &next), c.paramsSize);
  EXPECT_EQ(next.ptr_off, 16u);
  if (!(row->flags & VCORE_CTRL_ANY_SIZE)) {
    c.paramsSize += 4;
    EXPECT_EQ(vcore_sealed_next(ctl_, &top, &c, &next), 0u) << "wrong size: refused, not read";
  }

  // XFER: the header, then the payload of an escape the core decides on.
  ASSERT_EQ(vcore_sealed_size(ctl_, Req(NV_ESC_IOCTL_XFER_CMD, 16), &top), 16u);
  nv_ioctl_xfer_t x{NV_ESC_RM_ALLOC, 48, 0x9000};
  ASSERT_EQ(vcore_sealed_next(ctl_, &top, &x, &next), 48u);
  EXPECT_EQ(next.nr, static_cast<vcore_u32>(NV_ESC_RM_ALLOC));
  EXPECT_EQ(next.ptr_off, 8u);
  x.cmd = NV_ESC_IOCTL_XFER_CMD;
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, &x, &next), 0u) << "XFER in XFER is refused";
  x = {Req(NV_ESC_RM_ALLOC, 48), 48, 0x9000};
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, &x, &next), 0u) << "a full ioctl word is refused";
  x = {NV_ESC_RM_ALLOC, 48, 0};
  EXPECT_EQ(vcore_sealed_next(ctl_, &top, &x, &next), 0u) << "no payload pointer";

  EXPECT_EQ(SealedSize(ctl_, Req(NV_ESC_RM_FREE, 16)), 16u);
  EXPECT_EQ(SealedSize(ctl_, Req(NV_ESC_RM_ALLOC, 40)), 0u) << "wrong size: refused unread";
  EXPECT_EQ(SealedSize(ctl_, Req(0xee, 16)), 0u) << "unknown escape";
}

// The XFER header test vcore_pre refuses on (dispatch.c) and the seal skips on (seal.c): one
// predicate, which names the test that failed for vcore_pre's two refusal lines.
TEST(XferCheck, PayloadSizeAndInnerCommand) {
  nv_ioctl_xfer_t x{NV_ESC_RM_ALLOC, NV_ABSOLUTE_MAX_IOCTL_SIZE, 0x9000};
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_OK) << "the driver's limit itself";
  x.size = NV_ABSOLUTE_MAX_IOCTL_SIZE + 1;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_TOO_BIG);
  x.cmd = NV_ESC_IOCTL_XFER_CMD;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_TOO_BIG) << "the size is tested first";
  x.size = 16;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_BAD_CMD) << "XFER in XFER";
  x.cmd = 0x100;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_BAD_CMD) << "not an _IOC_NR";
  x.ptr = 0;
  x.cmd = NV_ESC_RM_FREE;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_NO_PAYLOAD);
  x.ptr = 0x9000;
  EXPECT_EQ(vcore_xfer_check(&x), VCORE_XFER_OK);
}

TEST_F(CoreTest, ReplacedParamsOfAUvmMapAreTamperingAndHoldEveryMemoryOfTheCaller) {
  g_kills = 0;
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kKillingOps);
  uint32_t c = 0, d = 0, sd = 0;
  Session(&c, &d, &sd);
  const uint32_t a = 0x5c000010, b = 0x5c000011;
  ASSERT_TRUE(AllocVidmem(c, d, a, 4 * kMiB).forwarded);
  ASSERT_TRUE(AllocVidmem(c, d, b, 16 * kMiB).forwarded);
  const uint64_t charged = Charged();
  ASSERT_GE(charged, 20 * kMiB);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_NE(uvm, nullptr);

  // A map of A whose sealed copy the host found replaced after the driver ran.
  std::vector<uint8_t> p(UVM_MAP_EXTERNAL_ALLOCATION_SIZE);
  const uint64_t span[2] = {0x400000000ull, 4 * kMiB};
  const uint32_t h[2] = {c, a};
  std::memcpy(p.data(), span, sizeof(span));
  std::memcpy(p.data() + UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF, h, sizeof(h));
  std::vector<uint8_t> cr(UVM_CREATE_EXTERNAL_RANGE_SIZE);  // the map's external range first
  std::memcpy(cr.data(), span, sizeof(span));
  Put(kArg, cr);
  ASSERT_EQ(Call(UVM_CREATE_EXTERNAL_RANGE, kArg, uvm).verdict, VCORE_FORWARD);
  Put(kArg, p);
  vcore_call_ctx ctx{&mem_, kPid, kPid};
  vcore_call* call = nullptr;
  ASSERT_EQ(vcore_pre(uvm, UVM_MAP_EXTERNAL_ALLOCATION, kArg, &ctx, &call), VCORE_FORWARD);
  const uint64_t events = Stats().overquota_events;
  vcore_call_params_replaced(call);
  vcore_post(call, 0);
  EXPECT_TRUE(vcore_file_tampered(uvm));
  EXPECT_FALSE(vcore_file_tampered(ctl_)) << "only the UVM file";
  EXPECT_EQ(g_kills, 1) << "the caller is killed";
  EXPECT_EQ(Stats().overquota_events, events + 1);
  EXPECT_EQ(Call(UVM_FREE, kArg, uvm).ret, -VCORE_ENODEV) << "closed to every later call";

  // UVM may hold B as well as A: both stay charged after their handles go.
  Free(c, d, b);
  Free(c, d, a);
  // And page tables (F11.1): the sealed span's (4 dirs + 2 PTE tables, 24 KiB, recorded in pre)
  // and one mapping of the largest object, B, at the worst place (2^56 - 4 KiB: 2 dirs at each
  // of the 4 depths and 9 PTE tables, 68 KiB), since UVM mapped a span the core did not read.
  EXPECT_EQ(Charged(), charged + 24 * 1024 + 68 * 1024);
  vcore_file_close(uvm);
  EXPECT_EQ(Charged(), 0u) << "the holds go with the UVM file";
}

// A UVM_FREE whose sealed copy was replaced: its status (NV_OK on the tamperer's page) is not
// believed, and the map's hold keeps its memory charged until the file closes.
TEST_F(CoreTest, ReplacedParamsOfAUvmFreeDropNoHold) {
  g_kills = 0;
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kKillingOps);
  uint32_t c = 0, d = 0, sd = 0;
  Session(&c, &d, &sd);
  const uint32_t a = 0x5c000010;
  ASSERT_TRUE(AllocVidmem(c, d, a, 4 * kMiB).forwarded);
  const uint64_t charged = Charged();
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_NE(uvm, nullptr);
  const uint64_t span[2] = {0x400000000ull, 4 * kMiB};
  std::vector<uint8_t> map(UVM_MAP_EXTERNAL_ALLOCATION_SIZE);
  const uint32_t h[2] = {c, a};
  std::memcpy(map.data(), span, sizeof(span));
  std::memcpy(map.data() + UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF, h, sizeof(h));
  std::vector<uint8_t> cr(UVM_CREATE_EXTERNAL_RANGE_SIZE);  // the map's external range first
  std::memcpy(cr.data(), span, sizeof(span));
  Put(kArg, cr);
  ASSERT_EQ(Call(UVM_CREATE_EXTERNAL_RANGE, kArg, uvm).verdict, VCORE_FORWARD);
  Put(kArg, map);
  ASSERT_EQ(Call(UVM_MAP_EXTERNAL_ALLOCATION, kArg, uvm).verdict, VCORE_FORWARD);
  Free(c, d, a);
  ASSERT_EQ(Charged(), charged + 24 * 1024) << "the map's hold, and its page tables";

  std::vector<uint8_t> fp(UVM_FREE_SIZE);  // rmStatus 0: NV_OK
  std::memcpy(fp.data(), span, sizeof(span));
  Put(kArg, fp);
  vcore_call_ctx ctx{&mem_, kPid, kPid};
  vcore_call* call = nullptr;
  ASSERT_EQ(vcore_pre(uvm, UVM_FREE, kArg, &ctx, &call), VCORE_FORWARD);
  vcore_call_params_replaced(call);
  vcore_post(call, 0);
  EXPECT_TRUE(vcore_file_tampered(uvm));
  EXPECT_EQ(g_kills, 1);
  EXPECT_EQ(Charged(), charged + 24 * 1024) << "a replaced free's status dropped the hold";
  vcore_file_close(uvm);
  EXPECT_EQ(Charged(), 0u);
}

}  // namespace
}  // namespace vgpu::core_test

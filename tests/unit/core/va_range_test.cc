// Issue 17 F11.1 (docs/security/kernel-lifetime-compute.md): a GPU virtual range
// (NV50_MEMORY_VIRTUAL) without NVOS32_ALLOC_FLAGS_LAZY, or with SPARSE, gets the page tables of
// its whole extent in video memory at allocation (virtmemConstruct_IMPL, 580): 273.0625 MiB for
// 128 GiB on the H200 (docs/results/rm-internal-memory-h200.md). Under a quota such a range is
// refused; every range is charged the page tables it would hold were it eager (the driver reads
// the flags again after the core's check), and the charge goes with its free.
#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

constexpr uint32_t kEager = 0x00080001;    // VIRTUAL | IGNORE_BANK_PLACEMENT, the GPU run's
constexpr uint32_t kLibcuda = 0x0008c415;  // every trace of tests/data/traces: LAZY set
constexpr uint64_t kLibcudaRange = 0xfb000000;
constexpr uint64_t kGiB = 1024 * kMiB;

class VaRangeTest : public CoreTest {
 protected:
  Outcome Range(uint32_t c, uint32_t d, uint32_t h, uint64_t size, uint32_t flags) {
    NV_MEMORY_ALLOCATION_PARAMS m{};
    m.owner = c;
    m.flags = flags;
    m.size = size;
    return Alloc(c, d, h, NV50_MEMORY_VIRTUAL, Bytes(m));
  }
};

// The measured figure, and libcuda's range (what every context now pays).
TEST(VaRangePtables, TheEstimateIsTheMeasuredPageTables) {
  EXPECT_EQ(vcore_va_range_ptables(128 * kGiB), 273 * kMiB + 64 * 1024)
      << "HEAP_FREE fell 273.0625 MiB for 128 GiB (rm-internal-memory-h200.md)";
  EXPECT_EQ(vcore_va_range_ptables(kLibcudaRange), 8847360u) << "8.4375 MiB per context";
  EXPECT_EQ(vcore_va_range_ptables(0), 64 * 1024u);
  EXPECT_EQ(vcore_va_range_ptables(4096), 128 * 1024u) << "a range touches tables at each level";
  // Never less than a page table for each 4 KiB page of the range, whatever its size.
  for (uint64_t size : {kMiB, 2 * kMiB + 4096, 3 * kGiB + 12345, 64 * 1024 * kGiB})
    EXPECT_GE(vcore_va_range_ptables(size), size / 512) << size;
}

TEST_F(VaRangeTest, AnEagerRangeIsRefusedUnderAQuota) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  for (uint32_t flags :
       {kEager, kEager | NVOS32_ALLOC_FLAGS_SPARSE, kLibcuda | NVOS32_ALLOC_FLAGS_SPARSE}) {
    Outcome o = Range(c, d, 0x5c000100, 8 * kGiB, flags);
    EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << std::hex << flags;
    EXPECT_FALSE(o.forwarded);
    EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NOT_SUPPORTED);
  }
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 3u) << "client, device, subdevice: nothing recorded";
  // The legacy paths that make a range: VID_HEAP's VIRTUAL allocation, and ALLOC_OBJECT
  // (no params to check).
  EXPECT_EQ(VidHeapAlloc(c, d, 0x5c000101, 8 * kGiB, NVOS32_ALLOC_FLAGS_VIRTUAL).verdict,
            VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 20), NV_ERR_NOT_SUPPORTED);
  NVOS05_PARAMETERS o{};
  o.hRoot = c;
  o.hObjectParent = d;
  o.hObjectNew = 0x5c000102;
  o.hClass = NV50_MEMORY_VIRTUAL;
  Put(kArg, Bytes(o));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC_OBJECT, sizeof(o)), kArg).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(VaRangeTest, ALazyRangeIsChargedItsWorstCaseUntilItsFree) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Range(c, d, 0x5c000200, kLibcudaRange, kLibcuda).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), vcore_va_range_ptables(kLibcudaRange));
  EXPECT_EQ(Stats().internal_charged_bytes, Charged()) << "the usage names it an estimate";
  // Ranges fit until the quota is full, then are refused as memory is.
  uint32_t more = 0;
  while (more < 16 &&
         Range(c, d, 0x5c000201 + more, kLibcudaRange, kLibcuda).verdict == VCORE_FORWARD)
    ++more;
  EXPECT_EQ(more, 64 * kMiB / vcore_va_range_ptables(kLibcudaRange) - 1);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY);
  for (uint32_t i = 0; i <= more; ++i) Free(c, d, 0x5c000200 + i);
  EXPECT_EQ(Charged(), 0u);
  // The legacy path charges the same.
  EXPECT_EQ(
      VidHeapAlloc(c, d, 0x5c000300, 16 * kGiB, NVOS32_ALLOC_FLAGS_VIRTUAL | kLibcuda).verdict,
      VCORE_FORWARD);
  EXPECT_EQ(Charged(), vcore_va_range_ptables(16 * kGiB));
}

// Without a quota nothing is refused (an unlimited slot only counts), and the count is the same.
TEST_F(VaRangeTest, WithoutAQuotaAnEagerRangeIsCounted) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Range(c, d, 0x5c000400, 128 * kGiB, kEager).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 273 * kMiB + 64 * 1024);
  Free(c, d, 0x5c000400);
  EXPECT_EQ(Charged(), 0u);
}

// Maps into an RM-owned VA space build page tables too (4 KiB per map 1 GiB apart, 8 KiB 512 GiB
// apart on the H200): no recording uses RM_MAP_MEMORY_DMA or its unmap, so under a quota both are
// refused; without one they pass.
TEST_F(VaRangeTest, DmaMapsAreRefusedUnderAQuota) {
  for (uint64_t quota : {64 * kMiB, uint64_t{0}}) {
    MakeSlot(quota);
    uint32_t c, d, s;
    Session(&c, &d, &s);
    NVOS46_PARAMETERS map{};
    map.hClient = c;
    Put(kArg, Bytes(map));
    Outcome o = Call(Req(NV_ESC_RM_MAP_MEMORY_DMA, sizeof(map)), kArg);
    EXPECT_EQ(o.forwarded, quota == 0) << quota;
    if (quota) {
      EXPECT_EQ(Get<uint32_t>(mem_, kArg + 56), NV_ERR_NOT_SUPPORTED);
    }
    NVOS47_PARAMETERS unmap{};
    unmap.hClient = c;
    Put(kArg, Bytes(unmap));
    o = Call(Req(NV_ESC_RM_UNMAP_MEMORY_DMA, sizeof(unmap)), kArg);
    EXPECT_EQ(o.forwarded, quota == 0) << quota;
    if (quota) {
      EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NOT_SUPPORTED);
    }
  }
}

}  // namespace
}  // namespace vgpu::core_test

// Issue 17 F11.1 (docs/security/kernel-lifetime-compute.md): the driver's own video memory for a
// CUDA context's TSGs and channels (GR context buffers, instance blocks, page tables) is
// allocated by no RM_ALLOC of memory, so it is charged as a fixed estimate per TSG and per
// channel (kmod/core/tables_580.c), refunded when the object goes, and refused like any
// allocation past the quota. Measured on the H200: nvidia-rm-abi.md §4.2.
#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

// The estimates of the 580 branch, from its table (the one definition).
uint64_t Estimate(uint32_t cls) { return vcore_abi_class(&vcore_abi_580, cls)->rm_internal_bytes; }

// A process's first context with libcuda's defaults, on the H200 (580.159.04): HEAP_FREE fell
// 8.8125 MiB more than its class-0x40 allocations (nvidia-rm-abi.md §4.2).
constexpr uint64_t kMeasuredDefaultContext = 8 * kMiB + 13 * kMiB / 16;
// On the same machine by raw RM calls (tests/gpu/progs/rm_vaspace_mem.cc,
// docs/results/context-memory-h200.md): a GR TSG made alone took 4.3125 MiB of HEAP_FREE, and
// the first VA space with default flags 64 KiB (each further one about 20 KiB).
constexpr uint64_t kMeasuredGrTsgAlone = 4 * kMiB + 5 * kMiB / 16;
constexpr uint64_t kMeasuredFirstVaspace = 64 * 1024;

class ContextMemoryTest : public CoreTest {
 protected:
  // libcuda's default context: a GR TSG with 8 channels and three copy-engine TSGs with 4 each
  // (every recording in tests/data/traces). Handles from @base.
  void Context(uint32_t c, uint32_t d, uint32_t base) {
    const uint32_t engines[] = {NV2080_ENGINE_TYPE_GRAPHICS, 11, 12, 13};
    const int channels[] = {8, 4, 4, 4};
    uint32_t h = base;
    for (int t = 0; t < 4; ++t) {
      uint32_t tsg = h++;
      NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS p{};
      p.engineType = engines[t];
      ASSERT_EQ(Alloc(c, d, tsg, KEPLER_CHANNEL_GROUP_A, Bytes(p)).verdict, VCORE_FORWARD);
      for (int i = 0; i < channels[t]; ++i) ASSERT_EQ(Channel(c, tsg, h++).verdict, VCORE_FORWARD);
    }
  }
  Outcome Tsg(uint32_t c, uint32_t d, uint32_t h) {
    NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS p{};
    p.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
    return Alloc(c, d, h, KEPLER_CHANNEL_GROUP_A, Bytes(p));
  }
  Outcome Vaspace(uint32_t c, uint32_t d, uint32_t h) {
    NV_VASPACE_ALLOCATION_PARAMETERS p{};
    return Alloc(c, d, h, FERMI_VASPACE_A, Bytes(p));
  }
  Outcome Channel(uint32_t c, uint32_t tsg, uint32_t h) {
    return Alloc(c, tsg, h, HOPPER_CHANNEL_GPFIFO_A,
                 std::vector<uint8_t>(NV_CHANNEL_ALLOC_PARAMS_SIZE));
  }
};

TEST_F(ContextMemoryTest, ADefaultContextIsChargedAtLeastWhatTheDriverUses) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  Context(c, d, 0x5c000100);
  uint64_t one = Charged();
  EXPECT_GE(one, kMeasuredDefaultContext) << "4 TSGs and 20 channels";
  const uint64_t tsg = Estimate(KEPLER_CHANNEL_GROUP_A),
                 channel = Estimate(HOPPER_CHANNEL_GPFIFO_A);
  EXPECT_EQ(one, 4 * tsg + 20 * channel);
  EXPECT_EQ(Stats().internal_charged_bytes, one) << "the usage says which part is the estimate";
  for (uint32_t cls : {VOLTA_CHANNEL_GPFIFO_A, TURING_CHANNEL_GPFIFO_A, AMPERE_CHANNEL_GPFIFO_A,
                       BLACKWELL_CHANNEL_GPFIFO_A, BLACKWELL_CHANNEL_GPFIFO_B})
    EXPECT_EQ(Estimate(cls), channel) << "every channel class, 0x" << std::hex << cls;
  Context(c, d, 0x5c000200);
  EXPECT_EQ(Charged(), 2 * one);
  // A TSG's free takes its channels with it (RM frees the subtree), and their charge.
  Free(c, d, 0x5c000100);
  EXPECT_EQ(Charged(), 2 * one - tsg - 8 * channel);
  Free(c, 0x5c000200, 0x5c000201);
  EXPECT_EQ(Charged(), 2 * one - tsg - 9 * channel);
  // Memory beside them: the estimate is the part the stats name.
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 64 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Stats().internal_charged_bytes, Charged() - 64 * kMiB);
  // The device's free (the parent of the TSGs) takes the rest, and the client's nothing more.
  Free(c, c, d);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().internal_charged_bytes, 0u);
  Free(c, c, c);
  EXPECT_EQ(Charged(), 0u);
}

// cuMemGetInfo and NVML read the slot's free memory from the charge: the estimate is in it.
TEST_F(ContextMemoryTest, TheViewsCountTheEstimate) {
  MakeSlot(1 * kGiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  Context(c, d, 0x5c000100);
  const uint64_t context = Charged();
  ASSERT_GT(context, 0u);
  ASSERT_EQ(
      Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2,
              FbV2({NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE}))
          .verdict,
      VCORE_FORWARD);
  const uint64_t list = kParams + offsetof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS, fbInfoList);
  EXPECT_EQ(Get<uint32_t>(mem_, list + 4), kGiB >> 10);
  EXPECT_EQ(Get<uint32_t>(mem_, list + 12), (kGiB - context) >> 10);
}

TEST_F(ContextMemoryTest, TheFileCloseRefundsTheContexts) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  Context(c, d, 0x5c000100);
  EXPECT_GE(Charged(), kMeasuredDefaultContext);
  vcore_file_close(ctl_);
  ctl_ = nullptr;
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().internal_charged_bytes, 0u);
}

TEST_F(ContextMemoryTest, ASlotWhoseQuotaIsFullCannotCreateATsgOrAChannel) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Tsg(c, d, 0x5c000100).verdict, VCORE_FORWARD);
  ASSERT_EQ(Channel(c, 0x5c000100, 0x5c000101).verdict, VCORE_FORWARD);
  uint64_t context = Charged();
  // Fill the quota with memory, to the byte.
  rm_.round = 4096;
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 64 * kMiB - context).verdict, VCORE_FORWARD);
  ASSERT_EQ(Charged(), 64 * kMiB);
  uint64_t denied = Stats().denied_quota;
  Outcome o = Tsg(c, d, 0x5c000110);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << "charged " << Charged() << " of 64 MiB";
  EXPECT_FALSE(o.forwarded);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY) << "what RM says out of memory";
  o = Channel(c, 0x5c000100, 0x5c000102);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_FALSE(o.forwarded);
  EXPECT_EQ(Stats().denied_quota, denied + 2);
  EXPECT_LE(Charged(), 64 * kMiB);
  // The memory's free gives the room back.
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Tsg(c, d, 0x5c000110).verdict, VCORE_FORWARD);
  EXPECT_EQ(Channel(c, 0x5c000110, 0x5c000111).verdict, VCORE_FORWARD);
}

// A tenant can make TSGs on the GR engine alone, by raw RM calls; the estimate is by class (the
// engine type is the tenant's, and the driver reads it again), so every TSG is charged what a GR
// TSG takes.
TEST_F(ContextMemoryTest, ATsgIsChargedAtLeastWhatAGrTsgTakesAlone) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Tsg(c, d, 0x5c000100).verdict, VCORE_FORWARD);
  EXPECT_GE(Charged(), kMeasuredGrTsgAlone) << "a GR TSG made alone";
  EXPECT_EQ(Charged(), Estimate(KEPLER_CHANNEL_GROUP_A));
}

// VA spaces (FERMI_VASPACE_A): their page directories are the driver's video memory, which no
// RM_ALLOC of memory reports. Each is charged the branch's estimate, a slot has at most
// VCORE_SLOT_MAX_VASPACES of them (libcuda makes 2 per process, every recording in
// tests/data/traces), and a slot whose quota is full gets none.
TEST_F(ContextMemoryTest, VaSpacesAreChargedAndCapped) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Vaspace(c, d, 0x5c000300).verdict, VCORE_FORWARD);
  const uint64_t one = Estimate(FERMI_VASPACE_A);
  EXPECT_GE(Charged(), kMeasuredFirstVaspace) << "a VA space's page directory charged to nobody";
  EXPECT_EQ(Charged(), one);
  EXPECT_EQ(Stats().internal_charged_bytes, one);
  uint32_t granted = 1;
  Outcome last{};
  for (uint32_t i = 1; i < VCORE_SLOT_MAX_VASPACES + 8; ++i) {
    last = Vaspace(c, d, 0x5c000300 + i);
    if (last.verdict == VCORE_FORWARD) ++granted;
  }
  EXPECT_EQ(granted, VCORE_SLOT_MAX_VASPACES) << "VA spaces granted to one slot";
  EXPECT_FALSE(last.forwarded);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(Charged(), granted * one);
  // A free gives room again; the device's free takes them all, and their charge.
  Free(c, d, 0x5c000300);
  EXPECT_EQ(Charged(), (granted - 1) * one);
  EXPECT_EQ(Vaspace(c, d, 0x5c000400).verdict, VCORE_FORWARD);
  Free(c, c, d);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().internal_charged_bytes, 0u);
}

TEST_F(ContextMemoryTest, ASlotWhoseQuotaIsFullCannotCreateAVaSpace) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(Vaspace(c, d, 0x5c000300).verdict, VCORE_FORWARD);
  rm_.round = 4096;
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 64 * kMiB - Charged()).verdict, VCORE_FORWARD);
  ASSERT_EQ(Charged(), 64 * kMiB);
  const uint64_t denied = Stats().denied_quota;
  Outcome o = Vaspace(c, d, 0x5c000301);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << "charged " << Charged() << " of 64 MiB";
  EXPECT_FALSE(o.forwarded);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY);
  EXPECT_EQ(Stats().denied_quota, denied + 1);
  // The file's close refunds the VA space with the rest.
  vcore_file_close(ctl_);
  ctl_ = nullptr;
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().internal_charged_bytes, 0u);
}

}  // namespace
}  // namespace vgpu::core_test

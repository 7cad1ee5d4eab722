// F3, UVM part (docs/security/kernel-lifetime-compute.md): libcuda maps every cuMemAlloc with
// UVM_CREATE_EXTERNAL_RANGE + UVM_MAP_EXTERNAL_ALLOCATION, and UVM dups the memory into its own
// RM client for as long as the mapping lives (nvsim models it: tests/vm/nvsim/nvsim_uvm_ext.c).
// libcuda does UVM_FREE before RM_FREE; reversed, the tenant's RM_FREE frees only its handle and
// the memory stays mapped and usable. The charge must last until UVM lets go.
// Linked into vgpu_gtest (guest.cmake).
#include <sys/ioctl.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// A 64 MiB slot, four rounds of {60 MiB, map it through UVM, RM_FREE the handle}: the driver
// must never hold more for the slot than it charges. Then the charge must end with UVM's
// reference: at UVM_FREE of the range, and at the UVM file's close.
TEST(Lifetime, UvmExternalMappingKeepsTheChargeWhileUvmHoldsTheMemory) {
  const uint64_t quota = 64 * kMiB, size = 60 * kMiB, va0 = 0x200000000ull;
  ScopedSlot slot(quota, "uvm-ext", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  int granted = 0;
  uint64_t worst_held = 0, charged_then = 0;
  for (uint32_t round = 0; round < 4; ++round) {
    const uint32_t h = 0xd4000000 + round;
    const uint64_t va = va0 + round * (1ull << 30);
    if (s.Vidmem(h, size) != NV_OK) continue;  // the quota refused it
    ++granted;
    EXPECT_EQ(MapExternal(uvm, va, size, s.client, h), NV_OK) << "round " << round;
    EXPECT_EQ(s.FreeObj(h), NV_OK);
    const uint64_t held = NvsimUsedBytes() - base, charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    if (held > worst_held) worst_held = held, charged_then = charged;
    EXPECT_EQ(held, charged) << "round " << round << ": the driver holds what is not charged";
  }
  const uint64_t dups = ReadNvsimParam("uvm_ext_dups");
  std::printf(
      "F3 UVM: 4 rounds of 60 MiB mapped through UVM then freed on a 64 MiB slot: %d "
      "granted, driver holds %llu MiB, charged %llu MiB (UVM dups %llu)\n",
      granted, static_cast<unsigned long long>(worst_held >> 20),
      static_cast<unsigned long long>(charged_then >> 20), static_cast<unsigned long long>(dups));
  EXPECT_EQ(granted, 1);
  EXPECT_LE(worst_held, quota);

  // UVM_FREE of the range: UVM lets go, the memory returns, the charge ends.
  EXPECT_EQ(FreeRange(uvm, va0, size), NV_OK);
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);

  // Once more, then close the UVM file: the va_space's teardown lets go of everything.
  const uint32_t h = 0xd4000010;
  ASSERT_EQ(s.Vidmem(h, size), NV_OK);
  EXPECT_EQ(MapExternal(uvm, va0, size, s.client, h), NV_OK);
  EXPECT_EQ(s.FreeObj(h), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), size);
  close(uvm);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base);
}

// libcuda's own order (UVM_FREE, then RM_FREE) is charged and refunded as before.
TEST(Lifetime, UvmExternalMappingInLibcudasOrderIsRefundedAtTheFree) {
  const uint64_t size = 60 * kMiB, va = 0x300000000ull;
  ScopedSlot slot(64 * kMiB, "uvm-ext-order", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  for (uint32_t round = 0; round < 3; ++round) {
    const uint32_t h = 0xd5000000 + round;
    ASSERT_EQ(s.Vidmem(h, size), NV_OK) << "round " << round;
    EXPECT_EQ(MapExternal(uvm, va, size, s.client, h), NV_OK);
    EXPECT_EQ(FreeRange(uvm, va, size), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), size);
    EXPECT_EQ(s.FreeObj(h), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
    EXPECT_EQ(NvsimUsedBytes(), base);
  }
  close(uvm);
}

}  // namespace
}  // namespace vgpu_test

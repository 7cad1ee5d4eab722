// F3, UVM part (docs/security/kernel-lifetime-compute.md): libcuda maps every cuMemAlloc with
// UVM_CREATE_EXTERNAL_RANGE + UVM_MAP_EXTERNAL_ALLOCATION, and UVM dups the memory into its own
// RM client for as long as the mapping lives (nvsim models it: tests/vm/nvsim/nvsim_uvm_ext.c).
// libcuda does UVM_FREE before RM_FREE; reversed, the tenant's RM_FREE frees only its handle and
// the memory stays mapped and usable. The charge must last until UVM lets go.
// Linked into vgpu_gtest (guest.cmake).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// UNMAP_EXTERNAL of [va, va + size) on GPU `gpu` (NVSIM_GPU_UUID_PREFIX + index; 0x7f is no GPU);
// the rmStatus read back, or ~0u if the ioctl failed.
uint32_t Unmap(int uvm, uint64_t va, uint64_t size, uint8_t gpu) {
  uvm_unmap_external_params up{};
  up.base = va;
  up.length = size;
  std::memcpy(up.gpuUuid, NVSIM_GPU_UUID_PREFIX, sizeof(NVSIM_GPU_UUID_PREFIX) - 1);
  up.gpuUuid[15] = gpu;
  return ioctl(uvm, UVM_UNMAP_EXTERNAL, &up) != 0 ? ~0u : up.rmStatus;
}

// Arms nvsim's rewrite_uvm_status hook: the next UVM_FREE / UNMAP_EXTERNAL of this process gets
// NV_OK stored over its rmStatus (at `offset`) after nvsim wrote it, as a sibling thread would.
bool ArmForgedOk(uint32_t offset) {
  return WriteNvsimParam("rewrite_uvm_status_offset", offset) &&
         WriteNvsimParam("rewrite_uvm_status_value", NV_OK) &&
         WriteNvsimParam("rewrite_uvm_status_tgid", static_cast<uint64_t>(getpid()));
}

// The end of a test whose only live mapping is the range [va, va + range) (nvsim's use was
// `nvsim_base` before it): UVM_FREE of the range lets go, the memory and UVM's page tables
// return, the charge ends; then once more (`size` of handle `h` mapped and freed: charged the
// memory and the mapping's page tables), and the UVM file's close (the va_space's teardown)
// lets go of everything. Closes `uvm`.
void UvmLetsGoAtTheFreeAndTheClose(ScopedSlot& slot, Session& s, int uvm, uint64_t nvsim_base,
                                   uint64_t va, uint64_t range, uint64_t size, uint32_t h) {
  EXPECT_EQ(FreeRange(uvm, va, range), NV_OK);
  EXPECT_EQ(NvsimUsedBytes(), nvsim_base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  EXPECT_EQ(s.Vidmem(h, size), NV_OK);
  EXPECT_EQ(MapExternal(uvm, va, size, s.client, h), NV_OK);
  EXPECT_EQ(s.FreeObj(h), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), size + UvmMapPtables(va, size));
  EXPECT_LE(NvsimUsedBytes() - nvsim_base, slot.Stat(VGPU_STAT_MEM_CHARGED));
  close(uvm);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), nvsim_base);
}

// A 64 MiB slot, four rounds of {60 MiB, map it through UVM, RM_FREE the handle}: the driver
// must never hold more for the slot than it charges (the memory, and UVM's page tables, which
// the core charges at their worst case: F11.1). Then the charge must end with UVM's
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
    EXPECT_LE(held, charged) << "round " << round << ": the driver holds what is not charged";
    EXPECT_EQ(charged, size + UvmMapPtables(va, size)) << "round " << round;
  }
  const uint64_t dups = ReadNvsimParam("uvm_ext_dups");
  std::printf(
      "F3 UVM: 4 rounds of 60 MiB mapped through UVM then freed on a 64 MiB slot: %d "
      "granted, driver holds %llu KiB, charged %llu KiB (UVM dups %llu)\n",
      granted, static_cast<unsigned long long>(worst_held >> 10),
      static_cast<unsigned long long>(charged_then >> 10), static_cast<unsigned long long>(dups));
  EXPECT_EQ(granted, 1);
  EXPECT_LE(worst_held, quota);

  UvmLetsGoAtTheFreeAndTheClose(slot, s, uvm, base, va0, size, size, 0xd4000010);
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

// The status half of F3: a sibling stores NV_OK over a failed UNMAP_EXTERNAL (a GPU that is not
// registered: NV_ERR_INVALID_DEVICE) or a failed UVM_FREE (the mapping's span inside a larger
// range, so not exactly a range: NV_ERR_INVALID_ADDRESS) after UVM wrote it. UVM still maps the
// memory; the core must not believe the status. Rounds of {60 MiB, create, map, forged failed unmap
// or free, RM_FREE} on a 64 MiB slot: the driver must never hold more for the slot than is charged,
// and the quota must refuse past it.
TEST(Lifetime, UvmExternalMappingForgedStatusKeepsTheCharge) {
  const uint64_t quota = 64 * kMiB, size = 60 * kMiB, va0 = 0x400000000ull;
  ScopedSlot slot(quota, "uvm-ext-forged", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t forged0 = ReadNvsimParam("rewrite_uvm_status_done");
  ASSERT_NE(forged0, ~0ull) << "nvsim has no rewrite_uvm_status_* test hook";
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  int granted = 0, forged = 0;
  uint64_t worst_held = 0, charged_then = 0;
  for (uint32_t round = 0; round < 4; ++round) {
    const uint32_t h = 0xd6000000 + round;
    const uint64_t va = va0 + round * (1ull << 30);
    if (s.Vidmem(h, size) != NV_OK) continue;  // the quota refused it
    ++granted;
    ASSERT_EQ(MapExternal(uvm, va, size, s.client, h, quota), NV_OK) << "round " << round;
    if (round % 2 == 0) {
      ASSERT_TRUE(ArmForgedOk(offsetof(uvm_unmap_external_params, rmStatus)));
      if (Unmap(uvm, va, size, 0x7f) == NV_OK) ++forged;  // UVM: NV_ERR_INVALID_DEVICE
    } else {
      ASSERT_TRUE(ArmForgedOk(offsetof(uvm_free_params, rmStatus)));
      if (FreeRange(uvm, va, size) == NV_OK) ++forged;  // UVM: NV_ERR_INVALID_ADDRESS
    }
    EXPECT_EQ(s.FreeObj(h), NV_OK);
    const uint64_t held = NvsimUsedBytes() - base, charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    if (held > worst_held) worst_held = held, charged_then = charged;
    EXPECT_LE(held, charged) << "round " << round << ": the driver holds what is not charged";
    EXPECT_EQ(charged, size + UvmMapPtables(va, size)) << "round " << round;
  }
  EXPECT_TRUE(WriteNvsimParam("rewrite_uvm_status_tgid", 0));  // disarm, whatever happened
  std::printf(
      "F3 UVM status: 4 rounds of 60 MiB mapped, a forged NV_OK on a failed unmap/free, then "
      "RM_FREE, on a 64 MiB slot: %d granted, %d forged, driver holds %llu KiB, charged %llu KiB "
      "(UVM dups %llu)\n",
      granted, forged, static_cast<unsigned long long>(worst_held >> 10),
      static_cast<unsigned long long>(charged_then >> 10),
      static_cast<unsigned long long>(ReadNvsimParam("uvm_ext_dups")));
  EXPECT_EQ(ReadNvsimParam("rewrite_uvm_status_done"), forged0 + granted) << "every store landed";
  EXPECT_EQ(forged, granted) << "the tenant read NV_OK each time";
  EXPECT_EQ(granted, 1) << "the quota refuses what UVM still holds";
  EXPECT_LE(worst_held, quota);

  UvmLetsGoAtTheFreeAndTheClose(slot, s, uvm, base, va0, quota, size, 0xd6000010);
}

}  // namespace
}  // namespace vgpu_test

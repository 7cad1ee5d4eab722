// F11.1's UVM residue (docs/security/kernel-lifetime-compute.md): every UVM external mapping
// makes UVM build page tables in video memory (a page directory per level the mapping is the
// first under, and the PTEs), charged to no RM client. One small allocation mapped at distant
// addresses takes 8 KiB per mapping 512 GiB apart (measured on the H200,
// docs/results/rm-internal-memory-h200.md); nvsim builds them as the 580 driver does
// (tests/vm/nvsim/nvsim_uvm_ext.c, `uvm_ptable_bytes`). The core must charge each mapping what
// its page tables can take, refuse the map past the quota, refund it with the mapping; and a slot
// must not open UVM files without bound.
// Linked into vgpu_gtest (guest.cmake).
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint64_t kStride = 512ull << 30;  // each mapping alone in its PDE1 (256 GiB)
constexpr uint64_t kVa0 = 1ull << 40;

// UNMAP_EXTERNAL of [va, va + size) on GPU 0: its rmStatus, or ~0u.
uint32_t UnmapGpu0(int uvm, uint64_t va, uint64_t size) {
  uvm_unmap_external_params up{};
  up.base = va;
  up.length = size;
  std::memcpy(up.gpuUuid, NVSIM_GPU_UUID_PREFIX, sizeof(NVSIM_GPU_UUID_PREFIX) - 1);
  return ioctl(uvm, UVM_UNMAP_EXTERNAL, &up) != 0 ? ~0u : up.rmStatus;
}

// A 16 MiB slot; one 2 MiB allocation mapped (create + map, libcuda's order) at 512 GiB strides,
// up to 4096 times. At every step the driver (nvsim: the memory and UVM's page tables) must hold
// no more for the slot than it charges, and the quota must refuse a map whose page tables do not
// fit; then UVM_FREE, UNMAP_EXTERNAL and the file's close refund exactly what each map charged.
TEST(UvmPageTables, OneAllocationMappedFarApartStaysInTheQuota) {
  const uint64_t quota = 16 * kMiB, size = 2 * kMiB;
  ScopedSlot slot(quota, "uvm-ptables", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes(), pt0 = ReadNvsimParam("uvm_ptable_bytes");
  ASSERT_NE(pt0, ~0ull) << "nvsim has no uvm_ptable_bytes";
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  const uint32_t h = 0xd7000000;
  ASSERT_EQ(s.Vidmem(h, size), NV_OK);
  std::vector<uint64_t> step;  // what each granted map added to the charge
  uint32_t refused = 0, refused_status = NV_OK, over_steps = 0;
  uint64_t worst_held = 0, charged_then = 0, worst_gap = 0;
  const uint64_t dups0 = ReadNvsimParam("uvm_ext_dups");
  for (uint32_t i = 0; i < 4096 && !refused; ++i) {
    const uint64_t before = slot.Stat(VGPU_STAT_MEM_CHARGED);
    const uint32_t st = MapExternal(uvm, kVa0 + i * kStride, size, s.client, h);
    const uint64_t held = NvsimUsedBytes() - base, charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    if (st != NV_OK) {
      refused++, refused_status = st;
      EXPECT_EQ(charged, before) << "a refused map charges nothing";
      break;
    }
    step.push_back(charged - before);
    if (held > worst_held) worst_held = held, charged_then = charged;
    if (held > charged) {
      ++over_steps;
      if (held - charged > worst_gap) worst_gap = held - charged;
    }
  }
  const uint64_t pt = ReadNvsimParam("uvm_ptable_bytes") - pt0;
  std::printf(
      "F11.1 UVM page tables: one 2 MiB allocation mapped %zu times 512 GiB apart on a 16 MiB "
      "slot: driver holds %llu KiB (page tables %llu KiB), charged %llu KiB; %u steps held more "
      "than charged (worst by %llu KiB); map %zu answered 0x%x\n",
      step.size(), static_cast<unsigned long long>(worst_held >> 10),
      static_cast<unsigned long long>(pt >> 10),
      static_cast<unsigned long long>(charged_then >> 10), over_steps,
      static_cast<unsigned long long>(worst_gap >> 10), step.size(), refused_status);
  EXPECT_EQ(over_steps, 0u) << "the driver held more than the slot is charged";
  EXPECT_LE(worst_held, quota);
  ASSERT_EQ(refused, 1u) << "the quota never refused a map";
  EXPECT_EQ(refused_status, NV_ERR_NO_MEMORY);
  EXPECT_EQ(ReadNvsimParam("uvm_ext_dups"), dups0 + step.size())
      << "the refused map reached the driver";
  ASSERT_GE(step.size(), 2u);

  // Refunds: UVM_FREE of the last range, UNMAP_EXTERNAL of the one before: each gives back
  // exactly what its map charged, and nvsim's page tables shrink with them.
  const size_t last = step.size() - 1;
  uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  EXPECT_EQ(FreeRange(uvm, kVa0 + last * kStride, size), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), charged - step[last]) << "UVM_FREE";
  charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  EXPECT_EQ(UnmapGpu0(uvm, kVa0 + (last - 1) * kStride, size), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), charged - step[last - 1]) << "UNMAP_EXTERNAL";
  EXPECT_LE(NvsimUsedBytes() - base, slot.Stat(VGPU_STAT_MEM_CHARGED));
  // The close: every mapping's charge goes, the allocation's stays until its own free.
  close(uvm);
  EXPECT_EQ(SettledCharge(slot, size), size);
  EXPECT_EQ(NvsimUsedBytes(), base + size);
  EXPECT_EQ(ReadNvsimParam("uvm_ptable_bytes"), pt0);
  EXPECT_EQ(s.FreeObj(h), NV_OK);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base);
}

// UVM files per slot are capped (VCORE_SLOT_MAX_UVM_FILES, kmod/core/vcore.h): each is a va_space
// of UVM's, with its own page trees once GPUs are registered. Past the cap an open fails with
// EMFILE; a closed file makes room again.
TEST(UvmPageTables, UvmFilesPerSlotAreCapped) {
  ScopedSlot slot(64 * kMiB, "uvm-files", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const std::string path = "/dev/vgpu-uvm" + std::to_string(slot.id());
  std::vector<int> fds;
  int err = 0;
  for (uint32_t i = 0; i < kMaxUvmFiles + 8; ++i) {
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      continue;
    }
    fds.push_back(fd);
  }
  std::printf("F11.1 UVM files: %zu of %u opened on one slot (errno %d past them)\n", fds.size(),
              kMaxUvmFiles + 8, err);
  EXPECT_EQ(fds.size(), kMaxUvmFiles);
  EXPECT_EQ(err, EMFILE);
  ASSERT_FALSE(fds.empty());
  close(fds.back());
  fds.pop_back();
  const int again = open(path.c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_GE(again, 0) << "a closed file makes room";
  if (again >= 0) fds.push_back(again);
  for (int fd : fds) close(fd);
}

}  // namespace
}  // namespace vgpu_test

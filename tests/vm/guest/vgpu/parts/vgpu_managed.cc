// Managed memory under a quota (issue 17, F6; docs/security/kernel-call-path.md): each mapping of
// /dev/nvidia-uvm is a managed range of its size that the driver populates on fault
// (uvm_mmap), so the module charges it that size, refunds it as the driver drops the range
// (munmap, a partial munmap or mremap shrink, a move, the process's exit), and refuses it with
// ENOMEM when it does not fit, libcuda's 2 MiB per context included. nvsim's UVM node maps as the
// 580 driver does (offset == address, shared read-write, VM_DONTEXPAND | VM_DONTCOPY) and counts
// the live ranges (uvm_managed_bytes). Linked into vgpu_gtest (guest.cmake).
#include <sys/mman.h>
#include <sys/wait.h>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr size_t kCtx = 2 * kMiB;  // VCORE_UVM_CONTEXT_MAPPING_BYTES: libcuda's per context

// A free stretch of address space of `len` bytes (reserved, PROT_NONE).
void* Reserve(size_t len) {
  return mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

// A UVM mapping as libcuda makes one: at an address of its choosing, offset == address.
void* MapUvm(int uvm, size_t len) {
  void* va = Reserve(len);
  if (va == MAP_FAILED) return va;
  void* p = mmap(va, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, uvm,
                 static_cast<off_t>(reinterpret_cast<uintptr_t>(va)));
  if (p == MAP_FAILED) {
    int e = errno;
    munmap(va, len);
    errno = e;
  }
  return p;
}

uint64_t Managed() { return ReadNvsimParam("uvm_managed_bytes"); }

TEST(Limits, SecondContextMappingIsChargedToTheQuota) {
  ScopedSlot slot(10 * kMiB, "ctx2", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  auto charged = [&] { return slot.Stat(VGPU_STAT_MEM_CHARGED); };
  const uint64_t managed = Managed();
  int uvm = OpenUvm(slot);
  ASSERT_GE(uvm, 0) << strerror(errno);
  void* primary = MapUvm(uvm, kCtx);
  ASSERT_NE(primary, MAP_FAILED) << strerror(errno);
  EXPECT_EQ(charged(), kCtx) << "the primary context's mapping is charged like any";
  void* maps[4];
  int mapped = 0;
  for (void*& m : maps) {
    m = MapUvm(uvm, kCtx);
    if (m == MAP_FAILED) break;
    ++mapped;
  }
  std::printf("second and later context mappings on a 10 MiB slot: %d granted (%s), charged %llu\n",
              mapped, mapped < 4 ? strerror(errno) : "-",
              static_cast<unsigned long long>(charged()));
  ASSERT_EQ(mapped, 4) << "a second context's mapping refused: " << strerror(errno);
  EXPECT_EQ(charged(), 10 * kMiB);
  EXPECT_EQ(Managed() - managed, 10 * kMiB) << "what the driver could populate";
  errno = 0;
  EXPECT_EQ(MapUvm(uvm, kCtx), MAP_FAILED) << "the quota is full";
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(Managed() - managed, 10 * kMiB) << "a refused mapping never reached the driver";
  EXPECT_EQ(charged(), 10 * kMiB);
  // VM_DONTEXPAND: no mremap grows a mapping past its charge.
  EXPECT_EQ(mremap(maps[0], kCtx, 2 * kCtx, 0), MAP_FAILED);
  EXPECT_EQ(mremap(maps[0], kCtx, 2 * kCtx, MREMAP_MAYMOVE), MAP_FAILED);
  // A piece unmapped is refunded, and the rest stays charged.
  ASSERT_EQ(munmap(maps[0], kMiB), 0);
  EXPECT_EQ(charged(), 9 * kMiB);
  ASSERT_EQ(mremap(maps[1], kCtx, kMiB, 0), maps[1]) << strerror(errno);
  EXPECT_EQ(charged(), 8 * kMiB);
  EXPECT_EQ(Managed() - managed, 8 * kMiB);
  // A move leaves the driver's copy disabled (uvm_vm_open_managed): the old range went.
  void* dest = Reserve(kCtx);
  ASSERT_NE(dest, MAP_FAILED);
  ASSERT_EQ(mremap(maps[2], kCtx, kCtx, MREMAP_MAYMOVE | MREMAP_FIXED, dest), dest)
      << strerror(errno);
  EXPECT_EQ(charged(), 6 * kMiB);
  EXPECT_EQ(Managed() - managed, 6 * kMiB);
  // Closing the fd ends no mapping: the charge stays while the driver's ranges do.
  close(uvm);
  EXPECT_EQ(charged(), 6 * kMiB);
  EXPECT_EQ(munmap(dest, kCtx), 0);
  EXPECT_EQ(charged(), 6 * kMiB) << "the disabled copy held nothing";
  EXPECT_EQ(munmap(static_cast<char*>(maps[0]) + kMiB, kMiB), 0);
  EXPECT_EQ(munmap(maps[1], kMiB), 0);
  EXPECT_EQ(munmap(maps[3], kCtx), 0);
  EXPECT_EQ(charged(), kCtx);
  EXPECT_EQ(munmap(primary, kCtx), 0);
  EXPECT_EQ(charged(), 0u);
  EXPECT_EQ(Managed(), managed);
  // A process that exits with its mappings refunds them at its exit.
  std::fflush(stdout);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int u = OpenUvm(slot);
    if (u < 0 || MapUvm(u, kCtx) == MAP_FAILED) _exit(2);
    if (MapUvm(u, 3 * kMiB) == MAP_FAILED) _exit(3);
    _exit(slot.Stat(VGPU_STAT_MEM_CHARGED) == kCtx + 3 * kMiB ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(charged(), 0u);
  EXPECT_EQ(Managed(), managed);
}

// F6: no mapping is free, however many UVM files or processes a tenant makes (one free context
// mapping per UVM file gave eight free managed mappings for eight files; one per process would
// give a tenant that forks N processes N).
TEST(CallPath, EveryContextMappingIsCharged) {
  ScopedSlot slot(64 * kMiB, "uvm", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  int files[8];
  void* maps[8];
  for (int i = 0; i < 8; ++i) {
    files[i] = OpenUvm(slot);
    ASSERT_GE(files[i], 0) << strerror(errno);
    maps[i] = MapUvm(files[i], kCtx);
    ASSERT_NE(maps[i], MAP_FAILED) << strerror(errno);
  }
  std::printf("UVM context mappings on 8 files of one process: charged %llu MiB\n",
              static_cast<unsigned long long>(slot.Stat(VGPU_STAT_MEM_CHARGED) / kMiB));
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 8 * kCtx);
  std::fflush(stdout);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int uvm = OpenUvm(slot);
    if (uvm < 0) _exit(2);
    const uint64_t before = slot.Stat(VGPU_STAT_MEM_CHARGED);
    if (MapUvm(uvm, kCtx) == MAP_FAILED) _exit(3);
    _exit(slot.Stat(VGPU_STAT_MEM_CHARGED) == before + kCtx ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "another process's is charged too";
  for (int i = 0; i < 8; ++i) {
    munmap(maps[i], kCtx);
    close(files[i]);
  }
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

}  // namespace
}  // namespace vgpu_test

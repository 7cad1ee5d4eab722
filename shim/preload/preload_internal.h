// What the three parts of libvgpu-shim.so share: the filter glue and state (shim.cc), the
// registry of open NVIDIA files (files.cc) and the exported libc wrappers (wrappers.cc).
// Everything here has hidden visibility (the shim is built with -fvisibility=hidden); the
// wrappers' fast path reads only the two inline loads below (Mode(), the fd table).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "shim/base/fd_table.h"
#include "state.h"

namespace vgpu::shim {

// Diagnostic switches, read from the environment at the first wrapper call and kept in one
// byte, so a wrapper pays one relaxed load for both:
//   VGPU_SHIM_PASSTHROUGH=1  keep every wrapper but never call the core (no limits, no views),
//                            to tell interposition cost from filtering cost;
//   VGPU_SHIM_COUNT=1        count the calls reaching the wrappers (vshim_diag.h).
constexpr uint8_t kModeKnown = 1, kModePassthrough = 2, kModeCount = 4;
extern std::atomic<uint8_t> mode_bits;
uint8_t ReadMode();

inline uint8_t Mode() {
  uint8_t m = mode_bits.load(std::memory_order_relaxed);
  return __builtin_expect(m != 0, 1) ? m : ReadMode();
}
inline bool Passthrough() { return (Mode() & kModePassthrough) != 0; }

struct Counters {
  std::atomic<uint64_t> ioctls, nvidia_ioctls, mmaps, opens, closes;
};
extern Counters counters;

inline void Count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

inline bool Filtered(DevKind k) {
  return k == DevKind::kCtl || k == DevKind::kGpu || k == DevKind::kUvm;
}

// --- files.cc: one ShimFile per tracked fd number, shared by dup'ed fds (refcounted). ---
constexpr int kMaxFiles = FdTable::kMaxTracked;
extern std::atomic<ShimFile*> files[kMaxFiles];

// The record of `fd`, attaching it to the core on first sight; nullptr: refuse the call.
ShimFile* FileFor(int fd, DevKind kind);
// The file this process tracks for fd, or nullptr; never attaches one.
ShimFile* KnownFile(int fd);
// Drops one reference; the last one closes the core's file (after the real close).
void ReleaseFile(ShimFile* f);
// After a real open of `path` returned `fd`: classify and attach it. -1 (EACCES): refused.
int AfterOpen(int fd, const char* path);
// After a dup of `oldfd` to `newfd`: the new number shares the record.
void OnDup(int oldfd, int newfd);

// --- uvm_mappings.cc: charged mappings of nvidia-uvm, refunded as they go. ---
extern std::atomic<int> uvm_pieces_live;
inline bool UvmMappingsLive() { return uvm_pieces_live.load(std::memory_order_relaxed) != 0; }
// mmap of a UVM file through the core's rule (vcore_uvm_map); errno ENOMEM over the quota.
void* MapUvm(ShimState* st, ShimFile* f, void* addr, size_t len, int prot, int flags, int fd,
             off_t off);
// After the kernel unmapped [addr, addr+len) (munmap, a MAP_FIXED mapping over it).
void UvmUnmapped(void* addr, size_t len);
// true: an mremap would grow a charged mapping (the driver's VM_DONTEXPAND refuses it too).
bool UvmGrowthRefused(void* old_addr, size_t old_len, size_t new_len);
// After an mremap returned `result`.
void UvmRemapped(void* old_addr, size_t old_len, size_t new_len, void* result);
void ForgetUvmMappingsAfterFork();

// --- shim.cc: the filtered ioctl path. ---
int FilteredIoctl(int fd, DevKind kind, unsigned long req, void* arg);
// The refusal line on stderr: the first in a process always, later ones at VGPU_LOG=info.
void ReportRefusal(ShimState* st, const char* what, uint32_t nr, uint32_t cmd, uint64_t request,
                   const char* reason);

}  // namespace vgpu::shim

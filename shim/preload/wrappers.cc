// The libc functions libvgpu-shim.so interposes (LD_PRELOAD): ioctl, the open family,
// close/close_range/closefrom, the dup family and fcntl's F_DUPFD, mmap, munmap, mremap, fork. For
// a non-NVIDIA fd each costs two relaxed byte loads over the real call (the fd's kind, the
// diagnostic mode); NVIDIA fds go to the filter (shim.cc) and the file registry (files.cc).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "log.h"
#include "preload_internal.h"
#include "shim/base/real_calls.h"
#include "shim/include/vshim_diag.h"
#include "shim/include/vshim_hooks.h"

namespace vgpu::shim {
namespace {

mode_t ModeArg(int flags, va_list ap) {
  return (flags & (O_CREAT | __O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace
}  // namespace vgpu::shim

using vgpu::shim::DevKind;
using vgpu::shim::ProcessFdTable;
namespace real = vgpu::shim::real;
namespace vs = vgpu::shim;

#define VSHIM_EXPORT extern "C" __attribute__((visibility("default")))

VSHIM_EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  DevKind k = ProcessFdTable().Get(fd);
  uint8_t mode = vs::Mode();
  if (mode & vs::kModeCount) [[unlikely]] {
    vs::Count(vs::counters.ioctls);
    if (vs::Filtered(k)) {
      vs::Count(vs::counters.nvidia_ioctls);
    }
  }
  if (!vs::Filtered(k) || (mode & vs::kModePassthrough)) {
    return real::Ioctl(fd, req, arg);
  }
  return vs::FilteredIoctl(fd, k, req, arg);
}

VSHIM_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = vs::ModeArg(flags, ap);
  va_end(ap);
  return vs::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, mode), path);
}
VSHIM_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = vs::ModeArg(flags, ap);
  va_end(ap);
  return vs::AfterOpen(real::OpenAt(dirfd, path, flags, mode), path);
}
VSHIM_EXPORT int __open_2(const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, 0), path);
}
VSHIM_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(dirfd, path, flags, 0), path);
}

// The *64 names: on a 64-bit ABI the same calls (O_LARGEFILE is implied), as fcntl64 and mmap64
// below.
VSHIM_EXPORT int open64(const char* path, int flags, ...) __attribute__((alias("open")));
VSHIM_EXPORT int openat64(int dirfd, const char* path, int flags, ...)
    __attribute__((alias("openat")));
VSHIM_EXPORT int __open64_2(const char* path, int flags) __attribute__((alias("__open_2")));
VSHIM_EXPORT int __openat64_2(int dirfd, const char* path, int flags)
    __attribute__((alias("__openat_2")));

VSHIM_EXPORT int close(int fd) {
  if (vs::Mode() & vs::kModeCount) [[unlikely]] {
    vs::Count(vs::counters.closes);
  }
  bool tracked =
      fd >= 0 && fd < vs::kMaxFiles && vs::files[fd].load(std::memory_order_relaxed) != nullptr;
  if (!tracked) {
    // Not an NVIDIA file of ours: forget its kind (a later fd of this number is classified
    // afresh) and close. No getpid here: in a vfork child the Clear is harmless too (the
    // parent re-classifies that fd from /proc/self/fd at its next ioctl), so only a tracked
    // fd needs the borrowed-memory check below.
    ProcessFdTable().Clear(fd);
    return real::Close(fd);
  }
  if (vs::InBorrowedMemory()) {
    return real::Close(fd);
  }
  ProcessFdTable().Clear(fd);
  vs::ShimFile* f = vs::files[fd].exchange(nullptr);
  int rc = real::Close(fd);
  int saved = errno;
  vs::ReleaseFile(f);  // after the real close, as vcore_file_close requires
  errno = saved;
  return rc;
}

namespace vgpu::shim {
namespace {

// Forgets every tracked fd in [first, last] after they were closed behind close()'s back.
void ForgetRange(unsigned first, unsigned last) {
  if (InBorrowedMemory()) {
    return;
  }
  unsigned end = last < static_cast<unsigned>(kMaxFiles) ? last : kMaxFiles - 1;
  for (unsigned fd = first; fd <= end; ++fd) {
    ProcessFdTable().Clear(static_cast<int>(fd));
    ReleaseFile(files[fd].exchange(nullptr));
  }
}

}  // namespace
}  // namespace vgpu::shim

// close_range/closefrom (glibc 2.34+) close fds without calling close(): forget them too, or a
// later socket reusing an NVIDIA fd's number would be filtered as one.
VSHIM_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  using Fn = int (*)(unsigned, unsigned, int);
  static std::atomic<Fn> next{nullptr};
  Fn fn = next.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "close_range"));
    next.store(fn, std::memory_order_release);
  }
  int rc = fn != nullptr ? fn(first, last, flags)
                         : static_cast<int>(syscall(SYS_close_range, first, last, flags));
  if (rc == 0 && (flags & CLOSE_RANGE_CLOEXEC) == 0) {
    int saved = errno;
    vs::ForgetRange(first, last);
    errno = saved;
  }
  return rc;
}

VSHIM_EXPORT void closefrom(int lowfd) {
  using Fn = void (*)(int);
  static std::atomic<Fn> next{nullptr};
  Fn fn = next.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "closefrom"));
    next.store(fn, std::memory_order_release);
  }
  if (fn != nullptr) {
    fn(lowfd);
  } else {
    syscall(SYS_close_range, static_cast<unsigned>(lowfd), ~0u, 0);
  }
  if (lowfd >= 0) {
    vs::ForgetRange(static_cast<unsigned>(lowfd), ~0u);
  }
}

VSHIM_EXPORT int dup(int fd) {
  int rc = real::Dup(fd);
  if (rc >= 0) {
    vs::OnDup(fd, rc);
  }
  return rc;
}
VSHIM_EXPORT int dup2(int fd, int fd2) {
  int rc = real::Dup2(fd, fd2);
  if (rc >= 0 && fd != fd2) {
    vs::OnDup(fd, rc);
  }
  return rc;
}
VSHIM_EXPORT int dup3(int fd, int fd2, int flags) {
  int rc = real::Dup3(fd, fd2, flags);
  if (rc >= 0) {
    vs::OnDup(fd, rc);
  }
  return rc;
}

// fcntl is interposed for F_DUPFD/F_DUPFD_CLOEXEC only; every other command passes its
// argument through unchanged (all fcntl arguments are int or pointer sized).
VSHIM_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  using FcntlFn = int (*)(int, int, ...);
  static std::atomic<FcntlFn> next{nullptr};
  FcntlFn fn = next.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl64"));
    if (fn == nullptr) {
      fn = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl"));
    }
    next.store(fn, std::memory_order_release);
  }
  int rc = fn != nullptr ? fn(fd, cmd, arg) : static_cast<int>(syscall(SYS_fcntl, fd, cmd, arg));
  if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
    int saved = errno;
    vs::OnDup(fd, rc);
    errno = saved;
  }
  return rc;
}
VSHIM_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

// Managed memory is an mmap of /dev/nvidia-uvm (nvidia-rm-abi.md §4.2, §7): charged to the slot's
// quota by the core (vcore_uvm_map), refunded as munmap, mremap or a MAP_FIXED mapping over it
// takes it away (uvm_mappings.cc).
VSHIM_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (vs::Mode() & vs::kModeCount) [[unlikely]] {
    vs::Count(vs::counters.mmaps);
  }
  if (fd >= 0 && ProcessFdTable().Get(fd) == DevKind::kUvm && !vs::Passthrough()) {
    vs::ShimState* st = vs::CurrentState();
    vs::ShimFile* f = fd < vs::kMaxFiles ? vs::files[fd].load(std::memory_order_acquire) : nullptr;
    if (f != nullptr && st != nullptr && st->slot != nullptr) {
      return vs::MapUvm(st, f, addr, len, prot, flags, fd, off);
    }
  }
  void* p = real::Mmap(addr, len, prot, flags, fd, off);
  if ((flags & MAP_FIXED) && p != MAP_FAILED && vs::UvmMappingsLive()) [[unlikely]] {
    vs::UvmUnmapped(p, len);  // the kernel replaced what was there, charged pieces included
  }
  return p;
}
VSHIM_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

VSHIM_EXPORT int munmap(void* addr, size_t len) {
  int rc = real::Munmap(addr, len);
  if (rc == 0 && vs::UvmMappingsLive()) [[unlikely]] {
    int saved = errno;
    vs::UvmUnmapped(addr, len);
    errno = saved;
  }
  return rc;
}

VSHIM_EXPORT void* mremap(void* old_addr, size_t old_len, size_t new_len, int flags, ...) {
  void* new_addr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_addr = va_arg(ap, void*);
    va_end(ap);
  }
  if (!vs::UvmMappingsLive()) [[likely]] {
    return real::Mremap(old_addr, old_len, new_len, flags, new_addr);
  }
  if (vs::UvmGrowthRefused(old_addr, old_len, new_len)) {
    errno = EFAULT;  // what the kernel answers for a VM_DONTEXPAND mapping
    return MAP_FAILED;
  }
  void* r = real::Mremap(old_addr, old_len, new_len, flags, new_addr);
  int saved = errno;
  vs::UvmRemapped(old_addr, old_len, new_len, r);
  errno = saved;
  return r;
}

VSHIM_EXPORT pid_t fork(void) {
  pid_t pid = real::Fork();
  if (pid == 0) {
    vs::ForgetUvmMappingsAfterFork();
    // Cheap and lock-free: the child joins the ledger lazily at its first charge.
    vs::RefreshPidAfterFork();
    if (vs::ShimState* st = vs::CurrentState(); st != nullptr && st->ledger) {
      st->ledger->MarkForked();
    }
  }
  return pid;
}

VSHIM_EXPORT int vshim_get_counters(struct vshim_counters* out) {
  if (out == nullptr) {
    return -1;
  }
  auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  *out = {get(vs::counters.ioctls),
          get(vs::counters.nvidia_ioctls),
          get(vs::counters.mmaps),
          get(vs::counters.opens),
          get(vs::counters.closes),
          (vs::Mode() & vs::kModeCount) ? 1u : 0u,
          0u};
  return 0;
}

// Clean exit: this process's charges leave the slot (the driver frees its objects as the
// files close). A killed process is reaped by the others (ledger.h).
__attribute__((destructor)) static void vshim_fini(void) {
  vs::ShimState* st = vs::CurrentState();
  if (st != nullptr && st->init_error.empty()) {
    if (vshim_compute_stop != nullptr) {
      vshim_compute_stop();
    }
    if (vs::LogEnabled(vs::LogLevel::kDebug) && st->slot != nullptr) {
      vcore_stats s;
      vcore_slot_get_stats(st->slot, &s);
      vs::Logf(vs::LogLevel::kDebug,
               "exit: ioctls=%llu denied=%llu charged=%llu peak=%llu views=%llu unknown=%u/%u/%u",
               static_cast<unsigned long long>(s.ioctls), static_cast<unsigned long long>(s.denied),
               static_cast<unsigned long long>(s.charged_bytes),
               static_cast<unsigned long long>(s.charged_peak_bytes),
               static_cast<unsigned long long>(s.views_rewritten), s.unknown_escapes.n,
               s.unknown_controls.n, s.unknown_classes.n);
    }
    if (st->ledger) {
      st->ledger->Detach();
    }
  }
}

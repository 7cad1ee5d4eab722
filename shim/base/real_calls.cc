#include "real_calls.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace vgpu::shim::real {
namespace {

thread_local bool resolving = false;

// Resolves `name` once; returns nullptr while this thread is already resolving (caller then
// uses the raw syscall) or when no later object defines it.
template <typename Fn>
Fn Resolve(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn != nullptr || resolving) {
    return fn;
  }
  resolving = true;
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  resolving = false;
  if (fn != nullptr) {
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

using IoctlFn = int (*)(int, unsigned long, ...);
using OpenAtFn = int (*)(int, const char*, int, ...);
using CloseFn = int (*)(int);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
using DupFn = int (*)(int);
using Dup2Fn = int (*)(int, int);
using Dup3Fn = int (*)(int, int, int);
using ForkFn = pid_t (*)();

std::atomic<IoctlFn> ioctl_fn{nullptr};
std::atomic<OpenAtFn> openat_fn{nullptr};
std::atomic<CloseFn> close_fn{nullptr};
std::atomic<MmapFn> mmap_fn{nullptr};
std::atomic<MunmapFn> munmap_fn{nullptr};
std::atomic<MremapFn> mremap_fn{nullptr};
std::atomic<DupFn> dup_fn{nullptr};
std::atomic<Dup2Fn> dup2_fn{nullptr};
std::atomic<Dup3Fn> dup3_fn{nullptr};
std::atomic<ForkFn> fork_fn{nullptr};

}  // namespace

int Ioctl(int fd, unsigned long request, void* arg) {
  if (IoctlFn fn = Resolve(ioctl_fn, "ioctl")) {
    return fn(fd, request, arg);
  }
  return static_cast<int>(syscall(SYS_ioctl, fd, request, arg));
}

int OpenAt(int dirfd, const char* path, int flags, mode_t mode) {
  // openat64 and openat are the same function on x86-64 (O_LARGEFILE is implied).
  if (OpenAtFn fn = Resolve(openat_fn, "openat64")) {
    return fn(dirfd, path, flags, mode);
  }
  return static_cast<int>(syscall(SYS_openat, dirfd, path, flags, mode));
}

int Close(int fd) {
  if (CloseFn fn = Resolve(close_fn, "close")) {
    return fn(fd);
  }
  return static_cast<int>(syscall(SYS_close, fd));
}

void* Mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (MmapFn fn = Resolve(mmap_fn, "mmap64")) {
    return fn(addr, len, prot, flags, fd, off);
  }
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

int Munmap(void* addr, size_t len) {
  if (MunmapFn fn = Resolve(munmap_fn, "munmap")) {
    return fn(addr, len);
  }
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

void* Mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr) {
  if (MremapFn fn = Resolve(mremap_fn, "mremap")) {
    return fn(old_addr, old_len, new_len, flags, new_addr);
  }
  return reinterpret_cast<void*>(syscall(SYS_mremap, old_addr, old_len, new_len, flags, new_addr));
}

int Dup(int fd) {
  if (DupFn fn = Resolve(dup_fn, "dup")) {
    return fn(fd);
  }
  return static_cast<int>(syscall(SYS_dup, fd));
}

int Dup2(int fd, int fd2) {
  if (Dup2Fn fn = Resolve(dup2_fn, "dup2")) {
    return fn(fd, fd2);
  }
  return static_cast<int>(syscall(SYS_dup2, fd, fd2));
}

int Dup3(int fd, int fd2, int flags) {
  if (Dup3Fn fn = Resolve(dup3_fn, "dup3")) {
    return fn(fd, fd2, flags);
  }
  return static_cast<int>(syscall(SYS_dup3, fd, fd2, flags));
}

pid_t Fork() {
  if (ForkFn fn = Resolve(fork_fn, "fork")) {
    return fn();
  }
  return static_cast<pid_t>(syscall(SYS_fork));
}

}  // namespace vgpu::shim::real

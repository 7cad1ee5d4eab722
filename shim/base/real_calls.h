// Real libc entry points for the preload libraries (libvgpu-shim.so, the trace recorder).
//
// Each wrapper resolves the next definition with dlsym(RTLD_NEXT) on first use, so a library
// preloaded after ours (a test's fake driver, the recorder) stays in the chain. While a thread is
// inside dlsym, a re-entrant call (glibc's dlsym may open files or allocate) falls back to the raw
// system call instead of recursing. Everything here is async-signal-safe after resolution and
// allocates nothing.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace vgpu::shim::real {

int Ioctl(int fd, unsigned long request, void* arg);
int OpenAt(int dirfd, const char* path, int flags, mode_t mode);
int Close(int fd);
void* Mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);
int Munmap(void* addr, size_t len);
// mremap; `new_addr` is read only with MREMAP_FIXED.
void* Mremap(void* old_addr, size_t old_len, size_t new_len, int flags, void* new_addr);
int Dup(int fd);
int Dup2(int fd, int fd2);
int Dup3(int fd, int fd2, int flags);
pid_t Fork();

}  // namespace vgpu::shim::real

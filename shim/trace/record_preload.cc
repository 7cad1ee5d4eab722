// libvgpu-trace-record.so: LD_PRELOAD library injected by `vgpu-trace record`. It writes one JSON
// line per ioctl on an NVIDIA device file (format documented in uapi/vgpu_trace.h), plus
// open/close events, to $VGPU_TRACE_OUT. All processes of a recording append to the same file;
// each line is one write(2) on an O_APPEND file, so lines never interleave. Sequence numbers
// come from a shared counter ($VGPU_TRACE_SEQ, an 8-byte file mapped shared) so that the lines of
// several processes can be ordered by completion.
//
// Nested buffers are read with process_vm_readv on our own pid, page by page: a pointer field
// that points at unmapped memory (or a class whose parameter size we do not model, read up to a
// cap) yields a short record instead of a crash in the traced program.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "shim/base/fd_table.h"
#include "shim/base/hex.h"
#include "shim/base/real_calls.h"
#include "shim/base/rm_abi.h"

namespace vgpu::shim::trace {
namespace {

constexpr size_t kUnknownLenCap = 512;
constexpr size_t kControlLenCap = 1 << 20;

std::mutex init_mu;
std::atomic<int> out_fd{-1};
std::atomic<uint64_t>* shared_seq = nullptr;
std::atomic<uint64_t> local_seq{0};

void InitOnce() {
  if (out_fd.load(std::memory_order_acquire) >= 0) {
    return;
  }
  std::lock_guard<std::mutex> lock(init_mu);
  if (out_fd.load(std::memory_order_relaxed) >= 0) {
    return;
  }
  const char* path = getenv("VGPU_TRACE_OUT");
  if (path == nullptr || *path == '\0') {
    path = "/dev/stderr";
  }
  int fd = real::OpenAt(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (const char* seq_path = getenv("VGPU_TRACE_SEQ")) {
    int sfd = real::OpenAt(AT_FDCWD, seq_path, O_RDWR | O_CLOEXEC, 0);
    if (sfd >= 0) {
      void* p = real::Mmap(nullptr, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
      if (p != MAP_FAILED) {
        shared_seq = static_cast<std::atomic<uint64_t>*>(p);
      }
      real::Close(sfd);
    }
  }
  // Keep the trace fd away from the numbers programs expect to be free (and from 0-2).
  if (fd >= 0 && fd < 512) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (high >= 0) {
      real::Close(fd);
      fd = high;
    }
  }
  out_fd.store(fd, std::memory_order_release);
}

uint64_t NextSeq() {
  InitOnce();
  if (shared_seq != nullptr) {
    return shared_seq->fetch_add(1, std::memory_order_relaxed);
  }
  return local_seq.fetch_add(1, std::memory_order_relaxed);
}

void WriteLine(std::string& line) {
  InitOnce();
  line.push_back('\n');
  int fd = out_fd.load(std::memory_order_acquire);
  if (fd < 0) {
    return;
  }
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Copies up to `len` bytes from our own address space, stopping at the first unreadable page.
size_t SafeRead(uint64_t addr, size_t len, std::vector<uint8_t>& out) {
  out.resize(len);
  size_t done = 0;
  static std::atomic<bool> vm_readv_works{true};
  while (done < len) {
    uint64_t at = addr + done;
    size_t chunk = 4096 - (at & 4095);
    if (chunk > len - done) {
      chunk = len - done;
    }
    if (vm_readv_works.load(std::memory_order_relaxed)) {
      iovec local{out.data() + done, chunk};
      iovec remote{reinterpret_cast<void*>(at), chunk};
      ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
      if (n == static_cast<ssize_t>(chunk)) {
        done += chunk;
        continue;
      }
      if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
        vm_readv_works.store(false, std::memory_order_relaxed);
        continue;
      }
      break;  // unmapped page
    }
    // No process_vm_readv: probe readability with a zero-effect write to a pipe-less fd is not
    // possible portably; copy directly (callers only get here for lengths the ABI defines).
    memcpy(out.data() + done, reinterpret_cast<const void*>(at), chunk);
    done += chunk;
  }
  out.resize(done);
  return done;
}

std::string FdPath(int fd) {
  char link[32];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[256];
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) {
    return "?";
  }
  return std::string(target, static_cast<size_t>(n));
}

void AppendJsonString(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void EmitEvent(const char* ev, int fd, const std::string& dev) {
  std::string line;
  char head[160];
  snprintf(head, sizeof head, "{\"ev\":\"%s\",\"seq\":%llu,\"pid\":%d,\"fd\":%d,\"dev\":", ev,
           static_cast<unsigned long long>(NextSeq()), getpid(), fd);
  line = head;
  AppendJsonString(line, dev);
  line.push_back('}');
  WriteLine(line);
}

struct Nested {
  rm::NestedPtr ptr;
  std::vector<uint8_t> in;
  std::vector<uint8_t> out;
};

int TracedIoctl(int fd, DevKind kind, unsigned long req, void* arg) {
  // UVM ioctls are plain numbers with command-implied sizes (nvidia-rm-abi.md §7): recorded
  // without payload. RM escapes carry their size in the request word.
  size_t top_len = 0;
  if (kind == DevKind::kCtl || kind == DevKind::kGpu) {
    top_len = rm::IocSize(req);
  }
  std::vector<uint8_t> top_in;
  if (top_len > 0 && arg != nullptr) {
    SafeRead(reinterpret_cast<uint64_t>(arg), top_len, top_in);
  }
  Nested nested[2];
  int n_nested = 0;
  if (top_in.size() == top_len && top_len > 0) {
    rm::NestedPtr ptrs[2];
    n_nested = rm::NestedPointers(rm::IocNr(req), top_in.data(), top_len, ptrs);
    for (int i = 0; i < n_nested; ++i) {
      nested[i].ptr = ptrs[i];
      size_t len = ptrs[i].len_unknown ? kUnknownLenCap : ptrs[i].len;
      if (len > kControlLenCap) {
        len = kControlLenCap;
      }
      nested[i].ptr.len = len;
      SafeRead(ptrs[i].ptr, len, nested[i].in);
    }
  }

  int rc = real::Ioctl(fd, req, arg);
  int saved_errno = errno;

  std::vector<uint8_t> top_out;
  if (!top_in.empty()) {
    SafeRead(reinterpret_cast<uint64_t>(arg), top_in.size(), top_out);
  }
  for (int i = 0; i < n_nested; ++i) {
    SafeRead(nested[i].ptr.ptr, nested[i].in.size(), nested[i].out);
  }

  std::string line;
  line.reserve(256 + 4 * (top_in.size() + (n_nested > 0 ? nested[0].in.size() : 0)));
  char head[200];
  snprintf(head, sizeof head, "{\"seq\":%llu,\"pid\":%d,\"tid\":%ld,\"dev\":",
           static_cast<unsigned long long>(NextSeq()), getpid(),
           static_cast<long>(syscall(SYS_gettid)));
  line = head;
  AppendJsonString(line, FdPath(fd));
  snprintf(head, sizeof head, ",\"fd\":%d,\"req\":\"0x%lx\",\"rc\":%d,\"errno\":%d,\"in\":\"", fd,
           req, rc, rc < 0 ? saved_errno : 0);
  line += head;
  AppendHex(line, top_in.data(), top_in.size());
  line += "\",\"out\":\"";
  AppendHex(line, top_out.data(), top_out.size());
  line += "\",\"ptrs\":[";
  for (int i = 0; i < n_nested; ++i) {
    snprintf(head, sizeof head, "%s{\"off\":%zu,\"in\":\"", i ? "," : "", nested[i].ptr.off);
    line += head;
    AppendHex(line, nested[i].in.data(), nested[i].in.size());
    line += "\",\"out\":\"";
    AppendHex(line, nested[i].out.data(), nested[i].out.size());
    line += "\"}";
  }
  line += "]}";
  WriteLine(line);
  errno = saved_errno;
  return rc;
}

int AfterOpen(int fd, const char* path) {
  if (fd >= 0) {
    int saved = errno;
    DevKind k = ClassifyPath(path);
    ProcessFdTable().Set(fd, k == DevKind::kNone ? DevKind::kUnknown : k);
    if (IsNvidia(k)) {
      EmitEvent("open", fd, path);
    }
    errno = saved;
  }
  return fd;
}

mode_t ModeArg(int flags, va_list ap) {
  return (flags & (O_CREAT | __O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

}  // namespace
}  // namespace vgpu::shim::trace

using vgpu::shim::DevKind;
using vgpu::shim::ProcessFdTable;
namespace real = vgpu::shim::real;
namespace tr = vgpu::shim::trace;

extern "C" {

__attribute__((visibility("default"))) int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  DevKind k = ProcessFdTable().Get(fd);
  if (!vgpu::shim::IsNvidia(k)) {
    return real::Ioctl(fd, req, arg);
  }
  return tr::TracedIoctl(fd, k, req, arg);
}

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = tr::ModeArg(flags, ap);
  va_end(ap);
  return tr::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, mode), path);
}
__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = tr::ModeArg(flags, ap);
  va_end(ap);
  return tr::AfterOpen(real::OpenAt(dirfd, path, flags, mode), path);
}
__attribute__((visibility("default"))) int __open_2(const char* path, int flags) {
  return tr::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, 0), path);
}
// The 64 variants are the same calls on a 64-bit target (O_LARGEFILE is implied), as in
// shim/preload/wrappers.cc.
__attribute__((visibility("default"))) int open64(const char* path, int flags, ...)
    __attribute__((alias("open")));
__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...)
    __attribute__((alias("openat")));
__attribute__((visibility("default"))) int __open64_2(const char* path, int flags)
    __attribute__((alias("__open_2")));

__attribute__((visibility("default"))) int close(int fd) {
  DevKind k = ProcessFdTable().Clear(fd);
  if (vgpu::shim::IsNvidia(k)) {
    tr::EmitEvent("close", fd, tr::FdPath(fd));
  }
  return real::Close(fd);
}

__attribute__((visibility("default"))) int dup2(int fd, int fd2) {
  int rc = real::Dup2(fd, fd2);
  if (rc >= 0 && fd != fd2) {
    ProcessFdTable().Clear(rc);
  }
  return rc;
}
__attribute__((visibility("default"))) int dup3(int fd, int fd2, int flags) {
  int rc = real::Dup3(fd, fd2, flags);
  if (rc >= 0) {
    ProcessFdTable().Clear(rc);
  }
  return rc;
}

}  // extern "C"

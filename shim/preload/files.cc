// The process's open NVIDIA files: one record per fd number, shared by the fds dup'ed from
// one open (refcounted), each holding the filter core's file. Lock-free: the wrappers read
// files[] with one acquire load; attach, dup and close exchange whole records.
#include <errno.h>

#include "hooks_internal.h"
#include "log.h"
#include "preload_internal.h"
#include "shim/base/real_calls.h"

namespace vgpu::shim {

std::atomic<ShimFile*> files[kMaxFiles];

namespace {

enum vcore_file_kind CoreKind(DevKind k) {
  switch (k) {
    case DevKind::kCtl:
      return VCORE_FILE_CTL;
    case DevKind::kUvm:
      return VCORE_FILE_UVM;
    default:
      return VCORE_FILE_DEV;
  }
}

// Registers a freshly opened (or first-seen) NVIDIA fd with the core. false: refuse it.
bool AttachFile(int fd, DevKind kind) {
  ShimState* st = EnsureState(kind == DevKind::kCtl ? fd : -1);
  if (st == nullptr || !st->init_error.empty()) {
    return false;
  }
  int err = 0;
  vcore_file* vf = vcore_file_open_err(st->slot, CoreKind(kind),
                                       reinterpret_cast<void*>(static_cast<intptr_t>(fd)), &err);
  if (vf == nullptr) {
    Logf(LogLevel::kError, "cannot track fd %d (%s): refused", fd,
         err == -VCORE_EMFILE ? "the slot's UVM files are at their cap" : "out of memory");
    return false;
  }
  auto* f = new ShimFile{vf, kind, {1}};
  ShimFile* old = fd < kMaxFiles ? files[fd].exchange(f) : nullptr;
  if (old != nullptr && old->refs.fetch_sub(1) == 1) {
    vcore_file_close(old->core);  // a stale record (fd closed behind our back)
    delete old;
  }
  ProcessFdTable().Set(fd, kind);
  return true;
}

}  // namespace

void ReleaseFile(ShimFile* f) {
  if (f != nullptr && f->refs.fetch_sub(1) == 1) {
    if (f->kind == DevKind::kCtl) {
      HooksCtlClosed(reinterpret_cast<intptr_t>(vcore_file_priv(f->core)));
    }
    vcore_file_close(f->core);
    delete f;
  }
}

ShimFile* FileFor(int fd, DevKind kind) {
  if (fd < 0 || fd >= kMaxFiles) {
    return nullptr;
  }
  ShimFile* f = files[fd].load(std::memory_order_acquire);
  if (f == nullptr && AttachFile(fd, kind)) {
    f = files[fd].load(std::memory_order_acquire);
  }
  return f;
}

ShimFile* KnownFile(int fd) {
  return fd < 0 || fd >= kMaxFiles ? nullptr : files[fd].load(std::memory_order_acquire);
}

int AfterOpen(int fd, const char* path) {
  if (Mode() & kModeCount) {
    Count(counters.opens);
  }
  if (fd < 0 || InBorrowedMemory()) {
    return fd;
  }
  DevKind kind = ClassifyPath(path);
  if (!Filtered(kind) || Passthrough()) {
    ProcessFdTable().Set(fd, kind);
    return fd;
  }
  int saved = errno;
  if (!AttachFile(fd, kind)) {
    ShimState* st = CurrentState();
    Logf(LogLevel::kError, "refusing %s: %s", path,
         st != nullptr ? st->init_error.c_str() : "shim not initialized");
    ProcessFdTable().Clear(fd);
    real::Close(fd);
    errno = EACCES;
    return -1;
  }
  errno = saved;
  return fd;
}

void OnDup(int oldfd, int newfd) {
  if (InBorrowedMemory()) {
    return;
  }
  if (newfd < 0 || newfd >= kMaxFiles || oldfd < 0 || oldfd >= kMaxFiles) {
    return;
  }
  ShimFile* f = files[oldfd].load(std::memory_order_acquire);
  if (f != nullptr) {
    f->refs.fetch_add(1);
  }
  ReleaseFile(files[newfd].exchange(f));
  ProcessFdTable().Set(newfd, f != nullptr ? f->kind : ProcessFdTable().Get(oldfd));
}

}  // namespace vgpu::shim

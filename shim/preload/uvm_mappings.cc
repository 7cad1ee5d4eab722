// The process's charged mappings of /dev/nvidia-uvm. The filter core charges each managed-memory
// mapping its size (vcore_uvm_map: nvidia-uvm populates at most that much under it); this file
// tells the core when one goes, in pieces as the kernel unmaps them. A piece holds a reference
// on its ShimFile, as the kernel's VMA holds the driver's file, so closing the fd does not
// refund what a mapping still holds. nvidia-uvm sets VM_DONTEXPAND, so the kernel never grows
// one (mremap growth fails with EFAULT; refused here before the call too), and a moved or
// forked copy is disabled by the driver (uvm_vm_open_managed): a move ends the old range.
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "preload_internal.h"
#include "shim/base/real_calls.h"

namespace vgpu::shim {

std::atomic<int> uvm_pieces_live{0};

namespace {

struct Piece {
  uintptr_t start, end;
  ShimFile* file;  // one reference per piece
};

// A spin lock, not a mutex: a fork child resets it (a mutex held by another thread at fork
// stays locked in the child). Held only for list edits, never across a call.
std::atomic<bool> pieces_lock{false};
// Never freed: a thread may unmap while the process exits.
std::vector<Piece>* pieces = new std::vector<Piece>;

class PiecesLock {
 public:
  PiecesLock() {
    while (pieces_lock.exchange(true, std::memory_order_acquire)) {
    }
  }
  ~PiecesLock() { pieces_lock.store(false, std::memory_order_release); }
};

uintptr_t PageUp(uintptr_t n) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) & ~(page - 1);
}

struct Refund {
  ShimFile* file;
  uint64_t bytes;
  bool release;  // the piece went whole: drop its reference after the refund
};

}  // namespace

void* MapUvm(ShimState* st, ShimFile* f, void* addr, size_t len, int prot, int flags, int fd,
             off_t off) {
  const uint64_t size = PageUp(len);  // what the kernel maps
  vcore_u64 charged = 0;
  if (int err = vcore_uvm_map(f->core, size, &charged); err != 0) {
    ReportRefusal(st, "managed-memory mmap of /dev/nvidia-uvm", 0, 0, size,
                  err == -VCORE_ENOMEM ? "over the slot's memory quota" : "not a UVM file");
    errno = err == -VCORE_ENOMEM ? ENOMEM : EINVAL;
    return MAP_FAILED;
  }
  void* p = real::Mmap(addr, len, prot, flags, fd, off);
  if (p == MAP_FAILED) {
    int saved = errno;
    if (charged != 0) {
      vcore_uvm_unmap(f->core, charged);
    }
    errno = saved;
    return p;
  }
  if ((flags & MAP_FIXED) && UvmMappingsLive()) {
    UvmUnmapped(p, len);  // the kernel replaced what was there, charged pieces included
  }
  if (charged == 0) {
    return p;
  }
  f->refs.fetch_add(1, std::memory_order_relaxed);
  const auto start = reinterpret_cast<uintptr_t>(p);
  PiecesLock hold;
  pieces->push_back({start, start + size, f});
  uvm_pieces_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void UvmUnmapped(void* addr, size_t len) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t b = a + PageUp(len);
  std::vector<Refund> refunds;
  {
    PiecesLock hold;
    std::vector<Piece> kept;
    for (Piece& p : *pieces) {
      if (p.end <= a || p.start >= b) {
        kept.push_back(p);
        continue;
      }
      const uintptr_t lo = p.start > a ? p.start : a, hi = p.end < b ? p.end : b;
      const bool left = p.start<lo, right = p.end> hi;
      refunds.push_back({p.file, hi - lo, !left && !right});
      if (left) {
        kept.push_back({p.start, lo, p.file});
      }
      if (right) {
        if (left) {
          p.file->refs.fetch_add(1, std::memory_order_relaxed);  // split in two
        }
        kept.push_back({hi, p.end, p.file});
      }
    }
    pieces->swap(kept);
    uvm_pieces_live.store(static_cast<int>(pieces->size()), std::memory_order_relaxed);
  }
  for (const Refund& r : refunds) {
    vcore_uvm_unmap(r.file->core, r.bytes);
    if (r.release) {
      ReleaseFile(r.file);
    }
  }
}

bool UvmGrowthRefused(void* old_addr, size_t old_len, size_t new_len) {
  if (PageUp(new_len) <= PageUp(old_len)) {
    return false;
  }
  const auto a = reinterpret_cast<uintptr_t>(old_addr);
  const uintptr_t b = a + PageUp(old_len);
  PiecesLock hold;
  for (const Piece& p : *pieces) {
    if (p.start < b && p.end > a) {
      return true;
    }
  }
  return false;
}

void UvmRemapped(void* old_addr, size_t old_len, size_t new_len, void* result) {
  if (result == MAP_FAILED) {
    return;
  }
  if (result != old_addr) {
    UvmUnmapped(old_addr, old_len);  // moved: the driver disabled the copy
  } else if (PageUp(new_len) < PageUp(old_len)) {
    const uintptr_t cut = reinterpret_cast<uintptr_t>(old_addr) + PageUp(new_len);
    UvmUnmapped(reinterpret_cast<void*>(cut), PageUp(old_len) - PageUp(new_len));
  }
}

void ForgetUvmMappingsAfterFork() {
  // The child has none of them (VM_DONTCOPY, or disabled by the driver). The pieces' file
  // references stay: the records are the parent's copies.
  pieces_lock.store(false, std::memory_order_relaxed);
  pieces->clear();
  uvm_pieces_live.store(0, std::memory_order_relaxed);
}

}  // namespace vgpu::shim

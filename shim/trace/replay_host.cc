#include "shim/trace/replay_host.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

namespace vgpu::trace {

bool SimMemory::Overlaps(uint64_t addr, size_t n) const {
  auto it = regions_.upper_bound(addr);
  if (it != regions_.end() && it->first < addr + n) {
    return true;
  }
  if (it != regions_.begin()) {
    --it;
    if (it->first + it->second.size() > addr) {
      return true;
    }
  }
  return false;
}

bool SimMemory::Map(uint64_t addr, std::vector<uint8_t> bytes) {
  if (bytes.empty() || addr + bytes.size() < addr || Overlaps(addr, bytes.size())) {
    return false;
  }
  regions_.emplace(addr, std::move(bytes));
  return true;
}

namespace {

// Where [addr, addr + n) lies when one region holds all of it, else nullptr. A template so Read
// gets a const pointer and Write a mutable one.
template <typename Regions>
auto RegionBytes(Regions& regions, uint64_t addr, size_t n)
    -> decltype(regions.begin()->second.data()) {
  auto it = regions.upper_bound(addr);
  if (it == regions.begin()) {
    return nullptr;
  }
  --it;
  const uint64_t off = addr - it->first;
  if (off > it->second.size() || n > it->second.size() - off) {
    return nullptr;
  }
  return it->second.data() + off;
}

}  // namespace

bool SimMemory::Read(uint64_t addr, void* dst, size_t n) const {
  const uint8_t* bytes = RegionBytes(regions_, addr, n);
  if (bytes == nullptr) {
    return false;
  }
  memcpy(dst, bytes, n);
  return true;
}

bool SimMemory::Write(uint64_t addr, const void* src, size_t n) {
  uint8_t* bytes = RegionBytes(regions_, addr, n);
  if (bytes == nullptr) {
    return false;
  }
  memcpy(bytes, src, n);
  return true;
}

std::vector<uint8_t>* SimMemory::At(uint64_t addr) {
  auto it = regions_.find(addr);
  return it == regions_.end() ? nullptr : &it->second;
}

bool SimHost::HasPid(uint32_t pid) const {
  for (uint32_t p : pids_) {
    if (p == pid) {
      return true;
    }
  }
  return false;
}

void* SimHost::Zalloc(size_t n) {
  if (fail_after_ == 0) {
    return nullptr;
  }
  if (fail_after_ > 0) {
    --fail_after_;
  }
  void* p = calloc(1, n ? n : 1);
  if (p != nullptr) {
    ++live_;
  }
  return p;
}

void SimHost::Free(void* p) {
  if (p != nullptr) {
    --live_;
    free(p);
  }
}

void SimHost::Log(int level, const char* msg) {
  log_.emplace_back(msg);
  if (log_.size() > 10000) {
    log_.erase(log_.begin(), log_.begin() + 5000);
  }
  if (echo_) {
    fprintf(stderr, "vcore[%d]: %s\n", level, msg);
  }
}

namespace {

int OpCopyFromUser(void* uctx, void* dst, vcore_uptr_t src, vcore_size_t n) {
  auto* mem = static_cast<SimMemory*>(uctx);
  return mem != nullptr && mem->Read(src, dst, n) ? 0 : -VCORE_EFAULT;
}

int OpCopyToUser(void* uctx, vcore_uptr_t dst, const void* src, vcore_size_t n) {
  auto* mem = static_cast<SimMemory*>(uctx);
  return mem != nullptr && mem->Write(dst, src, n) ? 0 : -VCORE_EFAULT;
}

void* OpZalloc(void* priv, vcore_size_t n) { return static_cast<SimHost*>(priv)->Zalloc(n); }
void OpFree(void* priv, void* p) { static_cast<SimHost*>(priv)->Free(p); }
void* OpLockCreate(void* priv) {
  auto* host = static_cast<SimHost*>(priv);
  void* mem = host->Zalloc(sizeof(std::mutex));
  return mem == nullptr ? nullptr : new (mem) std::mutex();
}

void OpLockDestroy(void* priv, void* lock) {
  if (lock != nullptr) {
    static_cast<std::mutex*>(lock)->~mutex();
    static_cast<SimHost*>(priv)->Free(lock);
  }
}

void OpLock(void* lock) { static_cast<std::mutex*>(lock)->lock(); }
void OpUnlock(void* lock) { static_cast<std::mutex*>(lock)->unlock(); }

void OpLog(void* priv, vcore_log_level level, const char* msg) {
  static_cast<SimHost*>(priv)->Log(static_cast<int>(level), msg);
}

vcore_u64 OpClockNs(void*) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<vcore_u64>(ts.tv_sec) * 1000000000ull + static_cast<vcore_u64>(ts.tv_nsec);
}

vcore_bool OpPidInSlot(void* priv, vcore_u32 pid) {
  return static_cast<SimHost*>(priv)->HasPid(pid);
}

constexpr vcore_host_ops kSimOpsBase = {
    .copy_from_user = OpCopyFromUser,
    .copy_to_user = OpCopyToUser,
    .zalloc = OpZalloc,
    .free = OpFree,
    .lock_create = OpLockCreate,
    .lock_destroy = OpLockDestroy,
    .lock = OpLock,
    .unlock = OpUnlock,
    .log = OpLog,
    .clock_ns = OpClockNs,
    .pid_in_slot = nullptr,
    .driver_memory = nullptr,  // the replay has no driver to ask
    .driver_class = nullptr,
    .control_copy = nullptr,
    .tsg_scheduled = nullptr,       // no compute controller in a replay
    .lock_create_file = nullptr,    // lock_create serves
    .lock_file_killable = nullptr,  // lock serves
};

constexpr vcore_host_ops WithPidInSlot(vcore_host_ops ops) {
  ops.pid_in_slot = OpPidInSlot;
  return ops;
}

}  // namespace

const vcore_host_ops SimHost::kOps = kSimOpsBase;
const vcore_host_ops kSimOpsWithPids = WithPidInSlot(kSimOpsBase);

}  // namespace vgpu::trace

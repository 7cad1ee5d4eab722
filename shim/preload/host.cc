// The filter core's host operations for the in-process host. User memory is our own address
// space, so copy_from_user/copy_to_user are plain copies: a pointer that faults would fault in
// the driver's copy too, but crash here instead of returning EFAULT. libcuda and NVML never pass
// such pointers; the kernel host (kmod/) is the one that must survive hostile ones.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "log.h"
#include "state.h"

namespace vgpu::shim {
namespace {

constexpr uint64_t kLowestUserAddress = 4096;

int CopyFromUser(void*, void* dst, vcore_uptr_t src, vcore_size_t n) {
  if (n == 0) {
    return 0;
  }
  if (src < kLowestUserAddress || src + n < src) {
    return -VCORE_EFAULT;
  }
  memcpy(dst, reinterpret_cast<const void*>(src), n);
  return 0;
}

int CopyToUser(void*, vcore_uptr_t dst, const void* src, vcore_size_t n) {
  if (n == 0) {
    return 0;
  }
  if (dst < kLowestUserAddress || dst + n < dst) {
    return -VCORE_EFAULT;
  }
  memcpy(reinterpret_cast<void*>(dst), src, n);
  return 0;
}

void* Zalloc(void*, vcore_size_t n) { return calloc(1, n); }
void Free(void*, void* p) { free(p); }

void* LockCreate(void*) {
  auto* mu = static_cast<pthread_mutex_t*>(malloc(sizeof(pthread_mutex_t)));
  if (mu != nullptr) {
    pthread_mutex_init(mu, nullptr);
  }
  return mu;
}
void LockDestroy(void*, void* lock) {
  if (lock != nullptr) {
    pthread_mutex_destroy(static_cast<pthread_mutex_t*>(lock));
    free(lock);
  }
}
void Lock(void* lock) { pthread_mutex_lock(static_cast<pthread_mutex_t*>(lock)); }
void Unlock(void* lock) { pthread_mutex_unlock(static_cast<pthread_mutex_t*>(lock)); }

void Log(void*, vcore_log_level level, const char* msg) {
  Logf(static_cast<LogLevel>(level), "%s", msg);
}

vcore_u64 ClockNs(void*) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<vcore_u64>(ts.tv_sec) * 1000000000ull + static_cast<vcore_u64>(ts.tv_nsec);
}

// GET_PIDS/GET_PID_INFO show only the slot's processes: with a shared ledger, a pid is in the
// slot when it is a live member; without one, only this process.
vcore_bool PidInSlot(void* priv, vcore_u32 pid) {
  auto* state = static_cast<ShimState*>(priv);
  if (state->ledger) {
    return state->ledger->IsMember(static_cast<pid_t>(pid));
  }
  return static_cast<pid_t>(pid) == CachedPid();
}

// Value-initialized, then filled: ops the core adds later (optional ones, appended to the
// struct) stay NULL here instead of breaking the build (-Wmissing-field-initializers). The
// shim leaves driver_memory and driver_class NULL: an in-process filter can be bypassed anyway
// (vcore.h; docs/security/kernel-lifetime-compute.md, F11.1: a class swap keeps the checked class).
vcore_host_ops MakeHostOps() {
  vcore_host_ops o{};
  o.copy_from_user = CopyFromUser;
  o.copy_to_user = CopyToUser;
  o.zalloc = Zalloc;
  o.free = Free;
  o.lock_create = LockCreate;
  o.lock_destroy = LockDestroy;
  o.lock = Lock;
  o.unlock = Unlock;
  o.log = Log;
  o.clock_ns = ClockNs;
  o.pid_in_slot = PidInSlot;
  return o;
}
const vcore_host_ops kHostOps = MakeHostOps();

int LedgerTryCharge(void* l, vcore_u64 bytes, vcore_u64 quota) {
  return static_cast<SharedLedger*>(l)->TryCharge(bytes, quota) == 0 ? 0 : -VCORE_ENOSPC;
}
void LedgerForceCharge(void* l, vcore_u64 bytes) {
  static_cast<SharedLedger*>(l)->ForceCharge(bytes);
}
void LedgerUncharge(void* l, vcore_u64 bytes) { static_cast<SharedLedger*>(l)->Uncharge(bytes); }
vcore_u64 LedgerCharged(void* l) { return static_cast<SharedLedger*>(l)->Charged(); }
void LedgerClientEvent(void* l, vcore_u32 h_client, vcore_bool live) {
  static_cast<SharedLedger*>(l)->RecordClient(h_client, live != 0);
}
vcore_bool LedgerClientInSlot(void* l, vcore_u32 h_client) {
  return static_cast<SharedLedger*>(l)->ClientOfOtherMember(h_client);
}
void LedgerDupEvent(void* l, vcore_u32 h_client, vcore_u32 h_object, vcore_bool live) {
  static_cast<SharedLedger*>(l)->RecordDup(h_client, h_object, live != 0);
}
vcore_bool LedgerPassCharge(void* l, vcore_u32 h_client, vcore_u32 h_object, vcore_u64 bytes) {
  return static_cast<SharedLedger*>(l)->PassCharge(h_client, h_object, bytes);
}

const vcore_ledger_ops kLedgerOps = {
    .try_charge = LedgerTryCharge,
    .force_charge = LedgerForceCharge,
    .uncharge = LedgerUncharge,
    .charged = LedgerCharged,
    .client = LedgerClientEvent,
    .client_in_slot = LedgerClientInSlot,
    .dup = LedgerDupEvent,
    .pass_charge = LedgerPassCharge,
};

std::atomic<pid_t> cached_pid{0};

}  // namespace

const vcore_host_ops* HostOps() { return &kHostOps; }
const vcore_ledger_ops* LedgerOps() { return &kLedgerOps; }

std::string ParseProcDriverVersion(const std::string& text) {
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    int dots = 0;
    bool ok = !tok.empty() && tok[0] >= '0' && tok[0] <= '9';
    for (char c : tok) {
      if (c == '.') {
        ++dots;
      } else if (c < '0' || c > '9') {
        ok = false;
      }
    }
    if (ok && dots >= 1 && tok.back() != '.') {
      return tok;
    }
  }
  return "";
}

std::string ReadDriverVersion() {
  std::ifstream sys("/sys/module/nvidia/version");
  std::string v;
  if (sys && std::getline(sys, v) && !v.empty()) {
    return v;
  }
  std::ifstream proc("/proc/driver/nvidia/version");
  if (proc) {
    std::stringstream ss;
    ss << proc.rdbuf();
    return ParseProcDriverVersion(ss.str());
  }
  return "";
}

pid_t CachedPid() {
  pid_t pid = cached_pid.load(std::memory_order_relaxed);
  if (pid == 0) {
    pid = getpid();
    cached_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

bool InBorrowedMemory() {
  pid_t pid = cached_pid.load(std::memory_order_relaxed);
  return pid != 0 && static_cast<pid_t>(syscall(SYS_getpid)) != pid;
}

void RefreshPidAfterFork() {
  cached_pid.store(static_cast<pid_t>(syscall(SYS_getpid)), std::memory_order_relaxed);
}

}  // namespace vgpu::shim

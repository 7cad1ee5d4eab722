// libvgpu-shim.so: the filter core (kmod/core) hosted in-process via LD_PRELOAD.
//
// Every ioctl on /dev/nvidiactl, /dev/nvidiaN and /dev/nvidia-uvm goes through vcore_pre, the
// real driver (unless refused), and vcore_post, exactly as in the kernel host (DESIGN.md, "The
// shim host"). mmap of /dev/nvidia-uvm (managed memory, nvidia-rm-abi.md §7) is asked of the
// core's managed-memory policy. Anything else passes straight to libc: the ioctl wrapper costs
// two relaxed byte loads (the fd's kind, the diagnostic mode) for a non-NVIDIA fd, close() of a
// non-NVIDIA fd no system call of its own, and kernel launches issue no ioctl at all
// (memory-quota-h200.md, "Cost"; counted on the H200 with VGPU_SHIM_COUNT=1, shim-h200.md).
//
// Lock order: init_mu > (core slot lock > ledger mutex). No shim lock is held across a real
// ioctl; files_[] and the fd table are lock-free.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "hooks_internal.h"
#include "log.h"
#include "shim/base/real_calls.h"
#include "shim/base/rm_abi.h"
#include "shim/include/vshim_diag.h"
#include "shim/include/vshim_hooks.h"
#include "state.h"

namespace vgpu::shim {
namespace {

std::mutex init_mu;
std::atomic<ShimState*> state_ptr{nullptr};
std::atomic<bool> init_failed{false};
std::atomic<bool> refusal_reported{false};

constexpr int kMaxFiles = FdTable::kMaxTracked;
std::atomic<ShimFile*> files[kMaxFiles];

// NV_ESC_CHECK_VERSION_STR query (cmd '2'): the driver writes its version string
// (nvidia-rm-abi.md §3, nv_ioctl_rm_api_version_t {cmd@0 reply@4 versionString[64]@8}).
std::string QueryDriverVersion(int ctl_fd) {
  struct {
    uint32_t cmd;
    uint32_t reply;
    char version[64];
  } p{};
  p.cmd = '2';
  if (ctl_fd < 0 || real::Ioctl(ctl_fd, 0xC04846D2ul, &p) != 0) {
    return "";
  }
  p.version[63] = '\0';
  return p.version;
}

// TOCTOU (vcore.h): another thread changed an allocation's parameters between the core's check
// and the driver's read, and the driver allocated beyond the quota. The core reports it from
// vcore_post; the ioctl path then frees the object through the filter (which refunds it) and
// answers NV_ERR_NO_MEMORY, as the driver would have. Per thread: the report belongs to the
// call this thread is finishing.
struct PendingOverquota {
  bool set;
  int fd;
  vcore_overquota oq;
};
thread_local PendingOverquota pending_overquota{};

void OnOverquota(void*, vcore_file* file, const vcore_overquota* oq) {
  pending_overquota = {true, static_cast<int>(reinterpret_cast<intptr_t>(vcore_file_priv(file))),
                       *oq};
}

ShimState* Init(int ctl_fd_hint) {
  CachedPid();  // from here on, InBorrowedMemory() can tell a vfork child
  auto* st = new ShimState();
  std::string err = LoadSlotConfig(st->cfg, [](const char* k) -> const char* { return getenv(k); });
  SetLogLevel(st->cfg.log, st->cfg.slot_id);
  if (!err.empty()) {
    st->init_error = "configuration: " + err;
    return st;
  }
  if (!st->cfg.ledger_path.empty()) {
    st->ledger = SharedLedger::Open(st->cfg.ledger_path, &err);
    if (!st->ledger) {
      st->init_error = err;
      return st;
    }
    if (!st->ledger->Attach()) {
      st->init_error = "ledger " + st->cfg.ledger_path + " is full";
      return st;
    }
  }
  vcore_slot_config cc{};
  cc.id = st->cfg.slot_id;
  cc.mem_quota_bytes = st->cfg.memory_quota;
  cc.unknown_policy =
      st->cfg.unknown == UnknownPolicy::kStrict ? VCORE_UNKNOWN_STRICT : VCORE_UNKNOWN_PERMISSIVE;
  switch (st->cfg.managed) {
    case ManagedPolicy::kRefuse:
      cc.managed_policy = VCORE_MANAGED_REFUSE;
      break;
    case ManagedPolicy::kAllowUncounted:
      cc.managed_policy = VCORE_MANAGED_ALLOW_UNCOUNTED;
      break;
    case ManagedPolicy::kDefault:
      cc.managed_policy = VCORE_MANAGED_DEFAULT;
      break;
  }
  cc.allow_unknown_driver_version = st->cfg.allow_unknown_driver;
  std::string version = ReadDriverVersion();
  if (version.empty() && ctl_fd_hint >= 0) {
    version = QueryDriverVersion(ctl_fd_hint);
  }
  if (version.empty()) {  // first NVIDIA open was not the ctl node: ask one of our own
    std::string ctl_path = std::string(DevDir()) + "/nvidiactl";
    int fd = real::OpenAt(AT_FDCWD, ctl_path.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd >= 0) {
      version = QueryDriverVersion(fd);
      real::Close(fd);
    }
  }
  snprintf(cc.driver_version, sizeof cc.driver_version, "%s", version.c_str());
  vcore_ledger ledger{LedgerOps(), st->ledger.get()};
  int core_err = 0;
  st->slot = vcore_slot_create(HostOps(), st, &cc, st->ledger ? &ledger : nullptr, &core_err);
  if (st->slot == nullptr) {
    st->init_error = "filter core refused the slot (error " + std::to_string(-core_err) +
                     ", driver version '" + version + "')";
    return st;
  }
  vcore_slot_set_overquota_hook(st->slot, OnOverquota);
  Logf(LogLevel::kInfo, "quota=%llu managed=%s policy=%s ledger=%s driver=%s",
       static_cast<unsigned long long>(st->cfg.memory_quota), ManagedPolicyName(st->cfg.managed),
       UnknownPolicyName(st->cfg.unknown),
       st->cfg.ledger_path.empty() ? "(process)" : st->cfg.ledger_path.c_str(), version.c_str());
  return st;
}

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

bool Filtered(DevKind k) { return k == DevKind::kCtl || k == DevKind::kGpu || k == DevKind::kUvm; }

// Diagnostic switches, read from the environment at the first wrapper call and kept in one
// byte, so a wrapper pays one relaxed load for both:
//   VGPU_SHIM_PASSTHROUGH=1  keep every wrapper but never call the core (no limits, no views),
//                            to tell interposition cost from filtering cost;
//   VGPU_SHIM_COUNT=1        count the calls reaching the wrappers (vshim_diag.h).
constexpr uint8_t kModeKnown = 1, kModePassthrough = 2, kModeCount = 4;
std::atomic<uint8_t> mode_bits{0};

uint8_t ReadMode() {
  auto on = [](const char* name) {
    const char* v = getenv(name);
    return v != nullptr && strcmp(v, "1") == 0;
  };
  uint8_t m = kModeKnown;
  m |= on("VGPU_SHIM_PASSTHROUGH") ? kModePassthrough : 0;
  m |= on("VGPU_SHIM_COUNT") ? kModeCount : 0;
  mode_bits.store(m, std::memory_order_relaxed);  // same value from every racing reader
  return m;
}

inline uint8_t Mode() {
  uint8_t m = mode_bits.load(std::memory_order_relaxed);
  return __builtin_expect(m != 0, 1) ? m : ReadMode();
}
inline bool Passthrough() { return (Mode() & kModePassthrough) != 0; }

struct Counters {
  std::atomic<uint64_t> ioctls, nvidia_ioctls, mmaps, opens, closes;
};
Counters counters;

inline void Count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

// Registers a freshly opened (or first-seen) NVIDIA fd with the core. false: refuse it.
bool AttachFile(int fd, DevKind kind) {
  ShimState* st = EnsureState(kind == DevKind::kCtl ? fd : -1);
  if (st == nullptr || !st->init_error.empty()) {
    return false;
  }
  vcore_file* vf =
      vcore_file_open(st->slot, CoreKind(kind), reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  if (vf == nullptr) {
    Logf(LogLevel::kError, "cannot track fd %d (out of memory): refused", fd);
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

uint32_t Load32(const void* base, size_t off) {
  uint32_t v;
  memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof v);
  return v;
}
uint64_t Load64(const void* base, size_t off) {
  uint64_t v;
  memcpy(&v, static_cast<const uint8_t*>(base) + off, sizeof v);
  return v;
}

// The bytes an allocation call asked for, for the refusal line (0 when not an allocation).
uint64_t RequestedBytes(uint32_t nr, unsigned long req, const void* arg) {
  if (arg == nullptr) {
    return 0;
  }
  uint32_t size = rm::IocSize(req);
  if (nr == rm::kEscRmAlloc && (size == 48 || size == 32)) {
    uint32_t cls = Load32(arg, 12);
    uint64_t params = Load64(arg, 16);
    if (params >= 4096 && rm::AllocParamsSize(cls) == 128) {
      return Load64(reinterpret_cast<const void*>(params), 64);  // NV_MEMORY_ALLOCATION_PARAMS.size
    }
  } else if (nr == rm::kEscRmVidHeapControl && size == 184) {
    return Load64(arg, 88);  // NVOS32 data.AllocSize.size
  }
  return 0;
}

void ReportRefusal(ShimState* st, const char* what, uint32_t nr, uint32_t cmd, uint64_t request,
                   const char* reason) {
  bool first = !refusal_reported.exchange(true);
  uint64_t charged = 0;
  if (st->ledger) {
    charged = st->ledger->Charged();
  } else {
    vcore_stats stats;
    vcore_slot_get_stats(st->slot, &stats);
    charged = stats.charged_bytes;
  }
  // The first refusal is always printed (it is the one an operator needs); later ones at info.
  LogLevel level = first ? LogLevel::kError : LogLevel::kInfo;
  if (!first && !LogEnabled(level)) {
    return;
  }
  if (first && !LogEnabled(LogLevel::kError)) {
    SetLogLevel(LogLevel::kError, st->cfg.slot_id);
  }
  Logf(level,
       "refused %s (escape 0x%x, cmd/class 0x%x): %s; quota %llu, charged %llu, request %llu", what,
       nr, cmd, reason[0] ? reason : "policy",
       static_cast<unsigned long long>(st->cfg.memory_quota),
       static_cast<unsigned long long>(charged), static_cast<unsigned long long>(request));
}

int FilteredIoctl(int fd, DevKind kind, unsigned long req, void* arg);

// gettid() once per thread (a system call per ioctl is measurable: ioctl_bench.sh); re-read
// when the process changed under the thread (fork child).
vcore_u32 CachedTid() {
  thread_local pid_t tid_pid = 0;
  thread_local vcore_u32 tid = 0;
  pid_t pid = CachedPid();
  if (tid_pid != pid) {
    tid = static_cast<vcore_u32>(syscall(SYS_gettid));
    tid_pid = pid;
  }
  return tid;
}

// RM status offset of an allocation escape's struct (abi.md §3), 0 if not an allocation.
size_t AllocStatusOffset(uint32_t nr, uint32_t size) {
  if (nr == rm::kEscRmAlloc) {
    return size == 48 ? 40 : size == 32 ? 28 : 0;  // NVOS64 / NVOS21
  }
  if (nr == rm::kEscRmVidHeapControl && size == 184) {
    return 20;  // NVOS32
  }
  if (nr == rm::kEscRmAllocMemory && size == 56) {
    return 40;  // NVOS02 + fd wrapper
  }
  return 0;
}

void UndoOverquota(ShimState* st, const PendingOverquota& p, uint32_t nr, unsigned long req,
                   void* arg) {
  size_t status_off = rm::IocNr(req) == nr ? AllocStatusOffset(nr, rm::IocSize(req)) : 0;
  if (status_off == 0 || p.fd < 0) {
    Logf(LogLevel::kWarn,
         "over quota by a racing allocation (object 0x%x/0x%x, %llu bytes); "
         "not undone (wrapped call)",
         p.oq.h_client, p.oq.h_object, static_cast<unsigned long long>(p.oq.bytes));
    return;
  }
  // NVOS00 (abi.md §3): hRoot@0 hObjectParent@4 hObjectOld@8 status@12, through the filter.
  uint32_t nvos00[4] = {p.oq.h_client, p.oq.h_parent, p.oq.h_object, 0};
  if (FilteredIoctl(p.fd, DevKind::kCtl, 0xC0104629ul, nvos00) != 0 || nvos00[3] != 0) {
    Logf(LogLevel::kError, "over quota by a racing allocation and the free failed (status 0x%x)",
         nvos00[3]);
    return;
  }
  uint32_t no_memory = 0x51;  // NV_ERR_NO_MEMORY
  memcpy(static_cast<uint8_t*>(arg) + status_off, &no_memory, sizeof no_memory);
  ReportRefusal(st, "allocation the driver made larger than checked", nr, 0, p.oq.bytes,
                "video memory quota exceeded after the call; object freed");
}

int FilteredIoctl(int fd, DevKind kind, unsigned long req, void* arg) {
  ShimFile* f = FileFor(fd, kind);
  ShimState* st = CurrentState();
  if (f == nullptr || st == nullptr) {
    errno = EACCES;
    return -1;
  }
  vcore_call_ctx ctx{nullptr, static_cast<vcore_u32>(CachedPid()), CachedTid()};
  vcore_call* call = nullptr;
  vcore_verdict v = vcore_pre(f->core, static_cast<vcore_u32>(req),
                              reinterpret_cast<vcore_uptr_t>(arg), &ctx, &call);
  uint32_t nr = call != nullptr ? vcore_call_nr(call) : rm::IocNr(req);
  uint32_t cmd = call != nullptr ? vcore_call_cmd(call) : 0;
  int rc = 0;
  int real_ret = 0;
  if (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN) {
    real_ret = real::Ioctl(fd, req, arg);
    rc = real_ret < 0 ? -errno : 0;
  } else if (call != nullptr) {
    const char* what = kind == DevKind::kUvm     ? "UVM ioctl"
                       : nr == rm::kEscRmAlloc   ? "RM_ALLOC"
                       : nr == rm::kEscRmControl ? "RM_CONTROL"
                                                 : "ioctl";
    ReportRefusal(st, what, nr, cmd, RequestedBytes(nr, req, arg), vcore_call_reason(call));
  }
  int ret = vcore_post(call, rc);
  if (pending_overquota.set) {
    PendingOverquota p = pending_overquota;
    pending_overquota.set = false;
    UndoOverquota(st, p, nr, req, arg);
  }
  if (ret < 0) {
    errno = -ret;
    return -1;
  }
  if (kind == DevKind::kCtl && rc == 0 && (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN)) {
    HooksAfterCall(fd, nr, req, arg);
  }
  return real_ret > 0 ? real_ret : 0;
}

mode_t ModeArg(int flags, va_list ap) {
  return (flags & (O_CREAT | __O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
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

}  // namespace

ShimState* CurrentState() { return state_ptr.load(std::memory_order_acquire); }

ShimState* EnsureState(int ctl_fd_hint) {
  ShimState* st = state_ptr.load(std::memory_order_acquire);
  if (st != nullptr) {
    return st;
  }
  bool started = false;
  {
    std::lock_guard<std::mutex> lock(init_mu);
    st = state_ptr.load(std::memory_order_relaxed);
    if (st == nullptr) {
      st = Init(ctl_fd_hint);
      state_ptr.store(st, std::memory_order_release);
      started = st->init_error.empty();
      if (!started) {
        init_failed.store(true);
        Logf(LogLevel::kError, "%s", st->init_error.c_str());
      }
    }
  }
  if (started && vshim_compute_start != nullptr) {
    vshim_compute_start();
  }
  return st;
}

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
VSHIM_EXPORT int open64(const char* path, int flags, ...) {
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
VSHIM_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = vs::ModeArg(flags, ap);
  va_end(ap);
  return vs::AfterOpen(real::OpenAt(dirfd, path, flags, mode), path);
}
VSHIM_EXPORT int __open_2(const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, 0), path);
}
VSHIM_EXPORT int __open64_2(const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(AT_FDCWD, path, flags, 0), path);
}
VSHIM_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(dirfd, path, flags, 0), path);
}
VSHIM_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  return vs::AfterOpen(real::OpenAt(dirfd, path, flags, 0), path);
}

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

// Managed memory is an mmap of /dev/nvidia-uvm (abi.md §4.2, §7); the core allows the one
// context mapping libcuda makes first on each UVM file (vcore_uvm_file_mmap_allowed).
VSHIM_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (vs::Mode() & vs::kModeCount) [[unlikely]] {
    vs::Count(vs::counters.mmaps);
  }
  if (fd >= 0 && ProcessFdTable().Get(fd) == DevKind::kUvm && !vs::Passthrough()) {
    vs::ShimState* st = vs::CurrentState();
    vs::ShimFile* f = fd < vs::kMaxFiles ? vs::files[fd].load(std::memory_order_acquire) : nullptr;
    if (f != nullptr && st != nullptr && st->slot != nullptr &&
        vcore_uvm_file_mmap_allowed(f->core, static_cast<vcore_u64>(len)) != 0) {
      vs::ReportRefusal(st, "managed-memory mmap of /dev/nvidia-uvm", 0, 0, len,
                        "managed memory is refused under this slot's policy");
      errno = ENOMEM;
      return MAP_FAILED;
    }
  }
  return real::Mmap(addr, len, prot, flags, fd, off);
}
VSHIM_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

VSHIM_EXPORT pid_t fork(void) {
  pid_t pid = real::Fork();
  if (pid == 0) {
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

// libvgpu-shim.so: the filter core (kmod/core) hosted in-process via LD_PRELOAD.
//
// Every ioctl on /dev/nvidiactl, /dev/nvidiaN and /dev/nvidia-uvm goes through vcore_pre, the
// real driver (unless refused), and vcore_post, exactly as in the kernel host (docs/design.md, "The
// shim host"). mmap of /dev/nvidia-uvm (managed memory, nvidia-rm-abi.md §7) is asked of the
// core's managed-memory policy. Anything else passes straight to libc (wrappers.cc): the ioctl
// wrapper costs two relaxed byte loads (the fd's kind, the diagnostic mode) for a non-NVIDIA fd,
// close() of a non-NVIDIA fd no system call of its own, and kernel launches issue no ioctl at all
// (memory-quota-h200.md, "Cost"; counted on the H200 with VGPU_SHIM_COUNT=1, shim-h200.md).
// This file: the process state (config, ledger, core slot) and the filtered ioctl path.
//
// Lock order: init_mu > (core slot lock > ledger mutex). No shim lock is held across a real
// ioctl; files[] (files.cc) and the fd table are lock-free.
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "hooks_internal.h"
#include "kmod/core/abi/nvstatus.h"
#include "log.h"
#include "preload_internal.h"
#include "shim/base/real_calls.h"
#include "shim/base/rm_abi.h"
#include "shim/include/vshim_hooks.h"
#include "state.h"

namespace vgpu::shim {
namespace {

std::mutex init_mu;
std::atomic<ShimState*> state_ptr{nullptr};
std::atomic<bool> init_failed{false};
std::atomic<bool> refusal_reported{false};

// NV_ESC_CHECK_VERSION_STR query: the driver writes its version string (nvidia-rm-abi.md §3).
std::string QueryDriverVersion(int ctl_fd) {
  nv_ioctl_rm_api_version_t p{};
  p.cmd = NV_RM_API_VERSION_CMD_QUERY;
  if (ctl_fd < 0 ||
      real::Ioctl(ctl_fd, rm::IocEscape(NV_ESC_CHECK_VERSION_STR, sizeof p), &p) != 0) {
    return "";
  }
  p.versionString[sizeof p.versionString - 1] = '\0';
  return p.versionString;
}

// A ctl file for the init's own driver questions: the one the caller just opened, else one of
// the shim's own, opened on first use and closed with this.
class QueryCtl {
 public:
  explicit QueryCtl(int hint) : fd_(hint) {}
  ~QueryCtl() {
    if (own_) {
      real::Close(fd_);
    }
  }
  QueryCtl(const QueryCtl&) = delete;
  QueryCtl& operator=(const QueryCtl&) = delete;
  int fd() {
    if (fd_ < 0 && !own_) {
      std::string path = std::string(DevDir()) + "/nvidiactl";
      fd_ = real::OpenAt(AT_FDCWD, path.c_str(), O_RDWR | O_CLOEXEC, 0);
      own_ = true;
    }
    return fd_;
  }

 private:
  int fd_;
  bool own_ = false;
};

// The driver's id of the slot's GPU (vcore_slot_config.gpu_id), asked as vgpu.ko asks it when
// it creates a slot (kmod/slot_gpu.c): NV_ESC_CARD_INFO on a ctl file, the entry of the minor
// the slot config names. The request and the reply's layout are the core's (gpus.c). Returns ""
// or why the slot cannot be confined; a minor the driver does not list is an error, never a slot
// left unconfined.
std::string FindSlotGpuId(int ctl_fd, uint32_t minor, vcore_u32* gpu_id) {
  vcore_size_t len = 0;
  const vcore_u32 req = vcore_card_info_req(&len);
  std::vector<unsigned char> reply(len);
  if (ctl_fd < 0 || real::Ioctl(ctl_fd, req, reply.data()) != 0) {
    return std::string("cannot ask the driver which GPU gpu_index ") + std::to_string(minor) +
           " is (CARD_INFO: " + strerror(ctl_fd < 0 ? ENOENT : errno) + ")";
  }
  *gpu_id = vcore_card_info_gpu_id(reply.data(), len, minor);
  if (*gpu_id != 0) {
    return "";
  }
  std::string listed;
  for (uint32_t m = 0; m < 256; ++m) {
    if (vcore_card_info_gpu_id(reply.data(), len, m) != 0) {
      listed += (listed.empty() ? "" : " ") + std::to_string(m);
    }
  }
  return "gpu_index " + std::to_string(minor) +
         " is not a GPU of the driver (CARD_INFO lists minors: " +
         (listed.empty() ? "none" : listed) + "); the slot is not run unconfined";
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
  cc.mem_quota_bytes = st->cfg.mem_quota;
  cc.unknown_policy = st->cfg.unknown_policy == VGPU_UNKNOWN_ALLOW_LOG ? VCORE_UNKNOWN_PERMISSIVE
                                                                       : VCORE_UNKNOWN_STRICT;
  switch (st->cfg.managed_policy) {
    case VGPU_MANAGED_REFUSE:
      cc.managed_policy = VCORE_MANAGED_REFUSE;
      break;
    case VGPU_MANAGED_ALLOW_UNCOUNTED:
      cc.managed_policy = VCORE_MANAGED_ALLOW_UNCOUNTED;
      break;
    default:  // the schema's default: the core decides by the quota
      cc.managed_policy = VCORE_MANAGED_DEFAULT;
      break;
  }
  cc.allow_unknown_driver_version = st->cfg.allow_unknown_driver;
  // The same budget vgpu.ko gives every slot by default (F10): the shim has no module parameter
  // an operator could change it with, and a tenant's environment must not.
  cc.sysmem_budget_bytes = uint64_t{VCORE_SLOT_SYSMEM_DEFAULT_MIB} << 20;
  QueryCtl ctl(ctl_fd_hint);
  std::string version = ReadDriverVersion();
  if (version.empty()) {
    version = QueryDriverVersion(ctl.fd());
  }
  // F11.3: confined to the slot's GPU before the first call is forwarded.
  if (st->cfg.gpu_index) {
    err = FindSlotGpuId(ctl.fd(), *st->cfg.gpu_index, &cc.gpu_id);
    if (!err.empty()) {
      st->init_error = "slot config " + st->cfg.config_path + ": " + err;
      return st;
    }
  } else {
    Logf(st->cfg.config_path.empty() ? LogLevel::kInfo : LogLevel::kWarn,
         "slot config %s names no GPU (gpu_index): not confined to one GPU",
         st->cfg.config_path.empty() ? "(none)" : st->cfg.config_path.c_str());
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
  for (const std::string& env : st->cfg.ignored_env) {
    Logf(LogLevel::kWarn, "%s ignored: the slot config %s is in force", env.c_str(),
         st->cfg.config_path.c_str());
  }
  Logf(LogLevel::kInfo,
       "quota=%llu share=%u mode=%s managed=%s policy=%s ledger=%s driver=%s gpu_id=0x%x "
       "sysmem_budget=%llu",
       static_cast<unsigned long long>(st->cfg.mem_quota), st->cfg.compute_share,
       SettingValueName("compute_mode", st->cfg.compute_mode),
       SettingValueName("managed_policy", st->cfg.managed_policy),
       SettingValueName("unknown_policy", st->cfg.unknown_policy),
       st->cfg.ledger_path.empty() ? "(process)" : st->cfg.ledger_path.c_str(), version.c_str(),
       cc.gpu_id, static_cast<unsigned long long>(cc.sysmem_budget_bytes));
  return st;
}

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

// An XFER the core unwrapped goes to the driver as its inner escape, with the number, size and
// pointer the core read and checked: the header stays in the tenant's memory, where a sibling
// thread can store another escape into it after the core's read, and the driver would read it
// again (nvidia_ioctl, nv.c; docs/security.md F2). The driver decodes only _IOC_NR and _IOC_SIZE,
// so the unwrapped call is the one it would have run. false: the inner size (16384, the one XFER
// size over _IOC_SIZE; no 580 escape has it) cannot be carried.
bool UnwrapXfer(const vcore_call* call, unsigned long* req, void** arg) {
  vcore_u32 nr = 0, size = 0;
  vcore_uptr_t inner = 0;
  if (!vcore_call_unwrapped(call, &nr, &size, &inner)) {
    return true;
  }
  if (size > rm::kIocSizeMax) {
    return false;
  }
  *req = rm::IocEscape(nr, size);
  *arg = reinterpret_cast<void*>(inner);
  return true;
}

// `status` is the allocation's RM status word as the core named it (vcore_call_status_addr).
void UndoOverquota(ShimState* st, const PendingOverquota& p, uint32_t nr, vcore_uptr_t status) {
  if (status == 0 || p.fd < 0) {
    Logf(LogLevel::kWarn,
         "over quota by a racing allocation (object 0x%x/0x%x, %llu bytes); "
         "not undone (wrapped call)",
         p.oq.h_client, p.oq.h_object, static_cast<unsigned long long>(p.oq.bytes));
    return;
  }
  // RM_FREE through the filter, so that the core refunds it.
  NVOS00_PARAMETERS nvos00{p.oq.h_client, p.oq.h_parent, p.oq.h_object, 0};
  if (FilteredIoctl(p.fd, DevKind::kCtl, rm::IocEscape(NV_ESC_RM_FREE, sizeof nvos00), &nvos00) !=
          0 ||
      nvos00.status != 0) {
    Logf(LogLevel::kError, "over quota by a racing allocation and the free failed (status 0x%x)",
         nvos00.status);
    return;
  }
  const uint32_t no_memory = NV_ERR_NO_MEMORY;
  memcpy(reinterpret_cast<void*>(status), &no_memory, sizeof no_memory);
  ReportRefusal(st, "allocation the driver made larger than checked", nr, 0, p.oq.bytes,
                "video memory quota exceeded after the call; object freed");
}

}  // namespace

std::atomic<uint8_t> mode_bits{0};
Counters counters;

uint8_t ReadMode() {
  auto on = [](const char* name) {
    const char* v = getenv(name);
    return v != nullptr && strcmp(v, "1") == 0;
  };
  uint8_t m = kModeKnown;
  // Under a slot config the tenant cannot switch enforcement off (config.h "Sources").
  const char* config = getenv("VGPU_CONFIG");
  const bool slot_config = config != nullptr && *config != '\0';
  m |= on("VGPU_SHIM_PASSTHROUGH") && !slot_config ? kModePassthrough : 0;
  m |= on("VGPU_SHIM_COUNT") ? kModeCount : 0;
  mode_bits.store(m, std::memory_order_relaxed);  // same value from every racing reader
  return m;
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
       nr, cmd, reason[0] ? reason : "policy", static_cast<unsigned long long>(st->cfg.mem_quota),
       static_cast<unsigned long long>(charged), static_cast<unsigned long long>(request));
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
  // Export fds keep their objects' charge (kmod/core/export.c): name the files this process
  // tracks (compared by the core against the slot's open files, never dereferenced).
  for (unsigned i = 0; i < vcore_call_fd_count(call); ++i) {
    if (ShimFile* ff = KnownFile(vcore_call_fd(call, i)->value)) {
      vcore_call_set_fd_file(call, i, ff->core);
    }
  }
  uint32_t nr = call != nullptr ? vcore_call_nr(call) : rm::IocNr(req);
  uint32_t cmd = call != nullptr ? vcore_call_cmd(call) : 0;
  // The RM status word of the call's parameters, named by the core (0: none), read before
  // vcore_post frees the call: the overquota undo and the hooks read or rewrite it.
  const vcore_uptr_t status = vcore_call_status_addr(call);
  int rc = 0;
  int real_ret = 0;
  if (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN) {
    if (UnwrapXfer(call, &req, &arg)) {
      real_ret = real::Ioctl(fd, req, arg);
      rc = real_ret < 0 ? -errno : 0;
    } else {
      rc = -EINVAL;  // an inner size _IOC_SIZE cannot carry
    }
  } else if (call != nullptr) {
    const char* what = kind == DevKind::kUvm     ? "UVM ioctl"
                       : nr == NV_ESC_RM_ALLOC   ? "RM_ALLOC"
                       : nr == NV_ESC_RM_CONTROL ? "RM_CONTROL"
                                                 : "ioctl";
    ReportRefusal(st, what, nr, cmd, vcore_call_request_bytes(call), vcore_call_reason(call));
  }
  int ret = vcore_post(call, rc);
  if (pending_overquota.set) {
    PendingOverquota p = pending_overquota;
    pending_overquota.set = false;
    UndoOverquota(st, p, nr, status);
  }
  if (ret < 0) {
    errno = -ret;
    return -1;
  }
  if (kind == DevKind::kCtl && rc == 0 && (v == VCORE_FORWARD || v == VCORE_FORWARD_REWRITTEN)) {
    HooksAfterCall(fd, nr, req, arg, status);
  }
  return real_ret > 0 ? real_ret : 0;
}

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

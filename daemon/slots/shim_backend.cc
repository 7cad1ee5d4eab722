#include "vgpu/slots/shim_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <optional>
#include <set>
#include <utility>

#include "shim/ledger/ledger_reader.h"
#include "vgpu/slots/slot_config_file.h"
#include "vgpu/text.h"

namespace vgpu::slots {
namespace fs = std::filesystem;

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads a regular file without following a link at its last component.
Result<std::string> ReadFileNoFollow(const fs::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    return ErrnoError("open " + path.string(), errno);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoError("stat " + path.string(), errno);
  }
  if (!S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
    return DataLossError(path.string() + " is not a regular file of at most 1 MiB");
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return ErrnoError("read " + path.string(), errno);
    }
    if (n == 0) {
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Status WriteFileAtomically(const fs::path& path, std::string_view data, Durability durability) {
  const bool flush = durability == Durability::kPowerLoss;
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string name = path.filename().string();
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dfd.get() < 0) {
    return ErrnoError("open directory " + dir.string(), errno);
  }
  // A fresh name each time, created exclusively: whatever sits at a temp name (a crash's
  // leftover, a planted link) is never opened, let alone truncated.
  static std::atomic<uint64_t> serial{0};
  std::string tmp;
  int raw = -1;
  for (int attempt = 0; attempt < 16 && raw < 0; ++attempt) {
    tmp = "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
    raw = ::openat(dfd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0644);
    if (raw < 0 && errno != EEXIST) {
      return ErrnoError("create " + (dir / tmp).string(), errno);
    }
  }
  if (raw < 0) {
    return ErrnoError("create a temp file in " + dir.string(), EEXIST);
  }
  Fd fd(raw);
  auto fail = [&](Status s) {
    ::unlinkat(dfd.get(), tmp.c_str(), 0);
    return s;
  };
  if (Status s = WriteAll(fd.get(), data, (dir / tmp).string()); !s.ok()) {
    return fail(s);
  }
  if (flush && ::fsync(fd.get()) != 0) {
    return fail(ErrnoError("fsync " + (dir / tmp).string(), errno));
  }
  if (::close(fd.release()) != 0) {
    return fail(ErrnoError("close " + (dir / tmp).string(), errno));
  }
  // renameat replaces whatever `name` is, a link included, without following it.
  if (::renameat(dfd.get(), tmp.c_str(), dfd.get(), name.c_str()) != 0) {
    return fail(ErrnoError("rename " + tmp + " -> " + path.string(), errno));
  }
  // The rename is durable only once the directory entry is: fsync the directory too.
  if (flush && ::fsync(dfd.get()) != 0) {
    return ErrnoError("fsync directory " + dir.string(), errno);
  }
  return OkStatus();
}

Status WriteNewFile(const fs::path& path, std::string_view data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return ErrnoError("create " + path.string(), errno);
  }
  VGPU_RETURN_IF_ERROR(WriteAll(fd.get(), data, path.string()));
  if (::close(fd.release()) != 0) {
    return ErrnoError("close " + path.string(), errno);
  }
  return OkStatus();
}

ShimSlotBackend::ShimSlotBackend(ShimBackendOptions options) : options_(std::move(options)) {}

fs::path ShimSlotBackend::SlotDir(uint32_t id) const { return options_.root / std::to_string(id); }

fs::path ShimSlotBackend::LedgerRoot() const {
  return options_.ledger_root.empty() ? options_.root / ".ledgers" : options_.ledger_root;
}

fs::path ShimSlotBackend::LedgerDir(uint32_t id) const { return LedgerRoot() / std::to_string(id); }

Status ShimSlotBackend::WriteConfig(const SlotConfig& config) {
  return WriteFileAtomically(SlotDir(config.id) / kSlotConfigFileName, FormatSlotConfigFile(config),
                             Durability::kProcessDeath);
}

Status ShimSlotBackend::ScanIdsLocked() {
  std::error_code ec;
  fs::create_directories(options_.root, ec);
  if (!ec) {
    fs::create_directories(LedgerRoot(), ec);
  }
  if (ec) {
    return InternalError("create " + options_.root.string() + ": " + ec.message());
  }
  used_.clear();
  for (const auto& entry : fs::directory_iterator(options_.root, ec)) {
    uint32_t id = 0;
    std::string name = entry.path().filename().string();
    auto [p, e] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (e == std::errc() && p == name.data() + name.size()) {
      used_.insert(id);
    }
  }
  if (ec) {
    return InternalError("list " + options_.root.string() + ": " + ec.message());
  }
  scanned_ = true;
  return OkStatus();
}

Result<uint32_t> ShimSlotBackend::MakeSlotLocked(const SlotConfig& config,
                                                 std::optional<uint32_t> wanted) {
  if (!scanned_) {
    VGPU_RETURN_IF_ERROR(ScanIdsLocked());
  }
  // Lowest free id (ids stay small and stable, like the module's), or the one asked for. The
  // ids are known from the last scan and this backend's own changes, so a prepare does not read
  // the directory; a directory someone else made meanwhile is found by mkdir's EEXIST.
  uint32_t id = wanted.value_or(0);
  bool rescanned = false;
  for (;;) {
    if (used_.count(id) == 0) {
      if (::mkdir(SlotDir(id).c_str(), 0755) == 0) {
        break;
      }
      if (errno == ENOENT && !rescanned) {  // the root went (a wiped tmpfs): make it again
        rescanned = true;
        VGPU_RETURN_IF_ERROR(ScanIdsLocked());
        continue;
      }
      if (errno != EEXIST) {
        return ErrnoError("create slot dir " + SlotDir(id).string(), errno);
      }
      used_.insert(id);
    }
    if (wanted) {
      return AlreadyExistsError("slot dir " + SlotDir(id).string() + " is taken");
    }
    ++id;
  }
  used_.insert(id);
  auto undo = [&](Status s) {
    std::error_code ec;
    fs::remove_all(SlotDir(id), ec);
    fs::remove_all(LedgerDir(id), ec);
    used_.erase(id);
    return s;
  };
  // The ledger's own directory, fresh: a leftover of an earlier slot of this id is not reused.
  if (::mkdir(LedgerDir(id).c_str(), 0755) != 0) {
    int err = errno;
    if (err == EEXIST) {
      std::error_code ec;
      fs::remove_all(LedgerDir(id), ec);
      err = ec ? ec.value() : ::mkdir(LedgerDir(id).c_str(), 0755) == 0 ? 0 : errno;
    }
    if (err != 0) {
      return undo(ErrnoError("create ledger dir " + LedgerDir(id).string(), err));
    }
  }
  SlotConfig c = config;
  c.id = id;
  // The directory is new and nobody else's yet (it is mounted only once the slot is granted):
  // the config is created in place, no temp file and rename needed. Torn by a crash, it reads
  // as damaged, as a missing one did: restored from the checkpoint when the slot got there
  // (daemon/manager/reconcile.cc), else left alone.
  Status s = WriteNewFile(SlotDir(id) / kSlotConfigFileName, FormatSlotConfigFile(c));
  if (!s.ok()) {
    return undo(s);
  }
  return id;
}

Result<uint32_t> ShimSlotBackend::Create(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  return MakeSlotLocked(config, std::nullopt);
}

Result<uint32_t> ShimSlotBackend::Restore(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  auto same = MakeSlotLocked(config, config.id);
  if (same.ok() || same.status().code() != StatusCode::kAlreadyExists) {
    return same;
  }
  return MakeSlotLocked(config, std::nullopt);
}

Status ShimSlotBackend::Update(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  if (!fs::exists(SlotDir(config.id))) {
    return NotFoundError("shim slot " + std::to_string(config.id) + " does not exist");
  }
  return WriteConfig(config);
}

Status ShimSlotBackend::Destroy(uint32_t id) {
  std::lock_guard lock(mu_);
  std::error_code ec;
  used_.erase(id);
  if (fs::remove_all(SlotDir(id), ec) == 0 && !ec) {
    return NotFoundError("shim slot " + std::to_string(id) + " does not exist");
  }
  if (ec) {
    return InternalError("remove " + SlotDir(id).string() + ": " + ec.message());
  }
  // remove_all removes links, it does not follow them: the tenant's directory is safe to drop.
  fs::remove_all(LedgerDir(id), ec);
  if (ec) {
    return InternalError("remove " + LedgerDir(id).string() + ": " + ec.message());
  }
  return OkStatus();
}

Result<std::vector<SlotConfig>> ShimSlotBackend::List() {
  std::lock_guard lock(mu_);
  std::vector<SlotConfig> out;
  damaged_.clear();
  VGPU_RETURN_IF_ERROR(ScanIdsLocked());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.root, ec)) {
    uint32_t id = 0;
    const std::string dir_name = entry.path().filename().string();
    auto [p, e] = std::from_chars(dir_name.data(), dir_name.data() + dir_name.size(), id);
    if (e != std::errc() || p != dir_name.data() + dir_name.size() || entry.is_symlink() ||
        !entry.is_directory()) {
      continue;
    }
    auto text = ReadFileNoFollow(entry.path() / kSlotConfigFileName);
    Result<SlotConfig> parsed =
        text.ok() ? ParseSlotConfigFile(*text) : Result<SlotConfig>(text.status());
    if (!parsed.ok() || parsed->id != id) {
      // Missing, unreadable, edited or not a file: the slot exists (its directory does); its
      // config is for the manager to restore from the checkpoint, never a reason to stop.
      damaged_.push_back(id);
      continue;
    }
    out.push_back(std::move(*parsed));
  }
  if (ec) {
    return InternalError("list " + options_.root.string() + ": " + ec.message());
  }
  std::sort(out.begin(), out.end(),
            [](const SlotConfig& a, const SlotConfig& b) { return a.id < b.id; });
  std::sort(damaged_.begin(), damaged_.end());
  return out;
}

std::vector<uint32_t> ShimSlotBackend::DamagedSlots() {
  std::lock_guard lock(mu_);
  return damaged_;
}

ContainerEdits ShimSlotBackend::Edits(const SlotConfig& c) const {
  // The real nodes pass through; the shim inside the process enforces the slot's limits.
  ContainerEdits e;
  std::string dev = "/dev/nvidia" + std::to_string(c.gpu);
  e.devices.push_back({dev, dev, "rw"});
  e.devices.push_back({"/dev/nvidiactl", "/dev/nvidiactl", "rw"});
  e.devices.push_back({"/dev/nvidia-uvm", "/dev/nvidia-uvm", "rw"});
  // The config read-only: the tenant cannot change its own limits. The ledger's directory is
  // the one place it writes (the shim's crash-safe charge ledger, shared by its processes).
  e.mounts.push_back({SlotDir(c.id).string(), std::string(kSlotConfigContainerDir), true});
  e.mounts.push_back({LedgerDir(c.id).string(), std::string(kLedgerContainerDir), false});
  e.envs[std::string(kSlotConfigEnv)] =
      std::string(kSlotConfigContainerDir) + "/" + std::string(kSlotConfigFileName);
  if (!options_.shim_library_host.empty()) {
    e.mounts.push_back({options_.shim_library_host, options_.shim_library_container, true});
    e.envs["LD_PRELOAD"] = options_.shim_library_container;
  }
  return e;
}

fs::path ShimSlotBackend::LedgerPath(uint32_t id) const { return LedgerDir(id) / kLedgerFileName; }

Result<SlotUsage> ShimSlotBackend::Usage(uint32_t id) {
  // The ledger's published format and its lockless read (uapi/vgpu_ledger.h): no lock (a tenant
  // could hold it forever), a private copy retried until consistent.
  const fs::path path = LedgerPath(id);
  ledger::LedgerRead read = ledger::ReadLedgerFile(path.string());
  switch (read.status) {
    case ledger::LedgerReadStatus::kOk:
      break;
    case ledger::LedgerReadStatus::kAbsent:
      return SlotUsage{};  // no process of the slot has run under the shim yet
    case ledger::LedgerReadStatus::kIoError:
      return InternalError(read.error);
    case ledger::LedgerReadStatus::kNotLedger:
      return DataLossError(read.error);
    case ledger::LedgerReadStatus::kOtherVersion:
      return FailedPreconditionError(read.error);
    case ledger::LedgerReadStatus::kUnstable:
      return UnavailableError(read.error);
  }
  // Every member's charge counts. Liveness is not checked here: the entries hold pids of the
  // container's PID namespace, which mean other processes in the daemon's; the shim reaps its
  // dead members itself before any refusal or read of the total. The compute counters are the
  // ones the slot's controllers publish: busy and throttled time summed over members present
  // and past, the last achieved share written.
  const ledger::LedgerTotals t = ledger::SumLedger(*read.copy);
  SlotUsage u;
  u.memory_charged_bytes = t.charged;
  u.memory_peak_bytes = t.peak;
  u.gpu_busy_ns = t.gpu_busy_ns;
  u.throttled_ns = t.throttled_ns;
  u.achieved_share_1s_pm = t.achieved_share_1s_pm;
  u.achieved_share_10s_pm = t.achieved_share_10s_pm;
  return u;
}

}  // namespace vgpu::slots

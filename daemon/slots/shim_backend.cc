#include "vgpu/slots/shim_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <set>
#include <utility>

#include "shim/preload/ledger.h"
#include "vgpu/slots/slot_config_file.h"

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

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoError("write " + what, errno);
    }
    off += static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

Status WriteFileAtomically(const fs::path& path, std::string_view data) {
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
  if (::fsync(fd.get()) != 0) {
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
  if (::fsync(dfd.get()) != 0) {
    return ErrnoError("fsync directory " + dir.string(), errno);
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
  return WriteFileAtomically(SlotDir(config.id) / kSlotConfigFileName,
                             FormatSlotConfigFile(config));
}

Result<uint32_t> ShimSlotBackend::Create(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::create_directories(options_.root, ec);
  if (ec) {
    return InternalError("create " + options_.root.string() + ": " + ec.message());
  }
  // Lowest free id: ids stay small and stable, like the module's.
  std::set<uint32_t> used;
  for (const auto& entry : fs::directory_iterator(options_.root, ec)) {
    uint32_t id = 0;
    std::string name = entry.path().filename().string();
    auto [p, e] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (e == std::errc() && p == name.data() + name.size()) {
      used.insert(id);
    }
  }
  uint32_t id = 0;
  while (used.count(id) != 0) {
    ++id;
  }
  fs::create_directory(SlotDir(id), ec);
  if (ec) {
    return InternalError("create slot dir " + SlotDir(id).string() + ": " + ec.message());
  }
  // The ledger's own directory, fresh: a leftover of an earlier slot of this id is not reused.
  fs::remove_all(LedgerDir(id), ec);
  fs::create_directories(LedgerDir(id), ec);
  if (ec) {
    fs::remove_all(SlotDir(id), ec);
    return InternalError("create ledger dir " + LedgerDir(id).string() + ": " + ec.message());
  }
  SlotConfig c = config;
  c.id = id;
  Status s = WriteConfig(c);
  if (!s.ok()) {
    fs::remove_all(SlotDir(id), ec);
    fs::remove_all(LedgerDir(id), ec);
    return s;
  }
  return id;
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
  std::error_code ec;
  if (!fs::exists(options_.root, ec)) {
    return out;
  }
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
  using shim::LedgerFile;
  const fs::path path = LedgerPath(id);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      return SlotUsage{};  // no process of the slot has run under the shim yet
    }
    return ErrnoError("open ledger " + path.string(), errno);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoError("stat ledger " + path.string(), errno);
  }
  if (st.st_size == 0) {
    return SlotUsage{};  // a shim is creating it right now (SharedLedger::Open sizes it next)
  }
  // The header first: another version's file is named as such, whatever its size (version 3's
  // entries are larger than version 2's).
  struct {
    uint64_t magic;
    uint32_t version;
  } head{};
  if (static_cast<uint64_t>(st.st_size) >= sizeof head) {
    if (::pread(fd.get(), &head, sizeof head, 0) != static_cast<ssize_t>(sizeof head)) {
      return ErrnoError("read ledger " + path.string(), errno);
    }
    if (head.magic == 0) {
      return SlotUsage{};  // sized but not yet initialized by the shim that created it
    }
    if (head.magic != LedgerFile::kMagic) {
      return DataLossError("ledger " + path.string() + " is not a shim ledger");
    }
    if (head.version != LedgerFile::kVersion) {
      return FailedPreconditionError(
          "ledger " + path.string() + " has version " + std::to_string(head.version) +
          ", this manager reads version " + std::to_string(LedgerFile::kVersion) +
          " (the slot's processes run a shim of another release)");
    }
  }
  if (static_cast<uint64_t>(st.st_size) < sizeof(LedgerFile)) {
    return DataLossError("ledger " + path.string() + " is " + std::to_string(st.st_size) +
                         " bytes, a version " + std::to_string(LedgerFile::kVersion) +
                         " ledger is " + std::to_string(sizeof(LedgerFile)));
  }
  // pread into a private copy rather than mmap: a file truncated under us then reads short
  // instead of raising SIGBUS in the daemon. No lock (a tenant could hold it forever): charges
  // and published counters are single aligned stores (ledger.h), so a copy is at worst a moment
  // stale; the one compound update, a leaving member's counters moving to the accumulators, is
  // bracketed by the ledger's seq (odd while under way), so the copy is retried until seq is
  // even and unchanged across it. Otherwise a copy taken mid-move could count them twice or
  // not at all, and the exported counters would step back.
  auto file = std::make_unique<LedgerFile>();
  auto* out = reinterpret_cast<char*>(file.get());
  constexpr int kTries = 16;
  for (int attempt = 0;; ++attempt) {
    size_t done = 0;
    while (done < sizeof(LedgerFile)) {
      ssize_t n = ::pread(fd.get(), out + done, sizeof(LedgerFile) - done, done);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        return ErrnoError("read ledger " + path.string(), errno);
      }
      if (n == 0) {
        return DataLossError("ledger " + path.string() + " shrank while being read");
      }
      done += static_cast<size_t>(n);
    }
    uint64_t seq_after = 0;
    if (::pread(fd.get(), &seq_after, sizeof seq_after, offsetof(LedgerFile, seq)) !=
        static_cast<ssize_t>(sizeof seq_after)) {
      return ErrnoError("read ledger " + path.string(), errno);
    }
    if (seq_after == file->seq && (seq_after % 2 == 0 || attempt >= kTries / 2)) {
      // Even: a whole snapshot. Odd but unchanged for half the tries: a member died moving its
      // counters and none has locked the ledger since; what it moved is counted (ledger.h).
      break;
    }
    if (attempt + 1 >= kTries) {
      return UnavailableError("ledger " + path.string() + " kept changing while being read");
    }
  }
  if (file->magic != LedgerFile::kMagic || file->version != LedgerFile::kVersion ||
      file->max_entries != LedgerFile::kMaxEntries) {
    return DataLossError("ledger " + path.string() + " is not a version " +
                         std::to_string(LedgerFile::kVersion) + " shim ledger");
  }
  // Every member's charge counts. Liveness is not checked here: the entries hold pids of the
  // container's PID namespace, which mean other processes in the daemon's; the shim reaps its
  // dead members itself before any refusal or read of the total.
  SlotUsage u;
  for (const auto& e : file->entries) {
    if (e.in_use) {
      u.memory_charged_bytes += e.charged;
    }
  }
  u.memory_peak_bytes = std::max(file->peak, u.memory_charged_bytes);
  // The compute counters the slot's controllers publish (ledger.h, version 3): busy and
  // throttled time summed over members present and past, the last achieved share written.
  const shim::LedgerComputeTotals c = shim::SumLedgerCompute(*file);
  u.gpu_busy_ns = c.gpu_busy_ns;
  u.throttled_ns = c.throttled_ns;
  u.achieved_share_1s_pm = c.achieved_share_1s_pm;
  u.achieved_share_10s_pm = c.achieved_share_10s_pm;
  return u;
}

}  // namespace vgpu::slots

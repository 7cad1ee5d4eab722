#include "vgpu/slots/shim_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "shim/ledger/ledger_reader.h"
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

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ErrnoError("open " + path.string(), errno);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Status WriteFileAtomically(const fs::path& path, std::string_view data) {
  fs::path tmp = path;
  tmp += ".tmp";
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return ErrnoError("create " + tmp.string(), errno);
  }
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoError("write " + tmp.string(), errno);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) {
    return ErrnoError("fsync " + tmp.string(), errno);
  }
  if (::close(fd.release()) != 0) {
    return ErrnoError("close " + tmp.string(), errno);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError("rename " + tmp.string() + " -> " + path.string(), errno);
  }
  // The rename is durable only once the directory entry is: fsync the directory too.
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() < 0 || ::fsync(dfd.get()) != 0) {
    return ErrnoError("fsync directory " + dir.string(), errno);
  }
  return OkStatus();
}

ShimSlotBackend::ShimSlotBackend(ShimBackendOptions options) : options_(std::move(options)) {}

fs::path ShimSlotBackend::SlotDir(uint32_t id) const { return options_.root / std::to_string(id); }

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
  SlotConfig c = config;
  c.id = id;
  Status s = WriteConfig(c);
  if (!s.ok()) {
    fs::remove_all(SlotDir(id), ec);
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
  return OkStatus();
}

Result<std::vector<SlotConfig>> ShimSlotBackend::List() {
  std::lock_guard lock(mu_);
  std::vector<SlotConfig> out;
  std::error_code ec;
  if (!fs::exists(options_.root, ec)) {
    return out;
  }
  for (const auto& entry : fs::directory_iterator(options_.root, ec)) {
    fs::path file = entry.path() / kSlotConfigFileName;
    if (!entry.is_directory() || !fs::exists(file)) {
      continue;
    }
    auto text = ReadFile(file);
    if (!text.ok()) {
      return text.status();
    }
    auto parsed = ParseSlotConfigFile(*text);
    if (!parsed.ok()) {
      return parsed.status().Annotate(file.string());
    }
    out.push_back(std::move(*parsed));
  }
  if (ec) {
    return InternalError("list " + options_.root.string() + ": " + ec.message());
  }
  std::sort(out.begin(), out.end(),
            [](const SlotConfig& a, const SlotConfig& b) { return a.id < b.id; });
  return out;
}

ContainerEdits ShimSlotBackend::Edits(const SlotConfig& c) const {
  // The real nodes pass through; the shim inside the process enforces the slot's limits.
  ContainerEdits e;
  std::string dev = "/dev/nvidia" + std::to_string(c.gpu);
  e.devices.push_back({dev, dev, "rw"});
  e.devices.push_back({"/dev/nvidiactl", "/dev/nvidiactl", "rw"});
  e.devices.push_back({"/dev/nvidia-uvm", "/dev/nvidia-uvm", "rw"});
  // Read-write: the shim keeps its crash-safe charge ledger in the slot directory.
  e.mounts.push_back({SlotDir(c.id).string(), std::string(kSlotConfigContainerDir), false});
  e.envs[std::string(kSlotConfigEnv)] =
      std::string(kSlotConfigContainerDir) + "/" + std::string(kSlotConfigFileName);
  if (!options_.shim_library_host.empty()) {
    e.mounts.push_back({options_.shim_library_host, options_.shim_library_container, true});
    e.envs["LD_PRELOAD"] = options_.shim_library_container;
  }
  return e;
}

fs::path ShimSlotBackend::LedgerPath(uint32_t id) const {
  return SlotDir(id) / VGPU_LEDGER_FILE_NAME;
}

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

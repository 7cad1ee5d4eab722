#include "vgpu/diagnose/container_report.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "shim/ledger/ledger_reader.h"
#include "shim/preload/config.h"

namespace vgpu::diagnose {
namespace fs = std::filesystem;

namespace {

constexpr unsigned kNvidiaMajor = 195;  // NVIDIA's registered char major (devices.txt)

std::optional<std::string> ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// Char majors /proc/devices names "vgpu..." (the module's proxy and control nodes).
std::set<unsigned> VgpuMajors(const fs::path& root) {
  std::set<unsigned> out;
  std::ifstream in(root / "proc/devices");
  std::string line;
  bool chars = false;
  while (std::getline(in, line)) {
    if (line.rfind("Character", 0) == 0) chars = true;
    if (line.rfind("Block", 0) == 0) chars = false;
    std::istringstream ls(line);
    unsigned major = 0;
    std::string name;
    if (chars && ls >> major >> name && name.rfind("vgpu", 0) == 0) out.insert(major);
  }
  return out;
}

std::string Bytes(uint64_t b) {
  if (b == 0) return "none (unlimited)";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << v << " " << units[u] << " (" << b << " bytes)";
  return s.str();
}

// The module's slot whose device is `node` (sysfs `dev` is "major:minor").
std::optional<fs::path> ModuleSlotOf(const fs::path& root, const DeviceNode& node) {
  const std::string want = std::to_string(node.major) + ":" + std::to_string(node.minor);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "sys/class/vgpu", ec)) {
    if (ReadLine(e.path() / "dev") == want) return e.path();
  }
  return std::nullopt;
}

void ModuleSettings(const fs::path& root, const DeviceNode& node, ReportSection& s) {
  auto dir = ModuleSlotOf(root, node);
  if (!dir) {
    s.Add("slot", "not visible (no /sys/class/vgpu entry for this node): ask the node's operator");
    return;
  }
  s.Add("slot", ReadLine(*dir / "slot_id").value_or("?") + " (" +
                    ReadLine(*dir / "name").value_or("") + ")");
  auto quota = ReadLine(*dir / "mem_quota");
  s.Add("memory quota", quota ? Bytes(std::strtoull(quota->c_str(), nullptr, 10)) : "?");
  auto share = ReadLine(*dir / "compute_share").value_or("?");
  s.Add("compute share", share + " %");
  s.Add("compute mode", ReadLine(*dir / "compute_mode").value_or("?"));
  s.Add("compute controller", share == "100" || share == "0"
                                  ? "not running: share 100 (nothing to control)"
                                  : "runs in vgpu.ko (kernel host)");
}

// The shim's settings as the shim itself parses them (LoadSlotConfig: file, then environment).
void ShimSettings(GetEnvFn getenv_fn, ReportSection& s) {
  shim::SlotConfig cfg;
  const std::string err = shim::LoadSlotConfig(cfg, getenv_fn);
  if (!err.empty()) {
    s.Add("slot config",
          "refused by the shim: " + err +
              " (the shim then refuses every NVIDIA open in this container)",
          true);
    return;
  }
  s.Add("slot config", cfg.config_path.empty() ? "(none)" : cfg.config_path);
  s.Add("slot", std::to_string(cfg.slot_id));
  s.Add("memory quota", Bytes(cfg.mem_quota));
  s.Add("managed memory", shim::SettingValueName("managed_policy", cfg.managed_policy));
  s.Add("unknown ioctls", shim::SettingValueName("unknown_policy", cfg.unknown_policy));
  s.Add("ledger", cfg.ledger_path.empty() ? "(none: charges are per process)" : cfg.ledger_path,
        cfg.ledger_path.empty());
  if (!cfg.ledger_path.empty()) {
    // What the slot's processes are charged now, as the manager reads it (uapi/vgpu_ledger.h).
    const ledger::LedgerRead read = ledger::ReadLedgerFile(cfg.ledger_path);
    if (read.status == ledger::LedgerReadStatus::kOk) {
      const ledger::LedgerTotals t = ledger::SumLedger(*read.copy);
      s.Add("memory charged", std::to_string(t.charged) + " bytes by " + std::to_string(t.members) +
                                  " process(es), peak " + std::to_string(t.peak));
    } else {
      s.Add("memory charged", read.status == ledger::LedgerReadStatus::kAbsent
                                  ? "0 (no process of the slot has run yet)"
                                  : read.error);
    }
  }
  s.Add("compute share", std::to_string(cfg.compute_share) + " %");
  s.Add("compute mode", shim::SettingValueName("compute_mode", cfg.compute_mode));
  // The shim's compute thread starts for a share below 100 (shim/compute/compute_shim.cc).
  s.Add("compute controller", cfg.compute_share < 100
                                  ? "runs in each process (started with its first CUDA context)"
                                  : "not running: share 100 (nothing to control)");
}

}  // namespace

std::optional<DeviceNode> StatDevice(const fs::path& p) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return DeviceNode{S_ISCHR(st.st_mode), major(st.st_rdev), minor(st.st_rdev)};
}

Report ContainerReport(const ContainerInputs& in) {
  GetEnvFn env = in.getenv_fn;
  if (env == nullptr) {
    env = [](const char* k) -> const char* { return ::getenv(k); };
  }
  Report r;
  ReportSection& s = r.Section("enforcement");
  const std::set<unsigned> vgpu_majors = VgpuMajors(in.root);
  auto ctl = in.stat_fn(in.root / "dev/nvidiactl");
  const bool proxied = ctl && ctl->is_char && vgpu_majors.count(ctl->major) != 0;
  const char* preload = env("LD_PRELOAD");
  const char* config = env("VGPU_CONFIG");
  const bool shim =
      preload != nullptr && std::string(preload).find("libvgpu-shim") != std::string::npos;
  if (!ctl) {
    s.Add("host", "none: no /dev/nvidiactl in this container (no GPU granted)");
    return r;
  }
  if (proxied) {
    s.Add("host", "module (vgpu.ko): /dev/nvidiactl is its proxy node " +
                      std::to_string(ctl->major) + ":" + std::to_string(ctl->minor));
    s.Add("hard", "true (every process, static binaries included)");
    ModuleSettings(in.root, *ctl, s);
    return r;
  }
  if (shim) {
    s.Add("host", "shim (libvgpu-shim.so via LD_PRELOAD)");
    s.Add("hard", "false (a static binary, a cleared LD_PRELOAD or direct syscalls escape it)");
    if (config == nullptr || *config == '\0') {
      s.Add("slot config", "VGPU_CONFIG is not set: the shim runs without the slot's limits", true);
    }
    ShimSettings(env, s);
    return r;
  }
  s.Add("host",
        "none: /dev/nvidiactl is the real driver's node (" + std::to_string(ctl->major) + ":" +
            std::to_string(ctl->minor) + ") and LD_PRELOAD has no libvgpu-shim.so",
        true);
  if (ctl->major == kNvidiaMajor) {
    s.Add("limits", "none: this container's GPU use is not limited by vgpu", true);
  }
  return r;
}

}  // namespace vgpu::diagnose

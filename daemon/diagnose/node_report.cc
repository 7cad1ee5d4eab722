#include "vgpu/diagnose/node_report.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace vgpu::diagnose {
namespace fs = std::filesystem;

namespace {

// First line of a sysfs file, or nullopt if it cannot be read.
std::optional<std::string> ReadLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return std::nullopt;
  }
  return line;
}

std::string Or(const std::optional<std::string>& v, const std::string& fallback) {
  return v ? *v : fallback;
}

std::vector<fs::path> Sorted(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Module(const NodeInputs& in, Report& r) {
  ReportSection& s = r.Section("module");
  const fs::path mod = in.root / "sys/module/vgpu";
  if (!fs::exists(mod)) {
    s.Add("vgpu.ko", "not loaded (module mode is off on this node; see the installer's log)", true);
    return;
  }
  s.Add("vgpu.ko", "loaded");
  s.Add("users", Or(ReadLine(mod / "refcnt"), "?"));
  for (const auto& p : Sorted(mod / "parameters")) {
    s.Add("param " + p.filename().string(), Or(ReadLine(p), "(unreadable)"));
  }
}

void Driver(const NodeInputs& in, Report& r, bool module_loaded) {
  ReportSection& s = r.Section("driver");
  const fs::path sysmod = in.root / "sys/module";
  auto nv = ReadLine(sysmod / "nvidia/version");
  s.Add("nvidia.ko", nv ? "loaded, version " + *nv : "not loaded", !nv);
  const bool uvm = fs::exists(sysmod / "nvidia_uvm");
  auto hmm = ReadLine(sysmod / "nvidia_uvm/parameters/uvm_disable_hmm");
  s.Add("nvidia-uvm", uvm ? "loaded" : "not loaded");
  if (uvm) {
    const bool off = hmm && (*hmm == "Y" || *hmm == "1");
    s.Add("uvm_disable_hmm",
          Or(hmm, "?") + (off ? "" : " (HMM on: malloc memory can reach video memory uncharged)"),
          !off);
  }
  std::vector<std::string> nvidia, vgpu;
  for (const auto& p : Sorted(in.root / "dev")) {
    const std::string n = p.filename().string();
    if (n.rfind("nvidia", 0) == 0) {
      nvidia.push_back(n);
    } else if (n.rfind("vgpu", 0) == 0) {
      vgpu.push_back(n);
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : " ") + x;
    return out.empty() ? std::string("(none)") : out;
  };
  s.Add("/dev nvidia", join(nvidia), nvidia.empty());
  s.Add("/dev vgpu", join(vgpu), module_loaded && vgpu.empty());
}

// Refusal counters of a module slot worth showing (sysfs names, kmod/sysfs.c).
constexpr const char* kRefusalCounters[] = {"denied",     "denied_quota",     "malformed",
                                            "fd_refused", "uvm_mmap_refused", "overquota_events"};

std::optional<std::string> SlotAttr(const fs::path& dir, const std::string& name) {
  if (auto v = ReadLine(dir / name)) return v;
  return ReadLine(dir / "stats" / name);
}

void Slots(const NodeInputs& in, Report& r) {
  ReportSection& s = r.Section("slots");
  ReportSection& refusals = r.Section("refusals");
  int module_slots = 0;
  for (const auto& dir : Sorted(in.root / "sys/class/vgpu")) {
    auto id = ReadLine(dir / "slot_id");
    if (!id) continue;  // the control node, not a slot
    ++module_slots;
    std::string line = "name=" + Or(SlotAttr(dir, "name"), "?") +
                       " gpu=" + Or(SlotAttr(dir, "gpu"), "?") +
                       " mem_quota=" + Or(SlotAttr(dir, "mem_quota"), "?") +
                       " mem_charged=" + Or(SlotAttr(dir, "mem_charged"), "?") +
                       " compute_share=" + Or(SlotAttr(dir, "compute_share"), "?") +
                       " compute_mode=" + Or(SlotAttr(dir, "compute_mode"), "?") +
                       " pids=" + Or(SlotAttr(dir, "pids"), "");
    s.Add("module slot " + *id, line);
    for (const char* c : kRefusalCounters) {
      auto v = SlotAttr(dir, c);
      if (v && *v != "0") {
        refusals.Add("slot " + *id + " " + c, *v);
      }
    }
  }
  if (!in.manager_list) {
    s.Add("manager", "no answer: " + in.manager_error, true);
  } else {
    const auto& slots = (*in.manager_list)["slots"];
    int n = 0;
    for (const auto& m : slots) {
      ++n;
      s.Add("manager slot " + std::to_string(m.value("id", 0u)),
            "gpu=" + std::to_string(m.value("gpu", 0u)) +
                " memory_bytes=" + std::to_string(m.value("memory_bytes", uint64_t{0})) +
                " core_percent=" + std::to_string(m.value("core_percent", 0u)) + " pod=" +
                m.value("pod_namespace", std::string()) + "/" + m.value("pod_name", std::string()));
    }
    s.Add("manager", std::to_string(n) + " slot(s)");
    if (module_slots > 0 && module_slots != n) {
      s.Add("mismatch",
            std::to_string(module_slots) + " in vgpu.ko, " + std::to_string(n) + " in the manager",
            true);
    }
  }
  if (module_slots == 0) {
    s.Add("module", "no slots in vgpu.ko");
  }
  size_t shown = 0;
  std::vector<std::string> lines;
  for (const auto& l : in.kernel_log) {
    if (l.find("vgpu") != std::string::npos) lines.push_back(l);
  }
  const size_t first = lines.size() > in.max_log_lines ? lines.size() - in.max_log_lines : 0;
  for (size_t i = first; i < lines.size(); ++i) {
    refusals.Add("dmesg " + std::to_string(++shown), lines[i]);
  }
  if (!in.kernel_log_error.empty()) {
    refusals.Add("dmesg", "unreadable: " + in.kernel_log_error);
  } else if (lines.empty()) {
    refusals.Add("dmesg", "no vgpu lines");
  }
}

}  // namespace

const char* ReleaseVersion() { return VGPU_RELEASE_VERSION; }

Report NodeReport(const NodeInputs& in) {
  Report r;
  ReportSection& v = r.Section("versions");
  v.Add("vgpuctl", ReleaseVersion());
  const fs::path sysmod = in.root / "sys/module";
  v.Add("vgpu.ko", Or(ReadLine(sysmod / "vgpu/version"), "-") + " srcversion " +
                       Or(ReadLine(sysmod / "vgpu/srcversion"), "-"));
  v.Add("nvidia.ko", Or(ReadLine(sysmod / "nvidia/version"), "-"));
  v.Add("vgpu-manager",
        in.manager_list ? in.manager_list->value("version", std::string("?")) : std::string("-"));
  const bool loaded = fs::exists(sysmod / "vgpu");
  Module(in, r);
  Driver(in, r, loaded);
  Slots(in, r);
  return r;
}

}  // namespace vgpu::diagnose

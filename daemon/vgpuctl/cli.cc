#include "cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <sstream>

namespace vgpu::ctl {

Result<ParsedArgs> ParseArgs(std::string_view command, std::span<const std::string> args,
                             std::span<const FlagSpec> known) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      out.positional.push_back(a);
      continue;
    }
    std::string name = a;
    std::string value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    auto spec =
        std::find_if(known.begin(), known.end(), [&](const FlagSpec& f) { return f.name == name; });
    if (spec == known.end()) {
      // std::string first, not "'" + ...: GCC 12's false -Wrestrict at -O3 (GCC bug 105329).
      return InvalidArgumentError(std::string("'").append(command) + "' has no flag " + name);
    }
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= args.size()) return InvalidArgumentError(name + ": needs a value");
      value = args[++i];
    } else if (!spec->takes_value && inline_value) {
      return InvalidArgumentError(name + ": takes no value");
    }
    out.flags[name] = value;
  }
  return out;
}

Result<uint64_t> ParseSize(std::string_view flag, std::string_view text) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p == text.data()) {
    return InvalidArgumentError(std::string(flag) + ": '" + std::string(text) +
                                "' is not a size (e.g. 4Gi, 512Mi, 1G, 1048576)");
  }
  std::string_view unit(p, text.data() + text.size() - p);
  static const std::pair<std::string_view, uint64_t> kUnits[] = {{"", 1},
                                                                 {"B", 1},
                                                                 {"Ki", 1ull << 10},
                                                                 {"Mi", 1ull << 20},
                                                                 {"Gi", 1ull << 30},
                                                                 {"Ti", 1ull << 40},
                                                                 {"K", 1000ull},
                                                                 {"M", 1000000ull},
                                                                 {"G", 1000000000ull},
                                                                 {"T", 1000000000000ull}};
  for (const auto& [u, mul] : kUnits) {
    if (unit == u) {
      if (n && mul > UINT64_MAX / n)
        return InvalidArgumentError(std::string(flag) + ": size overflows");
      return n * mul;
    }
  }
  return InvalidArgumentError(std::string(flag) + ": unknown unit '" + std::string(unit) +
                              "' (use Ki, Mi, Gi, Ti, K, M, G, T)");
}

Result<uint32_t> ParseU32(std::string_view flag, std::string_view text, uint32_t min,
                          uint32_t max) {
  uint32_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || p != text.data() + text.size() || n < min || n > max) {
    return InvalidArgumentError(std::string(flag) + ": '" + std::string(text) +
                                "' is not a number in " + std::to_string(min) + ".." +
                                std::to_string(max));
  }
  return n;
}

Result<kmod::SlotConfig> ParseSlotConfig(const ParsedArgs& args) {
  kmod::SlotConfig cfg;
  if (auto it = args.flags.find("--name"); it != args.flags.end()) {
    if (it->second.size() >= VGPU_SLOT_NAME_LEN) {
      return InvalidArgumentError("--name: longer than " + std::to_string(VGPU_SLOT_NAME_LEN - 1));
    }
    cfg.name = it->second;
  }
  if (auto it = args.flags.find("--memory"); it != args.flags.end()) {
    auto n = ParseSize("--memory", it->second);
    if (!n.ok()) return n.status();
    cfg.mem_quota = *n;
  }
  if (auto it = args.flags.find("--share"); it != args.flags.end()) {
    auto n = ParseU32("--share", it->second, 1, 100);
    if (!n.ok()) return n.status();
    cfg.compute_share = *n;
  }
  if (auto it = args.flags.find("--mode"); it != args.flags.end()) {
    auto v = ParseComputeMode(it->second);
    if (!v.ok()) return v.status().Annotate("--mode");
    cfg.compute_mode = *v;
  }
  if (auto it = args.flags.find("--managed"); it != args.flags.end()) {
    auto v = ParseManagedPolicy(it->second);
    if (!v.ok()) return v.status().Annotate("--managed");
    cfg.managed_policy = *v;
  }
  if (auto it = args.flags.find("--unknown"); it != args.flags.end()) {
    auto v = ParseUnknownPolicy(it->second);
    if (!v.ok()) return v.status().Annotate("--unknown");
    cfg.unknown_policy = *v;
  }
  return cfg;
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return buf;
}

nlohmann::json SlotToJson(const kmod::SlotInfo& s) {
  nlohmann::json stats = nlohmann::json::object();
  for (int i = 1; i < __VGPU_STAT_MAX; ++i) {
    if (!kmod::StatName(i).empty()) stats[std::string(kmod::StatName(i))] = s.stats[i];
  }
  nlohmann::json nodes = nlohmann::json::object();
  if (!s.node_ctl.empty()) nodes["ctl"] = "/dev/" + s.node_ctl;
  if (!s.node_dev.empty()) nodes["dev"] = "/dev/" + s.node_dev;
  if (!s.node_uvm.empty()) nodes["uvm"] = "/dev/" + s.node_uvm;
  nlohmann::json j = {{"id", s.id},
                      {"gpu", s.gpu},
                      {"name", s.name},
                      {"uvm", (s.flags & VGPU_SLOT_F_UVM) != 0},
                      {"state", kmod::SlotStateName(s.state)},
                      {"open_files", s.open_files},
                      {"pids", s.pids},
                      {"nodes", nodes},
                      {"stats", stats}};
  SettingsToJson(kmod::SettingsOf(s), j);  // the settings under their schema names
  return j;
}

nlohmann::json EventToJson(const kmod::Event& e) {
  nlohmann::json j = {{"event", kmod::EventName(e.type)}, {"slot", e.slot}};
  if (e.pid) j["pid"] = e.pid;
  if (!e.comm.empty()) j["comm"] = e.comm;
  if (e.size) j["size"] = e.size;
  if (e.type == VGPU_EVENT_QUOTA_DENIED || e.type == VGPU_EVENT_REFUSED) {
    j["charged"] = e.charged;
    j["quota"] = e.quota;
  }
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

namespace {
std::string QuotaText(uint64_t q) { return q ? FormatBytes(q) : "unlimited"; }

// Achieved share over the last 1 s and 10 s ("31.2%/30.0%"), from the permille counters;
// "-" for a slot the controller does not run (cap 100, or nothing measured yet).
std::string AchievedText(const kmod::SlotInfo& s) {
  if (s.stats[VGPU_STAT_GPU_BUSY_NS] == 0 && s.stats[VGPU_STAT_SHARE_10S_PM] == 0) return "-";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.1f%%/%.1f%%", s.stats[VGPU_STAT_SHARE_1S_PM] / 10.0,
                s.stats[VGPU_STAT_SHARE_10S_PM] / 10.0);
  return buf;
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string JoinPids(const std::vector<uint32_t>& pids) {
  std::string out;
  for (uint32_t p : pids) {
    if (!out.empty()) out += ',';  // not ("," + to_string): GCC 12's false -Wrestrict at -O3
    out += std::to_string(p);
  }
  return out.empty() ? "-" : out;
}
}  // namespace

std::string SlotTable(const std::vector<kmod::SlotInfo>& slots) {
  std::vector<std::vector<std::string>> rows = {{"ID", "GPU", "NAME", "QUOTA", "CHARGED", "PEAK",
                                                 "DENIED", "SHARE", "MODE", "ACHIEVED(1s/10s)",
                                                 "MANAGED", "STATE", "FILES", "PIDS", "CTL"}};
  for (const auto& s : slots) {
    rows.push_back(
        {std::to_string(s.id), std::to_string(s.gpu), s.name.empty() ? "-" : s.name,
         QuotaText(s.mem_quota), FormatBytes(s.stats[VGPU_STAT_MEM_CHARGED]),
         FormatBytes(s.stats[VGPU_STAT_MEM_PEAK]), std::to_string(s.stats[VGPU_STAT_MEM_DENIALS]),
         std::to_string(s.compute_share) + "%", std::string(kmod::ComputeModeName(s.compute_mode)),
         AchievedText(s), std::string(kmod::ManagedPolicyName(s.managed_policy)),
         std::string(kmod::SlotStateName(s.state)), std::to_string(s.open_files), JoinPids(s.pids),
         s.node_ctl.empty() ? "-" : "/dev/" + s.node_ctl});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::ostringstream out;
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) {
      out << r[c];
      if (c + 1 < r.size()) out << std::string(width[c] - r[c].size() + 2, ' ');
    }
    out << '\n';
  }
  return out.str();
}

std::string SlotDetail(const kmod::SlotInfo& s) {
  std::ostringstream out;
  out << "slot " << s.id << " (" << (s.name.empty() ? "unnamed" : s.name) << ")\n"
      << "  gpu             " << s.gpu << '\n'
      << "  state           " << kmod::SlotStateName(s.state) << '\n'
      << "  memory quota    " << QuotaText(s.mem_quota) << '\n'
      << "  compute share   " << s.compute_share << "% " << kmod::ComputeModeName(s.compute_mode)
      << '\n'
      << "  compute         busy " << Seconds(s.stats[VGPU_STAT_GPU_BUSY_NS]) << ", throttled "
      << Seconds(s.stats[VGPU_STAT_THROTTLED_NS]) << ", achieved (1s/10s) " << AchievedText(s)
      << '\n'
      << "  managed memory  " << kmod::ManagedPolicyName(s.managed_policy) << '\n'
      << "  unknown ioctls  " << kmod::UnknownPolicyName(s.unknown_policy) << '\n'
      << "  nodes           " << (s.node_ctl.empty() ? "" : "/dev/" + s.node_ctl) << ' '
      << (s.node_dev.empty() ? "" : "/dev/" + s.node_dev) << ' '
      << (s.node_uvm.empty() ? "" : "/dev/" + s.node_uvm) << '\n'
      << "  open files      " << s.open_files << '\n'
      << "  pids            " << JoinPids(s.pids) << '\n'
      << "  counters\n";
  for (int i = 1; i < __VGPU_STAT_MAX; ++i) {
    std::string_view n = kmod::StatName(i);
    if (n.empty()) continue;
    out << "    " << n << std::string(18 - std::min<size_t>(n.size(), 17), ' ') << s.stats[i];
    if (i == VGPU_STAT_MEM_CHARGED || i == VGPU_STAT_MEM_PEAK)
      out << " (" << FormatBytes(s.stats[i]) << ")";
    out << '\n';
  }
  return out.str();
}

std::string EventLine(const kmod::Event& e) {
  std::ostringstream out;
  out << "event=" << kmod::EventName(e.type) << " slot=" << e.slot;
  if (e.pid) out << " pid=" << e.pid;
  if (!e.comm.empty()) out << " comm=" << e.comm;
  if (e.size) out << " size=" << e.size;
  if (e.type == VGPU_EVENT_QUOTA_DENIED || e.type == VGPU_EVENT_REFUSED) {
    out << " charged=" << e.charged << " quota=" << e.quota;
  }
  if (!e.detail.empty()) out << " detail=\"" << e.detail << '"';
  return out.str();
}

}  // namespace vgpu::ctl

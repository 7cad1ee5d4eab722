#include "vgpu/config/config.h"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

namespace vgpu::config {
namespace {

struct Flag {
  std::string_view name;
  std::string_view usage;
  bool is_bool;
  std::function<Status(Config&, std::string_view)> set;
  std::function<std::string(const Config&)> get;
};

Status ParseBool(std::string_view v, bool& out) {
  if (v == "true" || v == "1" || v == "yes") {
    out = true;
  } else if (v == "false" || v == "0" || v == "no") {
    out = false;
  } else {
    return InvalidArgumentError("expected true or false, got '" + std::string(v) + "'");
  }
  return OkStatus();
}

template <typename T>
Status ParseInt(std::string_view v, T& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    return InvalidArgumentError("expected an integer, got '" + std::string(v) + "'");
  }
  return OkStatus();
}

// Accepts plain bytes or a Ki/Mi/Gi suffix.
Status ParseBytes(std::string_view v, uint64_t& out) {
  uint64_t mult = 1;
  for (auto [suffix, m] : {std::pair{"Ki", 1ull << 10}, {"Mi", 1ull << 20}, {"Gi", 1ull << 30}}) {
    if (v.ends_with(suffix)) {
      mult = m;
      v.remove_suffix(2);
      break;
    }
  }
  VGPU_RETURN_IF_ERROR(ParseInt(v, out));
  out *= mult;
  return OkStatus();
}

#define STR_FLAG(flag, field, text)             \
  Flag {                                        \
    flag, text, false,                          \
        [](Config& c, std::string_view v) {     \
          c.field = std::string(v);             \
          return OkStatus();                    \
        },                                      \
        [](const Config& c) { return c.field; } \
  }
#define BOOL_FLAG(flag, field, text)                                                       \
  Flag {                                                                                   \
    flag, text, true, [](Config& c, std::string_view v) { return ParseBool(v, c.field); }, \
        [](const Config& c) { return std::string(c.field ? "true" : "false"); }            \
  }
#define INT_FLAG(flag, field, text)                                                        \
  Flag {                                                                                   \
    flag, text, false, [](Config& c, std::string_view v) { return ParseInt(v, c.field); }, \
        [](const Config& c) { return std::to_string(c.field); }                            \
  }

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      STR_FLAG("config", config_file, "JSON file with any of these settings (flags win)"),
      STR_FLAG("driver", driver, "GPU driver family; only \"nvidia\""),
      STR_FLAG("extra-config", extra_config,
               "JSON {\"devices\": [...], \"envs\": {...}} added to every container"),
      STR_FLAG("volume-config", volume_config, "driver-library volume description file"),
      STR_FLAG("driver-root", driver_root,
               "host root as seen by the manager (where driver files are found), e.g. /host"),
      INT_FLAG("query-port", query_port, "metrics/query HTTP port, 0 disables"),
      STR_FLAG("kubeconfig", kubeconfig, "kubeconfig file (out-of-cluster API access)"),
      BOOL_FLAG("standalone", standalone, "run without a kubelet; slots come from the control API"),
      INT_FLAG("sample-period", sample_period_s, "metrics/health sampling period, seconds"),
      STR_FLAG("node-labels", node_labels, "labels to publish for this node, key=value,..."),
      STR_FLAG("hostname-override", hostname_override, "node name instead of the hostname"),
      STR_FLAG("virtual-manager-path", virtual_manager_path,
               "directory of the control socket and vdriver tree"),
      STR_FLAG("slot-path", slot_path,
               "tmpfs directory of shim slot dirs and ledgers (rebuilt from the checkpoint)"),
      STR_FLAG("device-plugin-path", device_plugin_path, "kubelet device-plugin directory"),
      STR_FLAG("checkpoint-path", checkpoint_path, "directory of the manager's checkpoint"),
      BOOL_FLAG("share-mode", share_mode,
                "advertise fractional vcuda-core/vcuda-memory (false: whole GPUs only)"),
      INT_FLAG("allocation-check-period", allocation_check_period_s,
               "seconds after which a slot whose pod is gone is reclaimed"),
      BOOL_FLAG("incluster-mode", incluster_mode, "use the in-cluster service account"),
      Flag{"enforcement", "kmod | shim | auto (kmod when /sys/module/vgpu exists)", false,
           [](Config& c, std::string_view v) {
             if (v == "kmod") {
               c.enforcement = Enforcement::kKmod;
             } else if (v == "shim") {
               c.enforcement = Enforcement::kShim;
             } else if (v == "auto") {
               c.enforcement = Enforcement::kAuto;
             } else {
               return InvalidArgumentError("expected kmod, shim or auto, got '" + std::string(v) +
                                           "'");
             }
             return OkStatus();
           },
           [](const Config& c) { return std::string(EnforcementName(c.enforcement)); }},
      STR_FLAG("kubelet-socket", kubelet_socket, "kubelet registration socket"),
      STR_FLAG("pod-resources-socket", pod_resources_socket, "kubelet pod-resources socket"),
      STR_FLAG("control-socket", control_socket, "local JSON control API socket"),
      Flag{"memory-unit", "bytes per vcuda-memory ID (suffix Ki/Mi/Gi allowed)", false,
           [](Config& c, std::string_view v) { return ParseBytes(v, c.memory_unit_bytes); },
           [](const Config& c) { return std::to_string(c.memory_unit_bytes); }},
      STR_FLAG("core-resource", core_resource, "compute resource name"),
      STR_FLAG("memory-resource", memory_resource, "memory resource name"),
      STR_FLAG("gpu-resource", gpu_resource, "whole-GPU resource name"),
      STR_FLAG("gpu-fixture", gpu_fixture, "JSON GPU description instead of discovery"),
      STR_FLAG("placement", placement, "firstfit | binpack | spread | topology | memory"),
      STR_FLAG("cdi-spec-dir", cdi_spec_dir, "directory of per-slot CDI specs (with --cdi-kind)"),
      STR_FLAG("cdi-kind", cdi_kind, "CDI kind for device names (e.g. vgpu.io/slot); empty: off"),
      STR_FLAG("shim-library", shim_library, "host path of libvgpu-shim.so (shim enforcement)"),
      STR_FLAG("driver-library-dir", driver_library_dir,
               "host dir mounted at /usr/local/nvidia (default <vm-path>/vdriver/nvidia)"),
      STR_FLAG("managed-policy", managed_policy, "refuse | allow-uncounted"),
      STR_FLAG("unknown-policy", unknown_policy, "refuse | allow-log"),
      STR_FLAG("sys-module-dir", sys_module_dir, "where --enforcement=auto looks for vgpu"),
      BOOL_FLAG("allow-shim-fallback", allow_shim_fallback,
                "--enforcement=auto without vgpu.ko runs the (soft) shim instead of failing"),
      STR_FLAG("module-state-file", module_state_file,
               "the module installer's outcome file, published as a label and metric"),
      STR_FLAG("kubelet-api", kubelet_api, "device-plugin | dra (a DRA kubelet plugin)"),
      STR_FLAG("dra-driver-name", dra_driver_name, "DRA driver name (with --kubelet-api=dra)"),
      STR_FLAG("kubelet-dir", kubelet_dir,
               "kubelet root holding plugins_registry/ and plugins/ (with --kubelet-api=dra)"),
  };
  return flags;
}

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : Flags()) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

Status SetFlag(Config& c, std::string_view name, std::string_view value) {
  const Flag* f = FindFlag(name);
  if (f == nullptr) {
    return InvalidArgumentError("--" + std::string(name) + ": unknown flag (see --help)");
  }
  return f->set(c, value).Annotate("--" + std::string(name));
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return NotFoundError("cannot open " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status CheckFileIfSet(std::string_view flag, const std::string& path) {
  if (!path.empty() && !std::filesystem::is_regular_file(path)) {
    return InvalidArgumentError("--" + std::string(flag) + ": " + path + " is not a file");
  }
  return OkStatus();
}

Status CheckAbsolute(std::string_view flag, const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return InvalidArgumentError("--" + std::string(flag) + ": must be an absolute path, got '" +
                                path + "'");
  }
  return OkStatus();
}

}  // namespace

std::string_view EnforcementName(Enforcement e) {
  switch (e) {
    case Enforcement::kKmod:
      return "kmod";
    case Enforcement::kShim:
      return "shim";
    case Enforcement::kAuto:
      return "auto";
  }
  return "auto";
}

std::string Config::KubeletSocket() const {
  return kubelet_socket.empty() ? device_plugin_path + "/kubelet.sock" : kubelet_socket;
}
std::string Config::ControlSocket() const {
  return control_socket.empty() ? virtual_manager_path + "/vgpu-manager.sock" : control_socket;
}
std::string Config::DriverLibraryDir() const {
  return driver_library_dir.empty() ? virtual_manager_path + "/vdriver/nvidia" : driver_library_dir;
}
std::string Config::CheckpointFile() const { return checkpoint_path + "/vgpu-manager.checkpoint"; }

std::string Config::EffectiveConfigLine() const {
  std::string out;
  for (const Flag& f : Flags()) {
    if (!out.empty()) {
      out += ' ';
    }
    std::string v = f.get(*this);
    out += std::string(f.name) + "=" + (v.empty() ? "\"\"" : v);
  }
  return out;
}

Status ApplyJson(std::string_view json_text, Config& config) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("config file: not a JSON object");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "config") {
      return InvalidArgumentError("config file: 'config' cannot nest another file");
    }
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_boolean() || value.is_number_integer()) {
      text = value.dump();
    } else {
      return InvalidArgumentError("config file: " + key + ": expected a string, bool or integer");
    }
    VGPU_RETURN_IF_ERROR(SetFlag(config, key, text).Annotate("config file"));
  }
  return OkStatus();
}

Result<Config> ParseArgs(const std::vector<std::string>& args, bool* help) {
  // Split into (name, value) first so --config is applied before any flag, whatever its place.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      if (help != nullptr) {
        *help = true;
      }
      continue;
    }
    if (!a.starts_with("--") || a.size() == 2) {
      return InvalidArgumentError("unexpected argument '" + a + "' (flags look like --name=value)");
    }
    std::string body = a.substr(2);
    size_t eq = body.find('=');
    if (eq != std::string::npos) {
      pairs.emplace_back(body.substr(0, eq), body.substr(eq + 1));
      continue;
    }
    const Flag* f = FindFlag(body);
    if (f == nullptr) {
      return InvalidArgumentError("--" + body + ": unknown flag (see --help)");
    }
    if (f->is_bool) {
      pairs.emplace_back(body, "true");
    } else if (i + 1 < args.size()) {
      pairs.emplace_back(body, args[++i]);
    } else {
      return InvalidArgumentError("--" + body + ": needs a value");
    }
  }
  Config config;
  for (const auto& [name, value] : pairs) {
    if (name == "config") {
      auto text = ReadWholeFile(value);
      if (!text.ok()) {
        return text.status().Annotate("--config");
      }
      VGPU_RETURN_IF_ERROR(ApplyJson(*text, config).Annotate(value));
      config.config_file = value;
    }
  }
  for (const auto& [name, value] : pairs) {
    if (name != "config") {
      VGPU_RETURN_IF_ERROR(SetFlag(config, name, value));
    }
  }
  return config;
}

Status Validate(const Config& c) {
  if (c.driver != "nvidia") {
    return InvalidArgumentError("--driver: only \"nvidia\" is supported, got '" + c.driver + "'");
  }
  if (c.query_port < 0 || c.query_port > 65535) {
    return InvalidArgumentError("--query-port: must be 0..65535, got " +
                                std::to_string(c.query_port));
  }
  if (c.sample_period_s <= 0 || c.sample_period_s > 3600) {
    return InvalidArgumentError("--sample-period: must be 1..3600 seconds, got " +
                                std::to_string(c.sample_period_s));
  }
  if (c.allocation_check_period_s <= 0 || c.allocation_check_period_s > 86400) {
    return InvalidArgumentError("--allocation-check-period: must be 1..86400 seconds, got " +
                                std::to_string(c.allocation_check_period_s));
  }
  VGPU_RETURN_IF_ERROR(CheckFileIfSet("extra-config", c.extra_config));
  VGPU_RETURN_IF_ERROR(CheckFileIfSet("volume-config", c.volume_config));
  VGPU_RETURN_IF_ERROR(CheckFileIfSet("kubeconfig", c.kubeconfig));
  VGPU_RETURN_IF_ERROR(CheckFileIfSet("gpu-fixture", c.gpu_fixture));
  if (!c.kubeconfig.empty() && c.incluster_mode) {
    return InvalidArgumentError("--incluster-mode: cannot be combined with --kubeconfig");
  }
  if (!c.node_labels.empty()) {
    std::string_view rest = c.node_labels;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view kv = rest.substr(0, comma);
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return InvalidArgumentError("--node-labels: '" + std::string(kv) + "' is not key=value");
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  if (!c.hostname_override.empty()) {
    for (char ch : c.hostname_override) {
      if (!(std::islower(static_cast<unsigned char>(ch)) ||
            std::isdigit(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.')) {
        return InvalidArgumentError("--hostname-override: '" + c.hostname_override +
                                    "' is not a DNS-1123 name (lower-case, digits, '-', '.')");
      }
    }
  }
  VGPU_RETURN_IF_ERROR(CheckAbsolute("driver-root", c.driver_root));
  VGPU_RETURN_IF_ERROR(CheckAbsolute("virtual-manager-path", c.virtual_manager_path));
  VGPU_RETURN_IF_ERROR(CheckAbsolute("slot-path", c.slot_path));
  VGPU_RETURN_IF_ERROR(CheckAbsolute("device-plugin-path", c.device_plugin_path));
  VGPU_RETURN_IF_ERROR(CheckAbsolute("checkpoint-path", c.checkpoint_path));
  if (c.memory_unit_bytes < (1ull << 20) || c.memory_unit_bytes % (1ull << 20) != 0) {
    return InvalidArgumentError("--memory-unit: must be a whole number of MiB, >= 1Mi, got " +
                                std::to_string(c.memory_unit_bytes));
  }
  for (auto [flag, value] :
       {std::pair<std::string_view, const std::string*>{"core-resource", &c.core_resource},
        {"memory-resource", &c.memory_resource},
        {"gpu-resource", &c.gpu_resource}}) {
    // The kubelet accepts only domain-prefixed extended resource names outside kubernetes.io/.
    size_t slash = value->find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == value->size() ||
        value->starts_with("kubernetes.io/")) {
      return InvalidArgumentError("--" + std::string(flag) + ": '" + *value +
                                  "' is not an extended resource name (domain/name)");
    }
  }
  if (c.placement != "firstfit" && c.placement != "binpack" && c.placement != "spread" &&
      c.placement != "topology" && c.placement != "memory") {
    return InvalidArgumentError(
        "--placement: expected firstfit, binpack, spread, topology or "
        "memory, got '" +
        c.placement + "'");
  }
  if (!c.cdi_kind.empty() && c.cdi_kind.find('/') == std::string::npos) {
    return InvalidArgumentError("--cdi-kind: '" + c.cdi_kind + "' is not vendor.com/class");
  }
  if (c.managed_policy != "refuse" && c.managed_policy != "allow-uncounted") {
    return InvalidArgumentError("--managed-policy: expected refuse or allow-uncounted, got '" +
                                c.managed_policy + "'");
  }
  if (c.unknown_policy != "refuse" && c.unknown_policy != "allow-log") {
    return InvalidArgumentError("--unknown-policy: expected refuse or allow-log, got '" +
                                c.unknown_policy + "'");
  }
  if (c.kubelet_api != "device-plugin" && c.kubelet_api != "dra") {
    return InvalidArgumentError("--kubelet-api: expected device-plugin or dra, got '" +
                                c.kubelet_api + "'");
  }
  if (c.dra() && c.standalone) {
    return InvalidArgumentError("--kubelet-api=dra: cannot be combined with --standalone");
  }
  if (c.dra() && (c.dra_driver_name.empty() || c.dra_driver_name.size() > 63 ||
                  c.dra_driver_name.find('/') != std::string::npos)) {
    return InvalidArgumentError("--dra-driver-name: '" + c.dra_driver_name +
                                "' is not a DNS subdomain of at most 63 characters");
  }
  if (!c.share_mode && c.standalone) {
    return InvalidArgumentError("--standalone: needs --share-mode=true (it creates shared slots)");
  }
  return OkStatus();
}

std::string Usage() {
  std::string out = "usage: vgpu-manager [--flag=value ...]\n";
  Config defaults;
  for (const Flag& f : Flags()) {
    out += "  --" + std::string(f.name) + "  " + std::string(f.usage) + " (default " +
           (f.get(defaults).empty() ? "\"\"" : f.get(defaults)) + ")\n";
  }
  return out;
}

Result<Enforcement> ResolveEnforcement(const Config& c) {
  if (c.enforcement != Enforcement::kAuto) {
    return c.enforcement;
  }
  if (std::filesystem::exists(c.sys_module_dir + "/vgpu")) {
    return Enforcement::kKmod;
  }
  if (c.allow_shim_fallback) {
    return Enforcement::kShim;
  }
  return FailedPreconditionError(
      "--enforcement=auto: vgpu.ko is not loaded (no " + c.sys_module_dir +
      "/vgpu) and --allow-shim-fallback is not set, so this node would silently run soft "
      "(shim) limits: load vgpu.ko (see the module installer's log), or pass "
      "--allow-shim-fallback to accept shim mode, or --enforcement=shim");
}

}  // namespace vgpu::config

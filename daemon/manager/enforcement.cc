#include "vgpu/manager/enforcement.h"

#include "vgpu/text.h"

namespace vgpu::manager {

ModuleInstallState ParseModuleInstallState(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  ModuleInstallState s;
  const size_t sp = text.find(' ');
  const std::string_view word = text.substr(0, sp);
  s.detail = sp == std::string_view::npos ? "" : std::string(text.substr(sp + 1));
  if (word == "kmod") {
    s.known = true;
    s.ok = true;
  } else if (word == "shim") {
    s.known = true;
    s.ok = false;
  } else {
    s.detail = "unreadable installer state '" + std::string(text) + "'";
  }
  return s;
}

ModuleInstallState ReadModuleInstallState(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    ModuleInstallState s;
    s.detail = text.status().message();
    return s;
  }
  return ParseModuleInstallState(*text);
}

EnforcementInForce DescribeEnforcement(std::string_view backend_kind, std::string fallback_reason,
                                       ModuleInstallState install) {
  EnforcementInForce e;
  e.mode = backend_kind == "kmod" ? "module" : std::string(backend_kind);
  e.hard = e.mode == "module";
  e.fallback_reason = std::move(fallback_reason);
  e.install = std::move(install);
  return e;
}

labels::LabelSet EnforcementLabels(const EnforcementInForce& e) {
  labels::LabelSet l;
  l[std::string(kEnforcementLabel)] = e.mode;
  l[std::string(kEnforcementHardLabel)] = e.hard ? "true" : "false";
  l[std::string(kModuleInstallLabel)] =
      e.install.known ? std::optional<std::string>(e.install.ok ? "ok" : "failed") : std::nullopt;
  l[std::string(kLegacyDeploymentLabel)] = std::nullopt;
  return l;
}

Result<labels::LabelSet> NodeLabelsToPublish(const labels::LabelSet& from_flag,
                                             const EnforcementInForce& e) {
  labels::LabelSet out = EnforcementLabels(e);
  for (const auto& [key, value] : from_flag) {
    if (out.count(key) != 0) {
      return InvalidArgumentError("--node-labels: " + key +
                                  " is published by the manager from the enforcement in force; "
                                  "remove it from the flag");
    }
    out[key] = value;
  }
  return out;
}

metrics::NodeEnforcement EnforcementMetrics(const EnforcementInForce& e) {
  metrics::NodeEnforcement m;
  m.mode = e.mode;
  m.hard = e.hard;
  m.shim_fallback = !e.fallback_reason.empty();
  m.module_install_ok = e.install.known ? (e.install.ok ? 1 : 0) : -1;
  return m;
}

}  // namespace vgpu::manager

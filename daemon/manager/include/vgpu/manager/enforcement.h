// The enforcement actually in force on the node, published honestly (security review F11.6):
// the node labels and /metrics say which backend started (module or shim) and whether its limits
// are hard, not which one the manager's flags asked for; and the module installer's outcome is
// published beside it, so a failed build is seen on the node, never a silent shim fallback.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/labels/node_labeler.h"
#include "vgpu/metrics/stats_source.h"

namespace vgpu::manager {

// The module installer's state file (deploy/images/module-installer/vgpu-install-module):
// "kmod <detail>" when vgpu.ko is built and loaded, "shim <reason>" when it is not.
struct ModuleInstallState {
  bool known = false;  // a state file was read
  bool ok = false;     // "kmod ..."
  std::string detail;  // the rest of the line (version, or why it failed)
};
ModuleInstallState ParseModuleInstallState(std::string_view text);
// Reads `path`; a missing or unreadable file is known=false with `detail` saying why.
ModuleInstallState ReadModuleInstallState(const std::string& path);

struct EnforcementInForce {
  std::string mode;             // "module" | "shim" | the backend's kind (tests: "fake")
  bool hard = false;            // only the module's limits hold against every process
  std::string fallback_reason;  // "" unless --enforcement=auto ended in the shim
  ModuleInstallState install;
};
// From the started backend's Kind() ("kmod" -> "module").
EnforcementInForce DescribeEnforcement(std::string_view backend_kind, std::string fallback_reason,
                                       ModuleInstallState install);

// Label keys the manager owns; --node-labels may not set them.
inline constexpr std::string_view kEnforcementLabel = "vgpu.io/enforcement";
inline constexpr std::string_view kEnforcementHardLabel = "vgpu.io/enforcement-hard";
inline constexpr std::string_view kModuleInstallLabel = "vgpu.io/module-install";
// The static label earlier overlays set from a flag (it could lie); removed on every node.
inline constexpr std::string_view kLegacyDeploymentLabel = "vgpu.io/deployment";

// vgpu.io/enforcement=module|shim, vgpu.io/enforcement-hard=true|false,
// vgpu.io/module-install=ok|failed (removed when unknown), vgpu.io/deployment removed.
labels::LabelSet EnforcementLabels(const EnforcementInForce& e);
// The operator's --node-labels plus EnforcementLabels; an operator label with a key the manager
// owns is an error naming it.
Result<labels::LabelSet> NodeLabelsToPublish(const labels::LabelSet& from_flag,
                                             const EnforcementInForce& e);
metrics::NodeEnforcement EnforcementMetrics(const EnforcementInForce& e);

}  // namespace vgpu::manager

// `vgpuctl diagnose` on a node: module state (loaded, version, parameters), the driver binding
// (nvidia.ko and nvidia-uvm versions, uvm_disable_hmm, /dev nodes), slots (the module's, from
// sysfs, and the manager's, from its control API), recent refusals (dmesg lines of vgpu, the
// slots' refusal counters) and the versions of each component, as one Report.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/diagnose/report.h"

namespace vgpu::diagnose {

struct NodeInputs {
  std::filesystem::path root = "/";     // sys/, dev/ are read under it (tests: a fixture tree)
  std::vector<std::string> kernel_log;  // dmesg lines (the caller reads them; may be empty)
  std::string kernel_log_error;         // why kernel_log is empty, when it could not be read
  // The manager's {"op":"list"} answer, or nullopt with manager_error saying why not.
  std::optional<nlohmann::json> manager_list;
  std::string manager_error;
  size_t max_log_lines = 20;
};

Report NodeReport(const NodeInputs& in);

// This build's release version (the repository's VERSION).
const char* ReleaseVersion();

}  // namespace vgpu::diagnose

// The manager's settings (from daemon/config) and what one Allocate hands a container.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/slots/slot.h"

namespace vgpu::manager {

using Clock = std::function<std::chrono::steady_clock::time_point()>;

// The pod annotation that chooses how the pod's tencent.com/vcuda-core share is enforced:
// "cap" (the default, a hard limit of N %, as gpu-manager defines vcuda-core) or "weight"
// (work-conserving: N % under contention, idle time lent out). docs/operator-guide.md.
inline constexpr std::string_view kComputeModeAnnotation = "vgpu.io/compute-mode";

struct ManagerOptions {
  uint64_t memory_unit_bytes = 256ull << 20;
  std::string core_resource = "tencent.com/vcuda-core";
  std::string memory_resource = "tencent.com/vcuda-memory";
  std::string gpu_resource = "tencent.com/vcuda-gpu";
  slots::ManagedPolicy managed_policy = slots::ManagedPolicy::kRefuse;
  slots::UnknownPolicy unknown_policy = slots::UnknownPolicy::kRefuse;
  std::chrono::seconds orphan_grace{30};  // --allocation-check-period
  std::string cdi_kind;                   // "vendor.com/class"; empty: no CDI names
  // With cdi_kind: each slot's edits are also written as a CDI spec (cdiVersion 0.5.0, one
  // device "slot<ID>") into this directory, so runtimes that resolve CDI names find them
  // (docs/reference/device-plugin-api.md §5); removed with the slot.
  std::string cdi_spec_dir;        // --cdi-spec-dir (daemon/config: its one default)
  std::string driver_library_dir;  // mounted at /usr/local/nvidia when it exists
  slots::ContainerEdits extra;     // --extra-config, added to every container
  // Test seam for crash-consistency tests: called at named points ("after-slot-create",
  // "after-checkpoint"); the manager binary kills itself there when told to by environment.
  std::function<void(std::string_view point)> crash_point;
  // Journal entries between two checkpoint snapshots (checkpoint_writer.h).
  size_t checkpoint_compact_after = 1024;
  // The saturated SM clock the manager measured on the GPU of this UUID, 0 when unknown
  // (daemon/reference_clock); written into every slot on that GPU as compute_ref_clock_mhz.
  // Unset: every slot's reference is unknown (the shim probes).
  std::function<uint32_t(std::string_view gpu_uuid)> reference_clock_mhz;
};

// What a container gets from one Allocate.
struct Grant {
  slots::ContainerEdits edits;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

}  // namespace vgpu::manager

// What the manager knows about one slot: the backend config plus the kubelet's IDs and the
// container it was linked to. This is what the checkpoint stores and Snapshot() returns.
#pragma once

#include <string>
#include <vector>

#include "vgpu/slots/slot.h"

namespace vgpu::slots {

struct SlotRecord {
  SlotConfig config;
  std::vector<std::string> memory_ids;  // sorted; define the slot (config.name is their key)
  std::vector<std::string> core_ids;    // sorted; linked at PreStartContainer
  std::vector<std::string> gpu_ids;     // whole-GPU ID for an exclusive slot
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  bool linked = false;  // the pod-resources API confirmed the owner and the core share
  bool manual = false;  // created through the standalone API, never reclaimed as an orphan

  bool operator==(const SlotRecord&) const = default;
};

}  // namespace vgpu::slots

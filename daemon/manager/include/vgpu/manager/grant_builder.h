// GrantBuilder: what a container gets for its slots (device nodes, mounts, env, annotations,
// CDI names), and the per-slot CDI spec files that back those names. One job: turning slot
// records into container edits; it decides nothing about slots.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vgpu/manager/manager_options.h"
#include "vgpu/slots/slot.h"
#include "vgpu/slots/slot_record.h"
#include "vgpu/status.h"

namespace vgpu::manager {

// A CDI spec (cdiVersion 0.5.0) of `kind` with one device per (name, edits), as JSON text.
// The device plugin writes one per slot, the DRA plugin one per claim (daemon/dra).
struct CdiDevice {
  std::string name;
  slots::ContainerEdits edits;
};
std::string CdiSpecText(const std::string& kind, std::span<const CdiDevice> devices);

class GrantBuilder {
 public:
  GrantBuilder(const ManagerOptions& options, const slots::SlotBackend& backend)
      : options_(options), backend_(backend) {}

  // One slot, or several (a multi-GPU whole-GPU container: slots in GPU order, the i-th GPU
  // appearing in the container as /dev/nvidia<i>).
  Grant Make(std::span<const slots::SlotRecord* const> slots) const;
  Grant Make(const slots::SlotRecord& slot) const;

  bool cdi_enabled() const { return !options_.cdi_kind.empty(); }
  std::string CdiSpecPath(uint32_t slot_id) const;
  Status WriteCdiSpec(const slots::SlotRecord& slot) const;
  // Writes the spec when CDI is on and the file is missing (a slot reused after a restart).
  Status EnsureCdiSpec(const slots::SlotRecord& slot) const;
  void RemoveCdiSpec(uint32_t slot_id) const;

 private:
  const ManagerOptions& options_;
  const slots::SlotBackend& backend_;
};

}  // namespace vgpu::manager

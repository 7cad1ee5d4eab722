// The manager's start-up of its reference clocks (daemon/reference_clock), with its log lines:
// the book loaded from beside the checkpoint before the slot manager exists (every slot it
// creates reads it), the NVML monitor started after (each change goes into the GPU's slots).
#pragma once

#include <memory>
#include <string>

#include "vgpu/manager/slot_manager.h"
#include "vgpu/reference_clock/reference_clocks.h"

namespace vgpu::manager {

// Loads <checkpoint_dir>/reference-clocks.json; logs a corrupt file (kept aside) and each GPU's
// known reference.
Result<std::unique_ptr<reference_clock::ReferenceClocks>> LoadReferenceClocks(
    const std::string& checkpoint_dir);
// Starts measuring through libnvidia-ml.so.1; a change is applied to `slots` and logged. Without
// NVML it logs that slots get the last known reference or none (the shim probes).
void StartReferenceClocks(reference_clock::ReferenceClocks& clocks, SlotManager& slots);

}  // namespace vgpu::manager

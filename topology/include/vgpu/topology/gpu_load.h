// How busy each GPU is and at what SM clock, read once per call: what the manager's reference
// clock monitor (daemon/reference_clock) learns each GPU's saturated clock from. Through NVML
// (nvmlDeviceGetUtilizationRates, nvmlDeviceGetClockInfo(NVML_CLOCK_SM),
// nvmlDeviceGetEnforcedPowerLimit), with one NVML session held open for the source's life: the
// monitor reads every second, and an nvmlInit per read would cost more than the reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/nvidia_libraries.h"
#include "vgpu/status.h"

namespace vgpu::topology {

struct GpuLoadSample {
  std::string uuid;
  uint32_t gpu_util_percent = 0;  // of NVML's last sample period (1/6 s to 1 s by product)
  uint32_t sm_clock_mhz = 0;      // now
  uint32_t power_limit_mw = 0;    // enforced; 0 when NVML cannot say
};

class GpuLoadSource {
 public:
  virtual ~GpuLoadSource() = default;
  // Every GPU's sample now. A GPU that cannot be read is left out (a lost GPU is the health
  // monitor's business); an error only when none can be.
  virtual Result<std::vector<GpuLoadSample>> Sample() = 0;
  // The driver's version ("580.159.04"), or "" when unknown.
  virtual std::string DriverVersion() const = 0;
};

// Opens the library and a session; Unavailable when either fails (no driver on this node).
Result<std::unique_ptr<GpuLoadSource>> OpenNvmlLoadSource(
    const std::string& library = kNvmlLibrary);

}  // namespace vgpu::topology

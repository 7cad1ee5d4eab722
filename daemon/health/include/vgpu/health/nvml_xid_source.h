// XID events from NVML, loaded with dlopen so the manager runs (without health checks) on
// nodes where the driver's libnvidia-ml.so.1 is absent, and builds without NVIDIA headers.
#pragma once

#include <memory>
#include <string>

#include "vgpu/health/health_monitor.h"
#include "vgpu/nvidia_libraries.h"

namespace vgpu::health {

class NvmlXidSource : public XidEventSource {
 public:
  // library: kNvmlLibrary (found through the ld cache), or a path.
  explicit NvmlXidSource(std::string library = kNvmlLibrary);
  ~NvmlXidSource() override;

  Result<std::vector<std::string>> Start() override;
  Result<std::optional<XidEvent>> Wait(std::chrono::milliseconds timeout) override;
  Status Probe(const std::string& gpu_uuid) override;

  struct Api;  // the resolved NVML entry points

 private:
  std::string library_;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  void* event_set_ = nullptr;
  bool initialized_ = false;
};

}  // namespace vgpu::health

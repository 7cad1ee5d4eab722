// HealthSink that feeds SlotManager::SetGpuHealth, which bumps the generation every
// ListAndWatch stream waits on, so both directions (unhealthy, healthy again) reach the kubelet.
#pragma once

#include "vgpu/health/health_monitor.h"
#include "vgpu/manager/slot_manager.h"

namespace vgpu::health {

class SlotManagerHealthSink final : public HealthSink {
 public:
  explicit SlotManagerHealthSink(manager::SlotManager& slots) : slots_(slots) {}
  void OnGpuHealthChanged(const std::string& gpu_uuid, bool healthy,
                          const std::string& reason) override;

 private:
  manager::SlotManager& slots_;
};

}  // namespace vgpu::health

#include "vgpu/health/slot_manager_sink.h"

namespace vgpu::health {

void SlotManagerHealthSink::OnGpuHealthChanged(const std::string& gpu_uuid, bool healthy,
                                               const std::string& /*reason: logged by monitor*/) {
  for (const alloc::GpuInfo& gpu : slots_.gpus()) {
    if (gpu.uuid == gpu_uuid) {
      slots_.SetGpuHealth(gpu.index, healthy);
      return;
    }
  }
}

}  // namespace vgpu::health

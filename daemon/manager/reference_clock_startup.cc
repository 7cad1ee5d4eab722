#include "vgpu/manager/reference_clock_startup.h"

#include "vgpu/manager/log.h"
#include "vgpu/nvidia_libraries.h"

namespace vgpu::manager {

Result<std::unique_ptr<reference_clock::ReferenceClocks>> LoadReferenceClocks(
    const std::string& checkpoint_dir) {
  auto clocks = reference_clock::ReferenceClocks::Load(checkpoint_dir);
  if (!clocks.ok()) {
    return clocks.status();
  }
  const auto& loaded = (*clocks)->loaded();
  if (!loaded.corrupt_reason.empty()) {
    LogWarn("event=reference_clocks_corrupt kept_aside=" + loaded.kept_aside.string() +
            " reason=\"" + loaded.corrupt_reason + "\" action=\"relearned from saturated runs\"");
  }
  for (const auto& [uuid, r] : loaded.gpus) {
    LogInfo("event=startup step=allocator gpu_uuid=" + uuid +
            " reference_clock_mhz=" + std::to_string(r.mhz));
  }
  return clocks;
}

void StartReferenceClocks(reference_clock::ReferenceClocks& clocks, SlotManager& slots) {
  Status s = clocks.Start(
      kNvmlLibrary,
      [&slots](const std::string& uuid, uint32_t mhz) {
        const int rewritten = slots.ApplyReferenceClock(uuid);
        LogInfo("event=reference_clock_learned gpu_uuid=" + uuid + " reference_clock_mhz=" +
                std::to_string(mhz) + " slots_rewritten=" + std::to_string(rewritten));
      },
      [](const Status& e) {
        LogWarn("event=reference_clock_error error=\"" + e.ToString() + "\"");
      });
  if (!s.ok()) {
    LogWarn("event=startup step=allocator reference_clock=off error=\"" + s.ToString() +
            "\" note=\"slots get the last known reference or none (the shim probes)\"");
  }
}

}  // namespace vgpu::manager

#include "vgpu/reference_clock/reference_clocks.h"

namespace vgpu::reference_clock {

Result<std::unique_ptr<ReferenceClocks>> ReferenceClocks::Load(const std::filesystem::path& dir) {
  ReferenceClockFile file(dir / kReferenceClockFileName);
  auto loaded = file.Load();
  if (!loaded.ok()) {
    return loaded.status();
  }
  return std::unique_ptr<ReferenceClocks>(new ReferenceClocks(file, std::move(*loaded)));
}

ReferenceClocks::~ReferenceClocks() { Stop(); }

Status ReferenceClocks::Start(const std::string& nvml_library,
                              ReferenceClockMonitor::OnChange on_change,
                              ReferenceClockMonitor::OnError on_error) {
  auto source = topology::OpenNvmlLoadSource(nvml_library);
  if (!source.ok()) {
    return source.status();
  }
  source_ = std::move(*source);
  monitor_ = std::make_unique<ReferenceClockMonitor>(*source_, book_, file_, std::move(on_change),
                                                     std::move(on_error));
  monitor_->Start();
  return OkStatus();
}

void ReferenceClocks::Stop() {
  if (monitor_) {
    monitor_->Stop();
  }
}

}  // namespace vgpu::reference_clock

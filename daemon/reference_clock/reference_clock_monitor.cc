#include "vgpu/reference_clock/reference_clock_monitor.h"

#include <vector>

namespace vgpu::reference_clock {

ReferenceClockMonitor::ReferenceClockMonitor(topology::GpuLoadSource& source,
                                             ReferenceClockBook& book,
                                             const ReferenceClockFile& file, OnChange on_change,
                                             OnError on_error, std::chrono::milliseconds period)
    : source_(source),
      book_(book),
      file_(file),
      on_change_(std::move(on_change)),
      on_error_(std::move(on_error)),
      period_(period) {}

ReferenceClockMonitor::~ReferenceClockMonitor() { Stop(); }

void ReferenceClockMonitor::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
      lock.unlock();
      PollOnce(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count()));
      lock.lock();
    }
  });
}

void ReferenceClockMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void ReferenceClockMonitor::PollOnce(uint64_t now_unix_s) {
  auto samples = source_.Sample();
  if (!samples.ok()) {
    if (!read_failing_ && on_error_) {
      on_error_(samples.status());
    }
    read_failing_ = true;
    return;
  }
  read_failing_ = false;
  std::vector<std::pair<std::string, uint32_t>> changed;
  for (const topology::GpuLoadSample& s : *samples) {
    const uint32_t figure = stretches_[s.uuid].Add(s.gpu_util_percent, s.sm_clock_mhz);
    if (figure != 0 &&
        book_.Offer(s.uuid, figure, s.power_limit_mw, source_.DriverVersion(), now_unix_s)) {
      changed.emplace_back(s.uuid, figure);  // an accepted offer is the GPU's figure now
    }
  }
  if (changed.empty()) {
    return;
  }
  // Saved before the slots hear of it: a restart then writes the same figure into new slots.
  Status saved = file_.Save(book_.All());
  if (!saved.ok() && !save_failing_ && on_error_) {
    on_error_(saved);
  }
  save_failing_ = !saved.ok();
  for (const auto& [uuid, mhz] : changed) {
    if (on_change_) {
      on_change_(uuid, mhz);
    }
  }
}

}  // namespace vgpu::reference_clock

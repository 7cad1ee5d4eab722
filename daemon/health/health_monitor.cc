#include "vgpu/health/health_monitor.h"

#include <algorithm>
#include <cstdio>

namespace vgpu::health {

bool IsApplicationXid(uint64_t xid) {
  return std::find(std::begin(kApplicationXids), std::end(kApplicationXids), xid) !=
         std::end(kApplicationXids);
}

HealthMonitor::HealthMonitor(XidEventSource& source, HealthSink& sink, HealthOptions options)
    : source_(source), sink_(sink), options_(std::move(options)) {
  if (!options_.clock) options_.clock = [] { return std::chrono::steady_clock::now(); };
  ignored_.insert(std::begin(kApplicationXids), std::end(kApplicationXids));
  ignored_.insert(options_.extra_ignored_xids.begin(), options_.extra_ignored_xids.end());
}

HealthMonitor::~HealthMonitor() { Stop(); }

Status HealthMonitor::StartWithoutThread() {
  Result<std::vector<std::string>> gpus = source_.Start();
  if (!gpus.ok()) return gpus.status().Annotate("health");
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& uuid : *gpus) gpus_[uuid] = GpuState{};
  return OkStatus();
}

Status HealthMonitor::Start() {
  VGPU_RETURN_IF_ERROR(StartWithoutThread());
  thread_ = std::thread([this] {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
      Step();
    }
  });
  return OkStatus();
}

void HealthMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();  // at most one wait_timeout
}

void HealthMonitor::Step() {
  Result<std::optional<XidEvent>> event = source_.Wait(options_.wait_timeout);
  if (!event.ok()) {
    // NVIDIA's plugin marks every device unhealthy when the event wait itself fails.
    Apply(XidEvent{"", 0});
    std::fprintf(stderr, "vgpu-health: level=error msg=\"xid wait failed\" error=\"%s\"\n",
                 event.status().ToString().c_str());
  } else if (event->has_value()) {
    Apply(**event);
  }
  Reprobe();
}

void HealthMonitor::Apply(const XidEvent& event) {
  if (!event.gpu_uuid.empty() && ignored_.count(event.xid)) {
    std::fprintf(stderr,
                 "vgpu-health: level=info msg=\"application xid ignored\" gpu=%s xid=%llu\n",
                 event.gpu_uuid.c_str(), static_cast<unsigned long long>(event.xid));
    return;
  }
  std::vector<std::string> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = options_.clock();
    for (auto& [uuid, state] : gpus_) {
      if (event.gpu_uuid.empty() || uuid == event.gpu_uuid) {
        state.last_critical = now;
        if (state.healthy) targets.push_back(uuid);
      }
    }
  }
  const std::string reason = event.gpu_uuid.empty() ? "xid event source failed"
                                                    : "critical xid " + std::to_string(event.xid);
  for (const std::string& uuid : targets) SetHealth(uuid, false, reason);
}

void HealthMonitor::Reprobe() {
  std::vector<std::string> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = options_.clock();
    for (const auto& [uuid, state] : gpus_) {
      if (!state.healthy && now - state.last_critical >= options_.reprobe_after)
        due.push_back(uuid);
    }
  }
  for (const std::string& uuid : due) {
    Status probe = source_.Probe(uuid);
    if (probe.ok()) {
      SetHealth(uuid, true, "re-probe succeeded");
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      gpus_[uuid].last_critical = options_.clock();  // wait another quiet period
    }
  }
}

void HealthMonitor::SetHealth(const std::string& uuid, bool healthy, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gpus_.find(uuid);
    if (it == gpus_.end() || it->second.healthy == healthy) return;
    it->second.healthy = healthy;
  }
  std::fprintf(stderr, "vgpu-health: level=%s msg=\"gpu %s\" gpu=%s reason=\"%s\"\n",
               healthy ? "info" : "warn", healthy ? "healthy" : "unhealthy", uuid.c_str(),
               reason.c_str());
  sink_.OnGpuHealthChanged(uuid, healthy, reason);
}

bool HealthMonitor::Healthy(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = gpus_.find(uuid);
  return it == gpus_.end() || it->second.healthy;
}

std::map<std::string, bool> HealthMonitor::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, bool> out;
  for (const auto& [uuid, state] : gpus_) out[uuid] = state.healthy;
  return out;
}

}  // namespace vgpu::health

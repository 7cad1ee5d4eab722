#include "vgpu/manager/stats_source.h"

#include <string>

#include "vgpu/manager/log.h"

namespace vgpu::manager {

Result<metrics::NodeSnapshot> SlotManagerStatsSource::Snapshot() {
  metrics::NodeSnapshot node;
  auto records = slots_.Snapshot();
  auto health = slots_.GpuHealth();
  for (const auto& g : slots_.gpus()) {
    metrics::GpuStats gs;
    gs.uuid = g.uuid;
    gs.healthy = health.count(g.index) == 0 || health.at(g.index);
    for (const auto& r : records) {
      if (r.config.gpu == g.index) {
        ++gs.slots;
        gs.memory_committed_bytes += r.config.exclusive ? g.memory_bytes : r.config.mem_quota;
      }
    }
    node.gpus.push_back(gs);
  }
  for (const auto& r : records) {
    metrics::SlotStats s;
    s.gpu_uuid = r.config.gpu_uuid;
    s.slot = std::to_string(r.config.id);
    s.pod_namespace = r.pod_namespace;
    s.pod = r.pod_name;
    s.container = r.container;
    s.memory_quota_bytes = r.config.mem_quota;
    s.core_share_ratio = r.config.compute_share / 100.0;
    // One slot's unreadable counters must not fail the scrape: its usage stays 0.
    auto usage = slots_.SlotUsage(r.config.id);
    {
      std::lock_guard lock(usage_log_mu_);
      if (usage.ok()) {
        usage_failing_.erase(r.config.id);
      } else if (usage_failing_.insert(r.config.id).second) {
        LogWarn("event=slot_usage_failed slot=" + std::to_string(r.config.id) +
                " backend=" + std::string(slots_.backend_kind()) + " error=\"" +
                usage.status().ToString() + "\"");
      }
    }
    if (usage.ok()) {
      s.memory_charged_bytes = usage->memory_charged_bytes;
      s.memory_peak_bytes = usage->memory_peak_bytes;
      s.memory_denials = usage->memory_denials;
      s.busy_seconds = static_cast<double>(usage->gpu_busy_ns) / 1e9;
      s.throttled_seconds = static_cast<double>(usage->throttled_ns) / 1e9;
      s.core_achieved_ratio = usage->achieved_share_1s_pm / 1000.0;
      s.core_achieved_10s_ratio = usage->achieved_share_10s_pm / 1000.0;
      // usage->unknown_ioctls is a total; vgpu_slot_unknown_ioctls_total is labelled by
      // (kind, number), which no backend reports yet, so it is not exported from here.
    }
    node.slots.push_back(std::move(s));
  }
  auto counters = slots_.Counters();
  node.counters.allocations = counters.allocations;
  node.counters.allocation_failures = counters.allocation_failures;
  node.counters.registrations = registrations_.load();
  return node;
}

}  // namespace vgpu::manager

#include "vgpu/manager/stats_source.h"

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
        gs.memory_committed_bytes +=
            r.config.exclusive ? g.memory_bytes : r.config.memory_quota_bytes;
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
    s.memory_quota_bytes = r.config.memory_quota_bytes;
    s.core_share_ratio = r.config.compute_share_percent / 100.0;
    node.slots.push_back(std::move(s));
  }
  auto counters = slots_.Counters();
  node.counters.allocations = counters.allocations;
  node.counters.allocation_failures = counters.allocation_failures;
  node.counters.registrations = registrations_.load();
  return node;
}

}  // namespace vgpu::manager

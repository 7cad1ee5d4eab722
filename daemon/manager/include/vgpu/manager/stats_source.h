// SlotManager as the metrics exporter's StatsSource: slots, GPUs and node counters from the
// manager's read-only snapshot. Memory charged/peak, denials and busy/throttled time come from
// the enforcement backend (vgpu.ko stats or the shim's ledgers) and are not read here yet.
#pragma once

#include <atomic>

#include "vgpu/manager/slot_manager.h"
#include "vgpu/metrics/stats_source.h"

namespace vgpu::manager {

class SlotManagerStatsSource final : public metrics::StatsSource {
 public:
  SlotManagerStatsSource(const SlotManager& slots, const std::atomic<uint64_t>& registrations)
      : slots_(slots), registrations_(registrations) {}
  Result<metrics::NodeSnapshot> Snapshot() override;

 private:
  const SlotManager& slots_;
  const std::atomic<uint64_t>& registrations_;
};

}  // namespace vgpu::manager

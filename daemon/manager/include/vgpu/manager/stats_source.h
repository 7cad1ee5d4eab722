// SlotManager as the metrics exporter's StatsSource: slots, GPUs and node counters from the
// manager's read-only snapshot, plus each slot's memory charged/peak, denials and unknown
// ioctls, busy and throttled time and achieved share from the enforcement backend
// (SlotBackend::Usage: vgpu.ko's stats, or the shim's ledger read through its published
// format, uapi/vgpu_ledger.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>

#include "vgpu/manager/slot_manager.h"
#include "vgpu/metrics/stats_source.h"

namespace vgpu::manager {

class SlotManagerStatsSource final : public metrics::StatsSource {
 public:
  // `enforcement`: what enforces the node's limits, resolved at start-up (enforcement.h).
  SlotManagerStatsSource(const SlotManager& slots, const std::atomic<uint64_t>& registrations,
                         metrics::NodeEnforcement enforcement = {})
      : slots_(slots), registrations_(registrations), enforcement_(std::move(enforcement)) {}
  Result<metrics::NodeSnapshot> Snapshot() override;

 private:
  const SlotManager& slots_;
  const std::atomic<uint64_t>& registrations_;
  const metrics::NodeEnforcement enforcement_;
  // Slots whose usage read failed and has been logged; cleared when a read succeeds again, so
  // a persistent failure logs once rather than every sample period.
  std::mutex usage_log_mu_;
  std::set<uint32_t> usage_failing_;  // guarded by usage_log_mu_
};

}  // namespace vgpu::manager

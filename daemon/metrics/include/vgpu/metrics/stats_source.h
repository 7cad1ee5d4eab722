// What the metrics exporter knows about a node: one consistent snapshot of slots, GPUs and node
// counters, pulled from a StatsSource each sample period.
//
// The manager implements StatsSource over its read-only slot/allocation snapshot plus the
// counters it reads from vgpu.ko (genl stats) or the shim's ledgers; tests use a fake.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::metrics {

// An ioctl the filter core refused because it did not know it (docs/design.md "Unknown is an
// outcome"). kind is the table it missed in ("escape", "control", "class"), number the value.
struct UnknownIoctlCount {
  std::string kind;
  uint32_t number = 0;
  uint64_t count = 0;
};

// One slot (tenant) on one GPU. Counters are cumulative since the slot was created.
struct SlotStats {
  std::string gpu_uuid;
  std::string slot;  // the manager's slot id
  std::string pod_namespace;
  std::string pod;
  std::string container;
  uint64_t memory_quota_bytes = 0;
  uint64_t memory_charged_bytes = 0;
  uint64_t memory_peak_bytes = 0;
  uint64_t memory_denials = 0;
  double core_share_ratio = 0;         // configured share, 0..1 (vcuda-core / 100)
  double core_achieved_ratio = 0;      // measured share of the GPU over the last 1 s, 0..1
  double core_achieved_10s_ratio = 0;  // the same over the last 10 s
  double busy_seconds = 0;
  double throttled_seconds = 0;
  std::vector<UnknownIoctlCount> unknown_ioctls;
};

struct GpuStats {
  std::string uuid;
  bool healthy = true;
  uint32_t slots = 0;
  uint64_t memory_committed_bytes = 0;  // sum of the quotas of the slots placed on this GPU
};

struct NodeCounters {
  uint64_t allocations = 0;
  uint64_t allocation_failures = 0;
  uint64_t registrations = 0;  // kubelet registrations, including re-registrations
};

struct NodeSnapshot {
  std::vector<GpuStats> gpus;
  std::vector<SlotStats> slots;
  NodeCounters counters;
};

class StatsSource {
 public:
  virtual ~StatsSource() = default;
  // Called from the sampler thread; must be safe against the manager's own threads.
  virtual Result<NodeSnapshot> Snapshot() = 0;
};

}  // namespace vgpu::metrics

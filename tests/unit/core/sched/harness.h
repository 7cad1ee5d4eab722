// Drives the share controller against SimGpu the way a host does: a tick every `tick_ns` (or
// earlier when the controller asks), actions applied at once, busy time reported either every
// tick (exact) or in lumps every `report_period_ns` that arrive `report_delay_ns` late (how
// NVML-style utilization samples reach the shim host).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim_gpu.h"
#include "vcore_sched.h"

namespace vgpu::sched_test {

struct Window {
  int64_t start_ns;
  std::vector<int64_t> busy_ns;  // per tenant index
};

class Harness {
 public:
  struct Options {
    int64_t tick_ns = 1'000'000;
    int64_t step_ns = 10'000;
    int64_t report_period_ns = 0;  // 0: report every tick
    int64_t report_delay_ns = 0;
    int64_t drain_ns = 2'000'000;
    int64_t switch_ns = 50'000;
  };

  Harness() : Harness(Options{}) {}
  explicit Harness(const Options& o);

  // Adds a tenant on slot `slot` with `share` in `mode`; returns its index.
  size_t AddTenant(uint32_t slot, uint32_t share, uint32_t mode, int64_t kernel_ns);

  // Runs until `until_ns` (absolute), recording busy per 100 ms bucket.
  void RunUntil(int64_t until_ns);

  // Fraction of [from, to) that tenant `i` was busy (from the 100 ms record).
  double Share(size_t i, int64_t from_ns, int64_t to_ns) const;

  // Applies `n` actions as the host would.
  void Apply(const vcore_sched_action* a, int n);

  SimGpu& gpu() { return gpu_; }
  vcore_sched& ctl() { return ctl_; }
  int64_t now() const { return now_; }
  int64_t actions() const { return actions_; }

  static constexpr int64_t kBucketNs = 10'000'000;  // 10 ms record

 private:
  void Report();

  Options o_;
  SimGpu gpu_;
  vcore_sched ctl_{};
  int64_t now_ = 1'000'000'000;  // start at 1 s: the controller must not rely on t=0
  int64_t start_ = now_;
  int64_t next_tick_ = now_;
  int64_t next_report_ = now_;
  int64_t actions_ = 0;
  struct Pending {
    int64_t due_ns;
    std::vector<vcore_sched_report> reports;
  };
  std::deque<Pending> pending_;
  int64_t last_report_ = now_;
  std::vector<std::vector<int64_t>> buckets_;  // [tenant][bucket]
  std::vector<int64_t> last_busy_;
};

}  // namespace vgpu::sched_test

// A simulated GPU for driving the share controller (kmod/core/sched) in unit tests.
//
// What it models, from compute-control-h200.md and nvidia-rm-abi.md §6:
// - one runlist: one TSG runs at a time; the scheduler round-robins over the TSGs that are
//   enabled and have work; a TSG keeps the GPU for its timeslice (SET_TIMESLICE), and a TSG
//   with no work yields at once (work-conserving);
// - preemption only at fetch (kernel) boundaries: a running kernel always runs to completion,
//   whether its timeslice expired or its channels were disabled (the measured behaviour: no
//   control evicted a kernel that was already running);
// - after the off edge (DISABLE_CHANNELS + PREEMPT), work that was already fetched still
//   starts during `drain_ns`: the open-loop overshoot the reference measured (5-8 points);
// - a context switch costs `switch_ns` of idle GPU (the reference saw 94-96 % total when two
//   tenants shared the GPU);
// - busy time per tenant is exact; the harness decides how it is reported (every tick, or in
//   late lumps like NVML/perfmon samples).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vgpu::sched_test {

struct Tenant {
  uint32_t slot = 0;
  int64_t kernel_ns = 1'000'000;  // duration of each kernel this tenant launches
  bool has_work = true;           // saturating (false: idle, launches nothing)
  double jitter = 0;              // each kernel lasts kernel_ns * (1 +- jitter), uniformly
  // Channel state as the controller's actions left it.
  bool enabled = true;
  int64_t disabled_at = -1;          // when the last off edge came (for the drain window)
  int64_t timeslice_ns = 2'048'000;  // libcuda's default 2048 us
  // Running state.
  int64_t kernel_left = 0;  // > 0 while a kernel runs
  // Accounting.
  int64_t busy_total = 0;
  int64_t busy_unreported = 0;
  int64_t kernels_done = 0;
  int64_t gate_offs = 0;
  int64_t gate_ons = 0;
  int64_t timeslice_sets = 0;
};

class SimGpu {
 public:
  explicit SimGpu(int64_t drain_ns = 2'000'000, int64_t switch_ns = 50'000)
      : drain_ns_(drain_ns), switch_ns_(switch_ns) {}

  // Adds a tenant; returns its index.
  size_t Add(const Tenant& t) {
    tenants_.push_back(t);
    return tenants_.size() - 1;
  }
  Tenant& At(size_t i) { return tenants_[i]; }
  Tenant* BySlot(uint32_t slot);
  size_t Size() const { return tenants_.size(); }

  // Channel control as the host issues it.
  void GateOff(Tenant& t, int64_t now);
  void GateOn(Tenant& t);

  // Advances the GPU from `now` by `dt`.
  void Step(int64_t now, int64_t dt);

 private:
  // May tenant `t` start a new kernel at `now`?
  bool CanFetch(const Tenant& t, int64_t now) const;
  int Pick(int64_t now) const;

  std::vector<Tenant> tenants_;
  int64_t drain_ns_;
  int64_t switch_ns_;
  int current_ = -1;                      // tenant holding the GPU
  int64_t slice_used_ = 0;                // of the current tenant
  int64_t switching_ = 0;                 // idle switch time left
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;  // deterministic: tests must be repeatable
  int64_t KernelNs(const Tenant& t);
};

}  // namespace vgpu::sched_test

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

// The SM clock of a power-limited GPU, for the reference clock's probe (ref_clock_probe.h).
// Board power is idle_w plus, while busy, a dynamic part that grows with the cube of the clock
// (voltage rises with frequency); the power controller filters the board power over tau_ns and
// moves the clock at most slew_mhz_per_ms towards the clock that would hold the filtered power
// at limit_w. Saturated, the clock settles where idle_w + dyn_w_at_ref * (f / ref)^3 = limit_w;
// duty-cycled, the filtered power drops and the clock boosts, up to max_mhz (the H200: ~1480 MHz
// saturated under the bf16 matmul loop at 700 W, 1980 MHz at caps 10-30).
class PowerClock {
 public:
  struct Model {
    double idle_w = 100;
    double limit_w = 700;
    double max_mhz = 1980;
    double sat_mhz = 1480;  // where a saturating busy GPU meets the limit (if below max_mhz)
    double tau_ns = 100e6;
    double slew_mhz_per_ms = 5;
  };
  explicit PowerClock(const Model& m) : m_(m), mhz_(m.max_mhz), power_w_(m.idle_w) {}

  // Advances by dt_ns during which the GPU was busy for busy_ns.
  void Step(int64_t dt_ns, int64_t busy_ns);
  double mhz() const { return mhz_; }

 private:
  double Power(double mhz, double busy_frac) const;
  Model m_;
  double mhz_;
  double power_w_;
};

}  // namespace vgpu::sched_test

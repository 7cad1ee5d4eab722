// Recognizes one GPU's saturated stretches in its once-a-second NVML samples and gives each a
// robust clock figure: what the reference clock book (reference_clock_book.h) keeps the lowest of.
//
// Saturated: NVML's GPU utilization >= kSaturatedPercent (a kernel ran in that much of its last
// sample period). A stretch counts only from kMinSamples consecutive saturated samples on, i.e.
// at least kMinSamples - 1 seconds saturated: a tenant's start-up probe runs ungated for at most
// ~2.75 s (settle 0.25 s + probe <= 2.5 s, shim/compute/ref_clock_probe.h) and then at its cap,
// below 99 %, so it gives at most three such samples and never counts; a capped tenant never
// saturates the GPU; an uncapped one (a whole-GPU pod, a bare run, several tenants together)
// does, and that is the clock the GPU sustains at its power limit.
//
// The figure: the median SM clock of the stretch's samples after its first (the first may hold
// the idle-to-busy edge and the limiter's ramp from a cool card), over at most the last
// kWindowSamples. A median of one-second readings, not a mean: the H200's clock under a bf16
// matmul loop varies between ~1410 and ~1575 MHz from one 10-ms reading to the next
// (docs/results/e2e-h200.md), and the median of n readings is what one outlier cannot move.
// While a stretch lasts its figure is offered at every sample (a job that saturates the GPU for
// hours still calibrates it within seconds), so the book sees the lowest the stretch reached.
// Pure logic: the monitor feeds it, unit tests drive it with simulated sequences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace vgpu::reference_clock {

class SaturatedStretch {
 public:
  static constexpr uint32_t kSaturatedPercent = 99;
  static constexpr size_t kMinSamples = 5;
  static constexpr size_t kWindowSamples = 120;

  // One sample (utilization in percent, SM clock in MHz; a clock of 0 is no reading and ends
  // the stretch). Returns the stretch's figure in MHz once it counts, else 0.
  uint32_t Add(uint32_t gpu_util_percent, uint32_t sm_clock_mhz);
  size_t length() const { return length_; }  // saturated samples in the stretch so far

 private:
  size_t length_ = 0;
  std::deque<uint32_t> after_first_;  // clocks of the stretch's samples after its first
};

}  // namespace vgpu::reference_clock

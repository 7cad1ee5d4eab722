// Learns, per process and GPU, the SM clock the GPU sustains while this tenant saturates it
// uncapped: the reference the clock weighting needs (compute_measure.cc, "Clock weighting").
//
// Why a probe: a tenant capped from its first kernel never runs saturated and ungated, so the
// reference cannot be learned from its normal operation, and it depends on the GPU model, its
// power limit and the tenant's own kernels (the H200 bf16 matmul loop sustains ~1480 MHz at its
// 700 W limit, a kernel of dependent FMAs runs at 1980 MHz: docs/results/compute-h200.md), so no
// constant can stand in for it. So a cap slot with a clock source and no configured reference
// starts with a probe: its controller runs at share 100 (never gated) from its first settled
// context until the probe has measured the saturated clock, and then switches to the slot's
// share. The probe's GPU time is not charged: the controller's share change forgives spans
// before it (vcore_sched_slot_set), as it forgives the settle of a new context.
//
// When the probe has learned it: the perfmon spans (~200 ms on the H200) in which the slot was
// >= kBusyPm busy carry the mean SM clock of their on time. Measured on the H200 (NVML every
// 10 ms, docs/results/e2e-h200.md): from a cold GPU the fast limiter pulls the clock from 1980 to
// ~1560 MHz within 100 ms of the load starting, while board power climbs to the 700 W limit over
// ~0.8 s and the clock then varies between ~1410 and ~1575 MHz (mean ~1510). A probe that stopped
// at the first two agreeing spans learned 1533-1573 MHz, and caps 50-90 over-delivered by up to
// 3 points. So the probe skips the first kSkipSpans saturated spans (the ramp) and averages the
// next kAvgSpans (~0.8 s of the limiter's steady variation). It gives up after max_ns: with more
// than kSkipSpans saturated spans seen, the mean of those after the skip; else no reference (the
// tenant did not saturate the GPU in that time), and the host caps GPU time as is (q = 1) until
// it learns one from a quiet saturated span.
//
// The price: a new process runs uncapped for its first settle_ns plus the probe (~1.2 s when
// it saturates the GPU from the start, at most max_ns, 2.5 s by default) after its first context
// settled. Pure logic (no clock, no threads): the meter thread feeds it, unit tests drive it
// against a simulated power-limited GPU (tests/unit/core/sched/ref_clock_probe_test.cc).
#pragma once

#include <cstdint>

namespace vgpu::shim::compute {

class RefClockProbe {
 public:
  enum class State : uint8_t { kProbing, kLearned, kGaveUp };
  static constexpr uint32_t kBusyPm = 900;   // a span this busy is saturated
  static constexpr uint32_t kSkipSpans = 2;  // the limiter's ramp from a cold start
  static constexpr uint32_t kAvgSpans = 4;
  static constexpr uint64_t kDefaultMaxNs = 2'500'000'000;

  explicit RefClockProbe(uint64_t max_ns = kDefaultMaxNs) : max_ns_(max_ns) {}

  // One measured span: busy GPU time within span_ns, the mean SM clock while the slot could run
  // (0: no sample), at monotonic time now_ns. The first span with any busy time starts the
  // probe's max_ns (an idle tenant costs nothing uncapped). Returns the state after it; once not
  // kProbing, later calls change nothing.
  State Add(uint64_t now_ns, uint64_t busy_ns, uint64_t span_ns, uint32_t mhz);

  State state() const { return state_; }
  // The learned reference (kLearned; kGaveUp with saturated spans after the skip), else 0.
  uint32_t ref_mhz() const { return ref_mhz_; }
  uint32_t busy_spans() const { return busy_spans_; }

 private:
  uint64_t max_ns_;
  uint64_t start_ns_ = 0;
  State state_ = State::kProbing;
  uint32_t ref_mhz_ = 0;
  uint32_t busy_spans_ = 0;
  uint64_t sum_mhz_ = 0;  // of the saturated spans after the skip
};

}  // namespace vgpu::shim::compute

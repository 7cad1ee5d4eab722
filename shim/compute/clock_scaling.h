// Learns c, the fraction of a tenant's busy GPU time that scales with the SM clock, from the
// tenant's own perfmon samples: the second calibration the clock weighting needs
// (compute_measure.cc, "Clock weighting"; the first, the saturated reference clock, is
// ref_clock_probe.h's).
//
// Why learned, not configured: c is a property of the tenant's kernels on this GPU model (how much
// of their time is bound by the SM clock rather than by memory, and how far the reported clock
// overstates the effective one when the power limiter acts inside an on phase). It was measured
// once on the H200 for a bf16 matmul loop (0.5-1.0 across caps, median 0.7: docs/results/
// compute-h200.md, run 3); a constant fitted there is wrong for another GPU or another kernel mix,
// and no operator can know it.
//
// What tells work: the SM clock and GR busy time cannot (they are what c relates). The same
// perfmon sample that carries the GR engine's busy fraction carries the frame buffer's (fb: the
// fraction of the period DRAM was read or written). For a given loop the DRAM traffic per unit
// of work is fixed and the memory clock does not follow the SM clock's power limiting, so fb busy
// per GR busy second is proportional to the work a busy second does: rho = fb / gr. Where the
// clock runs x = f_busy / f_ref times the saturated reference, the model of the weighting
// (time per unit of work = c / x + 1 - c) says
//
//   1 / rho = (1 - c) / rho_ref + (c / rho_ref) * u,   u = 1 / x,
//
// a line in u whose intercept and slope give c = slope / (intercept + slope), independent of
// rho_ref. Two bins of spans give the line: the reference bin (u >= kRefMinPm: the tenant ran at
// its saturated clock, as in the start-up probe and any saturated quiet span) and the lifted bin
// (u <= kLiftMaxPm: a capped tenant's on phases, where the duty-cycled GPU boosts). Each bin keeps
// sums of busy, fb and busy * u, so its rho is a ratio of sums (no per-span division by a small
// fb). Learned once both bins hold enough busy time and the bins' u are apart. The reference bin
// is cumulative (the saturated state does not change); the lifted bin forgets with a memory of
// kLiftMemoryNs of busy time, because the lifted state does: measured on the H200 (docs/results/
// e2e-h200.md, run D), the first capped seconds after the probe, while the card is still at its
// power limit, do less work per boosted busy second (c from them: 0.24-0.55) than the steady
// state (0.6-0.78), and a cumulative bin carried them for many seconds (cap 90 delivered 92 %).
//
// When it cannot learn: a tenant that moves no DRAM (fb per GR busy below kMinRhoPm in the
// reference bin), that never boosts (no lifted span: a GPU that is not power-limited runs the
// same clock capped and uncapped, q = 1 whatever c is), or that shares the GPU with another
// slot's processes: fb is the whole GPU's and a sample names only the process on the engine at
// its end, so the host feeds no span while any sample of the last 2 s named a process outside the
// slot (compute_measure.cc). Then c stays what it was learned while alone, or kPriorPm, the
// model's own statement that compute-bound work scales with the clock (c = 1), not a measured
// figure. Not covered: DRAM traffic of another process that never holds the GR engine at a
// sample's end (copy engines); a tenant that shares its GPU from its start keeps the prior.
// Pure logic (no clock, no threads): the meter thread feeds it, unit tests drive it against the
// model with known c (tests/unit/shim/compute/clock_scaling_test.cc).
#pragma once

#include <cstdint>

namespace vgpu::shim::compute {

class ClockScalingLearner {
 public:
  static constexpr uint32_t kPriorPm = 1000;
  // The most c may read. Above 1 the work per busy second rose more than the reported SM clock:
  // the clock is a sampling period's figure, and in a high cap's on phases it understates what
  // the SMs ran at (run F, docs/results/e2e-h200.md: at cap 70 the matmul loop did 74 % of bare
  // while c clamped at 1 credited 69 %). The DRAM signal is the measure of work, so it may say
  // so; the weight q it feeds stays within compute_measure.cc's kMaxWorkPerTimePm.
  static constexpr uint32_t kMaxPm = 1500;
  static constexpr uint32_t kRefMinPm = 970;   // u >= 0.97: at the reference clock
  static constexpr uint32_t kLiftMaxPm = 950;  // u <= 0.95: boosted 5 % or more
  static constexpr uint64_t kRefBusyNs = 100'000'000;
  static constexpr uint64_t kLiftBusyNs = 100'000'000;
  static constexpr uint64_t kLiftMemoryNs = 1'000'000'000;
  static constexpr uint32_t kMinRhoPm = 5;   // 0.5 % DRAM busy per GR busy second
  static constexpr uint32_t kMinGapPm = 30;  // the bins' mean u at least 0.03 apart

  // One span of the slot's own samples: GR busy, fb (DRAM) busy, u = f_ref / f_busy in permille.
  // `gated`: the slot was duty-cycled in it. Only such a span may enter the lifted bin: an
  // ungated one that ran above the reference is a cold card's boost (the start-up probe's first
  // spans), not the lift a cap gives, and once taught c = 0 (docs/results/e2e-h200.md, run H).
  void Add(uint64_t busy_ns, uint64_t fb_ns, uint32_t u_pm, bool gated);

  // c in permille: learned, else kPriorPm.
  uint32_t c_pm() const { return c_pm_; }
  bool learned() const { return learned_; }
  // Diagnosis (the compute log): each bin's fb per GR busy and mean u, permille; 0 when empty.
  uint32_t rho_ref_pm() const { return ref_.Rho(); }
  uint32_t rho_lift_pm() const { return lift_.Rho(); }
  uint32_t u_lift_pm() const { return lift_.U(); }

 private:
  struct Bin {
    uint64_t busy_ns = 0, fb_ns = 0;
    double busy_u = 0;  // sum of busy_ns * u
    uint32_t Rho() const {
      return busy_ns != 0 ? static_cast<uint32_t>(fb_ns * 1000 / busy_ns) : 0;
    }
    uint32_t U() const { return busy_ns != 0 ? static_cast<uint32_t>(busy_u / busy_ns) : 0; }
  };
  void Fit();

  Bin ref_, lift_;
  uint32_t c_pm_ = kPriorPm;
  bool learned_ = false;
};

}  // namespace vgpu::shim::compute

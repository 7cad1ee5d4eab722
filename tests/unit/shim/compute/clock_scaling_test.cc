// c, the fraction of a tenant's busy time that scales with the SM clock, learned from its DRAM
// traffic (shim/compute/clock_scaling.h), against the model with a known c: spans at the
// saturated clock (u = 1) and boosted spans (u = 1 / x), each with the fb busy that work gives.
#include "shim/compute/clock_scaling.h"

#include <gtest/gtest.h>

namespace vgpu::shim::compute {
namespace {

constexpr uint64_t kSpan = 200'000'000;  // a perfmon span on the H200

// fb busy of a span of `busy` GR busy at u, for a loop with rho_ref at the reference clock.
uint64_t Fb(uint64_t busy, double u, double c, double rho_ref) {
  return static_cast<uint64_t>(static_cast<double>(busy) * rho_ref / (c * u + 1 - c));
}

void Feed(ClockScalingLearner& l, double c, double rho_ref, double x, int ref_spans, int lift_spans,
          uint64_t lift_busy = kSpan / 3) {
  for (int i = 0; i < ref_spans; i++) {
    l.Add(kSpan, Fb(kSpan, 1, c, rho_ref), 1000, /*gated=*/false);
  }
  for (int i = 0; i < lift_spans; i++) {
    l.Add(lift_busy, Fb(lift_busy, 1 / x, c, rho_ref), static_cast<uint32_t>(1000 / x),
          /*gated=*/true);
  }
}

TEST(ClockScaling, RecoversTheModelsFraction) {
  for (double c : {0.0, 0.3, 0.6, 0.7, 0.9, 1.0}) {
    for (double x : {1.1, 1.34}) {
      ClockScalingLearner l;
      Feed(l, c, 0.12, x, 6, 10);
      ASSERT_TRUE(l.learned()) << c << " " << x;
      EXPECT_NEAR(l.c_pm(), c * 1000, 15) << "x " << x;
    }
  }
}

// The H200 bf16 matmul loop's figures (docs/results/compute-h200.md, run 3): the clock read 1.34x
// the saturated one at caps 10-30 while work per busy second rose 1.21x: c = 0.7.
TEST(ClockScaling, TheH200MatmulLoop) {
  ClockScalingLearner l;
  for (int i = 0; i < 6; i++) {
    l.Add(kSpan, kSpan / 10, 1000, /*gated=*/false);  // rho 0.1 saturated
  }
  for (int i = 0; i < 20; i++) {
    l.Add(kSpan / 5, static_cast<uint64_t>(kSpan / 5 / 10 * 1.21), 1000 * 1000 / 1340,
          /*gated=*/true);
  }
  ASSERT_TRUE(l.learned());
  EXPECT_NEAR(l.c_pm(), 700, 25);
}

// Until both bins hold enough busy time, the prior (c = 1) and not learned.
TEST(ClockScaling, PriorUntilBothBinsAreFilled) {
  ClockScalingLearner l;
  EXPECT_EQ(l.c_pm(), ClockScalingLearner::kPriorPm);
  Feed(l, 0.5, 0.1, 1.3, 6, 0);
  EXPECT_FALSE(l.learned()) << "only the reference bin";
  ClockScalingLearner lift;
  Feed(lift, 0.5, 0.1, 1.3, 0, 20);
  EXPECT_FALSE(lift.learned()) << "only boosted spans";
  EXPECT_EQ(lift.c_pm(), ClockScalingLearner::kPriorPm);
}

// No DRAM traffic (a register-bound kernel), or a clock that never boosts: no work signal.
TEST(ClockScaling, NoSignalNoLearning) {
  ClockScalingLearner dram;
  Feed(dram, 0.5, 0.0, 1.3, 6, 20);
  EXPECT_FALSE(dram.learned());
  ClockScalingLearner flat;
  Feed(flat, 0.5, 0.1, 1.02, 6, 20);  // boosted 2 %: between the bins
  EXPECT_FALSE(flat.learned());
  EXPECT_EQ(flat.c_pm(), ClockScalingLearner::kPriorPm);
}

// Work per busy second that falls as the clock rises says nothing true about c: clamped to 0
// (the time cap), never negative; work that rises far beyond the clock is held at kMaxPm.
TEST(ClockScaling, ClampedToTheModel) {
  ClockScalingLearner l;
  for (int i = 0; i < 6; i++) {
    l.Add(kSpan, kSpan / 10, 1000, /*gated=*/false);
  }
  for (int i = 0; i < 10; i++) {
    l.Add(kSpan / 2, kSpan / 2 / 12, 800,
          /*gated=*/true);  // less DRAM per busy second at a higher clock
  }
  ASSERT_TRUE(l.learned());
  EXPECT_EQ(l.c_pm(), 0u);
  ClockScalingLearner hi;
  for (int i = 0; i < 6; i++) {
    hi.Add(kSpan, kSpan / 10, 1000, /*gated=*/false);
  }
  for (int i = 0; i < 10; i++) {
    hi.Add(kSpan / 2, kSpan / 2 / 10 * 2, 800, /*gated=*/true);  // work doubled on a 1.25x clock
  }
  EXPECT_EQ(hi.c_pm(), ClockScalingLearner::kMaxPm);
}

// Work that rises somewhat more than the reported clock (a high cap's on phases, run F on the
// H200) is learned as it is, above 1, not cut to the pure-compute model.
TEST(ClockScaling, LearnsWorkThatOutrunsTheReportedClock) {
  ClockScalingLearner l;
  for (int i = 0; i < 6; i++) {
    l.Add(kSpan, kSpan / 10, 1000, /*gated=*/false);
  }
  for (int i = 0; i < 10; i++) {  // 1.2x the work per busy second on a 1.126x clock: c = 1.49
    l.Add(kSpan / 2, static_cast<uint64_t>(kSpan / 2 / 10 * 1.2), 888, /*gated=*/true);
  }
  ASSERT_TRUE(l.learned());
  EXPECT_NEAR(l.c_pm(), 1490, 30);
}

// The lifted state changes (the first capped seconds after the probe do less work per boosted
// busy second than the steady state, run D on the H200): c follows the recent boosted spans.
TEST(ClockScaling, FollowsTheLiftedStateAsItChanges) {
  ClockScalingLearner l;
  Feed(l, 0.3, 0.12, 1.3, 6, 20);
  ASSERT_TRUE(l.learned());
  EXPECT_NEAR(l.c_pm(), 300, 15);
  Feed(l, 0.7, 0.12, 1.3, 0, 60);  // 60 spans of 67 ms busy: 4 s of busy time later
  EXPECT_NEAR(l.c_pm(), 700, 20) << "a cumulative bin would still read ~0.6";
}

// A cold card's first saturated seconds (the start-up probe, ungated) boost far above the
// reference: those spans say nothing about the lift a cap gives and never enter the lifted bin.
// Fed as lifted, they taught c = 0 on the H200 (docs/results/e2e-h200.md, run H).
TEST(ClockScaling, UngatedBoostedSpansAreNotLifted) {
  ClockScalingLearner l;
  for (int i = 0; i < 6; i++) {
    l.Add(kSpan, kSpan / 10, 1000, /*gated=*/false);
  }
  for (int i = 0; i < 10; i++) {  // the same DRAM per busy second on a 1.2x clock: c = 0 if lifted
    l.Add(kSpan, kSpan / 10, 833, /*gated=*/false);
  }
  EXPECT_FALSE(l.learned());
  EXPECT_EQ(l.rho_lift_pm(), 0u) << "the lifted bin is empty";
  Feed(l, 0.7, 0.1, 1.3, 0, 10);  // gated spans of a capped tenant
  ASSERT_TRUE(l.learned());
  EXPECT_NEAR(l.c_pm(), 700, 20);
}

}  // namespace
}  // namespace vgpu::shim::compute

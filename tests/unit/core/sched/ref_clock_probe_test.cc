// The reference clock's start-up probe (shim/compute/ref_clock_probe.h) against a simulated
// power-limited GPU: SimGpu runs the tenant, PowerClock the SM clock, and the probe gets what the
// shim's meter gives it, one span per 200 ms perfmon sample with the mean clock of its on time.
#include <gtest/gtest.h>

#include <cmath>

#include "shim/compute/ref_clock_probe.h"
#include "sim_gpu.h"

namespace vgpu::sched_test {
namespace {

using shim::compute::RefClockProbe;

constexpr int64_t kSpanNs = 200'000'000;  // the H200's perfmon period
constexpr int64_t kStepNs = 100'000;

struct ProbeRun {
  RefClockProbe::State state;
  uint32_t ref_mhz;
  int64_t took_ns;     // from the first span to the end of the probe
  double settled_mhz;  // the clock after 5 s more of the same load
};

// Runs one tenant (saturating or not, idle for its first idle_first_ns) from a cold, idle GPU;
// `duty` < 1 gates it on for that fraction of every 50 ms. Feeds the probe until it ends, then
// keeps running to see where the clock settles.
ProbeRun RunProbe(const PowerClock::Model& m, bool has_work, double duty = 1.0,
                  uint64_t max_ns = RefClockProbe::kDefaultMaxNs, int64_t idle_first_ns = 0) {
  SimGpu gpu;
  Tenant t;
  t.has_work = has_work && idle_first_ns == 0;
  t.kernel_ns = 500'000;
  const size_t i = gpu.Add(t);
  PowerClock clock(m);
  RefClockProbe probe(max_ns);
  ProbeRun r{RefClockProbe::State::kProbing, 0, -1, 0};
  int64_t now = 1'000'000'000, span_busy = 0, first = -1;
  double mhz_sum = 0;
  int mhz_n = 0;
  const int64_t work_from = now + idle_first_ns;
  for (int64_t end = now + 8'000'000'000 + idle_first_ns; now < end; now += kStepNs) {
    gpu.At(i).has_work = has_work && now >= work_from;
    const bool on = std::fmod(static_cast<double>(now % 50'000'000), 50e6) < duty * 50e6;
    if (on != gpu.At(i).enabled) {
      on ? gpu.GateOn(gpu.At(i)) : gpu.GateOff(gpu.At(i), now);
    }
    const int64_t before = gpu.At(i).busy_total;
    gpu.Step(now, kStepNs);
    const int64_t busy = gpu.At(i).busy_total - before;
    clock.Step(kStepNs, busy);
    span_busy += busy;
    if (on && now % 20'000'000 == 0) {  // the shim's clock thread: every 20 ms while gated on
      mhz_sum += clock.mhz();
      mhz_n++;
    }
    if ((now + kStepNs) % kSpanNs == 0) {
      if (r.state == RefClockProbe::State::kProbing) {
        if (first < 0) {
          first = now;
        }
        r.state = probe.Add(static_cast<uint64_t>(now), static_cast<uint64_t>(span_busy), kSpanNs,
                            mhz_n != 0 ? static_cast<uint32_t>(mhz_sum / mhz_n) : 0);
        if (r.state != RefClockProbe::State::kProbing) {
          r.ref_mhz = probe.ref_mhz();
          r.took_ns = now - first;
          end = std::min(end, now + 5'000'000'000);
        }
      }
      span_busy = 0;
      mhz_sum = 0;
      mhz_n = 0;
    }
  }
  r.settled_mhz = clock.mhz();
  return r;
}

// A saturating tenant on a cold GPU: the clock starts at its boost and the limiter pulls it down.
// The probe skips the ramp and learns the settled clock within 1.5 %, in about 1.2 s.
TEST(RefClockProbe, LearnsTheSaturatedClockFromAColdStart) {
  PowerClock::Model m;
  const ProbeRun r = RunProbe(m, true);
  ASSERT_EQ(r.state, RefClockProbe::State::kLearned);
  EXPECT_NEAR(r.settled_mhz, m.sat_mhz, 10) << "the model settles where it should";
  EXPECT_NEAR(r.ref_mhz, r.settled_mhz, r.settled_mhz * 0.015);
  EXPECT_LE(r.took_ns, 1'400'000'000);
}

// The tenant's context exists for a while before its load starts (PyTorch loads its kernels):
// the probe's time runs from the first activity, so it still learns.
TEST(RefClockProbe, LoadStartingLateStillLearns) {
  PowerClock::Model m;
  const ProbeRun r =
      RunProbe(m, true, 1.0, RefClockProbe::kDefaultMaxNs, /*idle_first_ns=*/3'000'000'000);
  ASSERT_EQ(r.state, RefClockProbe::State::kLearned);
  EXPECT_NEAR(r.ref_mhz, r.settled_mhz, r.settled_mhz * 0.015);
}

// Kernels that never reach the power limit (the H200 ran a chain of dependent FMAs at 1980 MHz,
// 376 W): the reference is the boost clock, so the weighting leaves their time cap alone.
TEST(RefClockProbe, NotPowerLimitedLearnsTheBoostClock) {
  PowerClock::Model m;
  m.sat_mhz = 2400;  // would need more than the boost clock to reach the limit
  const ProbeRun r = RunProbe(m, true);
  ASSERT_EQ(r.state, RefClockProbe::State::kLearned);
  EXPECT_NEAR(r.ref_mhz, m.max_mhz, 5);
}

// A tenant that does not saturate the GPU during the probe teaches nothing: no reference (the
// host caps GPU time as is). An idle one does not even start the probe's time; a half-busy one
// gives up max_ns after its first activity, so it is not left uncapped.
TEST(RefClockProbe, NoSaturatedSpanNoReference) {
  PowerClock::Model m;
  ProbeRun r = RunProbe(m, false);
  EXPECT_EQ(r.state, RefClockProbe::State::kProbing) << "idle: nothing to learn, nothing spent";
  r = RunProbe(m, true, 0.5);
  EXPECT_EQ(r.state, RefClockProbe::State::kGaveUp);
  EXPECT_EQ(r.ref_mhz, 0u) << "a half-busy span is not saturated";
  EXPECT_LE(r.took_ns, static_cast<int64_t>(RefClockProbe::kDefaultMaxNs) + kSpanNs);
}

// The arithmetic: the first kSkipSpans saturated spans are the ramp, the next kAvgSpans are
// averaged; a span below kBusyPm neither counts nor resets.
TEST(RefClockProbe, SkipsTheRampAndAverages) {
  RefClockProbe p;
  const uint64_t s = kSpanNs;
  const uint32_t clocks[] = {1980, 1700, 1500, 1520, 0, 1480, 1400};
  uint64_t t = 0;
  for (uint32_t mhz : clocks) {
    t += s;
    const uint64_t busy = mhz != 0 ? s : s / 2;
    ASSERT_EQ(p.Add(t, busy, s, mhz != 0 ? mhz : 1980),
              mhz == 1400 ? RefClockProbe::State::kLearned : RefClockProbe::State::kProbing);
  }
  EXPECT_EQ(p.ref_mhz(), (1500 + 1520 + 1480 + 1400) / 4);
  EXPECT_EQ(p.Add(t + s, s, s, 1000), RefClockProbe::State::kLearned) << "final";
  EXPECT_EQ(p.ref_mhz(), 1475u);
  RefClockProbe q(5 * s);
  uint64_t u = s;
  q.Add(u, s, s, 1980);
  q.Add(u += s, s, s, 1700);
  q.Add(u += s, s, s, 1500);
  EXPECT_EQ(q.Add(u += 3 * s, 0, s, 0), RefClockProbe::State::kGaveUp);
  EXPECT_EQ(q.ref_mhz(), 1500u) << "gave up: the mean after the skip";
}

}  // namespace
}  // namespace vgpu::sched_test

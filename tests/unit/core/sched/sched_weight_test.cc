// Weight mode against the simulated GPU: splits under contention, hand-over, work conservation,
// and the shim host's view (each process controls only itself, the rest is a foreign party).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "harness.h"

namespace vgpu::sched_test {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1000 * kMs;
constexpr int64_t kT0 = 1 * kSec;  // harness start

// Worst |a / (a + b) - target| over 1 s windows slid by 100 ms in [from, to) (relative).
double WorstSplitError(const Harness& h, size_t a, size_t b, double target, int64_t from,
                       int64_t to) {
  double worst = 0;
  for (int64_t s = kT0 + from; s + kSec <= kT0 + to; s += 100 * kMs) {
    const double x = h.Share(a, s, s + kSec);
    const double y = h.Share(b, s, s + kSec);
    worst = std::max(worst, std::abs(x / (x + y) - target));
  }
  return worst;
}

TEST(Weight, SplitThirtySeventyWithinFivePoints) {
  for (int64_t kernel_ns : {1 * kMs, 300'000L, 3 * kMs}) {
    Harness h;
    const size_t a = h.AddTenant(1, 30, VCORE_SCHED_MODE_WEIGHT, kernel_ns);
    const size_t b = h.AddTenant(2, 70, VCORE_SCHED_MODE_WEIGHT, kernel_ns);
    h.gpu().At(a).jitter = h.gpu().At(b).jitter = 0.5;
    h.RunUntil(kT0 + 10 * kSec);
    const double worst = WorstSplitError(h, a, b, 0.30, 2 * kSec, 10 * kSec);
    const double total =
        h.Share(a, kT0 + 2 * kSec, kT0 + 10 * kSec) + h.Share(b, kT0 + 2 * kSec, kT0 + 10 * kSec);
    std::printf(
        "weight 30/70 kernel %lld us: worst 1 s split error after 2 s %.2f points, "
        "timeslices %lld/%lld us, GPU total %.1f %%\n",
        static_cast<long long>(kernel_ns / 1000), worst * 100,
        static_cast<long long>(h.gpu().At(a).timeslice_ns / 1000),
        static_cast<long long>(h.gpu().At(b).timeslice_ns / 1000), total * 100);
    EXPECT_LT(worst, 0.05) << "kernel " << kernel_ns;
    EXPECT_GT(total, 0.95);
    EXPECT_EQ(h.gpu().At(a).gate_offs + h.gpu().At(b).gate_offs, 0) << "weight never gates";
  }
}

// The model is nonlinear like the H200 (slices end at kernel boundaries, switches cost time):
// with the feedback off, the plain share -> timeslice map misses 30/70 by more than 2 points
// for 3 ms kernels. Guards the test above from passing on an overly kind model.
TEST(Weight, ModelIsNonlinearWithoutFeedback) {
  vcore_sched_params p;
  vcore_sched_params_default(&p);
  p.weight_contended_pm = 1000;  // switches cost time: never "contended" -> never corrected
  Harness h;
  ASSERT_EQ(vcore_sched_init(&h.ctl(), &p), 0);
  const size_t a = h.AddTenant(1, 30, VCORE_SCHED_MODE_WEIGHT, 3 * kMs);
  const size_t b = h.AddTenant(2, 70, VCORE_SCHED_MODE_WEIGHT, 3 * kMs);
  h.RunUntil(kT0 + 4 * kSec);
  const double x = h.Share(a, kT0 + kSec, kT0 + 4 * kSec);
  const double y = h.Share(b, kT0 + kSec, kT0 + 4 * kSec);
  std::printf("open-loop split with 3 ms kernels: %.1f / %.1f\n", 100 * x / (x + y),
              100 * y / (x + y));
  EXPECT_GT(std::abs(x / (x + y) - 0.30), 0.02);
}

// When one tenant stops, the other has the whole GPU within 200 ms (and keeps it).
TEST(Weight, HandOverWithinTwoHundredMs) {
  Harness h;
  const size_t a = h.AddTenant(1, 30, VCORE_SCHED_MODE_WEIGHT, kMs);
  const size_t b = h.AddTenant(2, 70, VCORE_SCHED_MODE_WEIGHT, kMs);
  h.RunUntil(kT0 + 4 * kSec);
  const int64_t stop = h.now();
  h.gpu().At(b).has_work = false;
  h.RunUntil(stop + 2 * kSec);
  // First 10 ms bucket after the stop in which `a` is >= 95 % busy.
  int64_t took = -1;
  for (int64_t s = stop; s < stop + kSec; s += Harness::kBucketNs) {
    if (h.Share(a, s, s + Harness::kBucketNs) >= 0.95) {
      took = s + Harness::kBucketNs - stop;
      break;
    }
  }
  std::printf("hand-over: whole GPU after %lld ms\n", static_cast<long long>(took / kMs));
  ASSERT_GE(took, 0);
  EXPECT_LE(took, 200 * kMs);
  EXPECT_GT(h.Share(a, stop + 200 * kMs, stop + 2 * kSec), 0.99);
}

// Work conservation: a weight tenant alone has the whole GPU whatever its share.
TEST(Weight, AloneGetsWholeGpu) {
  Harness h;
  const size_t a = h.AddTenant(1, 30, VCORE_SCHED_MODE_WEIGHT, kMs);
  h.RunUntil(kT0 + 3 * kSec);
  EXPECT_GT(h.Share(a, kT0 + 500 * kMs, kT0 + 3 * kSec), 0.99);
  EXPECT_EQ(h.gpu().At(a).gate_offs, 0);
  EXPECT_EQ(h.gpu().At(a).timeslice_sets, 1) << "one SET_TIMESLICE, no churn";
}

// The shim host: two processes, each with its own controller that sees its own slot and the
// rest of the GPU as one foreign party (share 100 - own). Both saturate; the split still holds.
TEST(Weight, ShimHostTwoControllersSplit) {
  SimGpu gpu;
  Tenant ta;
  ta.slot = 1;
  ta.jitter = 0.5;
  Tenant tb = ta;
  tb.slot = 2;
  const size_t a = gpu.Add(ta);
  const size_t b = gpu.Add(tb);
  vcore_sched ca{}, cb{};
  ASSERT_EQ(vcore_sched_init(&ca, nullptr), 0);
  ASSERT_EQ(vcore_sched_init(&cb, nullptr), 0);
  ASSERT_EQ(vcore_sched_slot_add(&ca, 1, 30, VCORE_SCHED_MODE_WEIGHT), 0);
  ASSERT_EQ(vcore_sched_slot_add(&ca, 99, 70, VCORE_SCHED_MODE_FOREIGN), 0);
  ASSERT_EQ(vcore_sched_slot_add(&cb, 2, 70, VCORE_SCHED_MODE_WEIGHT), 0);
  ASSERT_EQ(vcore_sched_slot_add(&cb, 99, 30, VCORE_SCHED_MODE_FOREIGN), 0);
  int64_t now = kT0, last_a = 0, last_b = 0;
  int64_t win_a = 0, win_b = 0;
  double worst = 0;
  vcore_sched_action acts[VCORE_SCHED_MAX_ACTIONS];
  for (int tick = 0; tick < 10000; tick++) {  // 10 s of 1 ms ticks
    const int64_t da = gpu.At(a).busy_total - last_a;
    const int64_t db = gpu.At(b).busy_total - last_b;
    last_a += da;
    last_b += db;
    const uint64_t span = 1'000'000;
    vcore_sched_report ra[2] = {{1, 0, static_cast<uint64_t>(da), span, 0},
                                {99, 0, static_cast<uint64_t>(db), span, 0}};
    vcore_sched_report rb[2] = {{2, 0, static_cast<uint64_t>(db), span, 0},
                                {99, 0, static_cast<uint64_t>(da), span, 0}};
    for (auto [ctl, rep, tenant] : {std::tuple{&ca, ra, a}, std::tuple{&cb, rb, b}}) {
      uint64_t next;
      const int n = vcore_sched_tick(ctl, now, rep, 2, acts, VCORE_SCHED_MAX_ACTIONS, &next);
      for (int i = 0; i < n; i++) {
        ASSERT_EQ(acts[i].kind, VCORE_SCHED_ACT_TIMESLICE) << "weight slots are never gated";
        ASSERT_NE(acts[i].slot_id, 99u) << "no action on the foreign party";
        gpu.At(tenant).timeslice_ns = static_cast<int64_t>(acts[i].timeslice_us) * 1000;
      }
    }
    gpu.Step(now, 1'000'000);
    now += 1'000'000;
    win_a += da;
    win_b += db;
    if (tick % 1000 == 999) {
      const double split = static_cast<double>(win_a) / static_cast<double>(win_a + win_b);
      if (tick >= 2999) {
        worst = std::max(worst, std::abs(split - 0.30));
      }
      win_a = win_b = 0;
    }
  }
  std::printf("shim host, two controllers: worst 1 s split error after 3 s %.2f points\n",
              worst * 100);
  EXPECT_LT(worst, 0.05);
}

}  // namespace
}  // namespace vgpu::sched_test

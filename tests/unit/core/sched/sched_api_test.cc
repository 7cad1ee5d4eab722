// Share controller API: argument checks, teardown never leaves a tenant disabled, counters,
// control parameter blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "harness.h"
#include "vcore_sched.h"
#include "vcore_sched_ctrl.h"

namespace vgpu::sched_test {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1000 * kMs;

TEST(SchedApi, InitRejectsBadParams) {
  vcore_sched s{};
  vcore_sched_params p;
  vcore_sched_params_default(&p);
  EXPECT_EQ(vcore_sched_init(&s, &p), 0);
  p.period_ns = 0;
  EXPECT_EQ(vcore_sched_init(&s, &p), -VCS_EINVAL);
  vcore_sched_params_default(&p);
  p.ts_min_us = p.ts_max_us + 1;
  EXPECT_EQ(vcore_sched_init(&s, &p), -VCS_EINVAL);
  vcore_sched_params_default(&p);
  p.min_phase_ns = p.period_ns;
  EXPECT_EQ(vcore_sched_init(&s, &p), -VCS_EINVAL);
}

TEST(SchedApi, SlotAddChecksArguments) {
  vcore_sched s{};
  ASSERT_EQ(vcore_sched_init(&s, nullptr), 0);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 0, VCORE_SCHED_MODE_CAP), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 101, VCORE_SCHED_MODE_CAP), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 50, 0), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 50, 9), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_slot_add(&s, ~0U, 50, VCORE_SCHED_MODE_CAP), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 50, VCORE_SCHED_MODE_CAP), 0);
  EXPECT_EQ(vcore_sched_slot_add(&s, 1, 50, VCORE_SCHED_MODE_CAP), -VCS_EEXIST);
  for (uint32_t id = 2; id <= VCORE_SCHED_MAX_SLOTS; id++) {
    EXPECT_EQ(vcore_sched_slot_add(&s, id, 10, VCORE_SCHED_MODE_WEIGHT), 0);
  }
  EXPECT_EQ(vcore_sched_slot_add(&s, 100, 10, VCORE_SCHED_MODE_WEIGHT), -VCS_ENOSPC);
  vcore_sched_action a[2];
  EXPECT_EQ(vcore_sched_slot_remove(&s, 12345, a), -VCS_ENOENT);
  EXPECT_EQ(vcore_sched_slot_set(&s, 12345, 10, VCORE_SCHED_MODE_CAP, a), -VCS_ENOENT);
  EXPECT_EQ(vcore_sched_slot_set(&s, 1, 0, VCORE_SCHED_MODE_CAP, a), -VCS_EINVAL);
  vcore_sched_slot_stats st;
  EXPECT_EQ(vcore_sched_get_stats(&s, 12345, &st), -VCS_ENOENT);
}

// Runs a cap-10 tenant until it is in an off phase (10 % duty: mostly off).
Harness GatedOffHarness(size_t* tenant) {
  Harness h;
  *tenant = h.AddTenant(1, 10, VCORE_SCHED_MODE_CAP, kMs);
  h.RunUntil(h.now() + 500 * kMs);
  while (h.gpu().At(*tenant).enabled) {
    h.RunUntil(h.now() + kMs);
  }
  return h;
}

TEST(SchedTeardown, RemoveWhileOffGatesOn) {
  size_t t;
  Harness h = GatedOffHarness(&t);
  ASSERT_TRUE(vcore_sched_slot_gated(&h.ctl(), 1));
  vcore_sched_action a[1];
  const int n = vcore_sched_slot_remove(&h.ctl(), 1, a);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(a[0].kind, VCORE_SCHED_ACT_GATE_ON);
  h.Apply(a, n);
  EXPECT_TRUE(h.gpu().At(t).enabled);
  // Nothing gates it again: the slot is gone.
  h.RunUntil(h.now() + 500 * kMs);
  EXPECT_TRUE(h.gpu().At(t).enabled);
  EXPECT_GT(h.Share(t, h.now() - 400 * kMs, h.now()), 0.99);
}

TEST(SchedTeardown, ReleaseAllGatesOnAndStops) {
  size_t t;
  Harness h = GatedOffHarness(&t);
  const size_t w = h.AddTenant(2, 50, VCORE_SCHED_MODE_WEIGHT, kMs);
  h.RunUntil(h.now() + 100 * kMs);
  vcore_sched_action a[VCORE_SCHED_MAX_ACTIONS];
  const int n = vcore_sched_release_all(&h.ctl(), a, VCORE_SCHED_MAX_ACTIONS);
  h.Apply(a, n);
  EXPECT_TRUE(h.gpu().At(t).enabled);
  EXPECT_TRUE(h.gpu().At(w).enabled);
  const int64_t offs = h.gpu().At(t).gate_offs;
  h.RunUntil(h.now() + 1 * kSec);  // a host that keeps ticking after release: no new gating
  EXPECT_EQ(h.gpu().At(t).gate_offs, offs);
  EXPECT_TRUE(h.gpu().At(t).enabled);
}

// Every way out, at every phase: the tenant ends enabled.
TEST(SchedTeardown, NeverLeftDisabledAtAnyPhase) {
  for (int64_t at = 0; at < 100 * kMs; at += 7 * kMs) {
    for (int way = 0; way < 3; way++) {
      Harness h;
      const size_t t = h.AddTenant(1, 30, VCORE_SCHED_MODE_CAP, kMs);
      h.RunUntil(h.now() + 1 * kSec + at);
      vcore_sched_action a[VCORE_SCHED_MAX_ACTIONS];
      int n = 0;
      if (way == 0) {
        n = vcore_sched_slot_remove(&h.ctl(), 1, a);
      } else if (way == 1) {
        n = vcore_sched_release_all(&h.ctl(), a, VCORE_SCHED_MAX_ACTIONS);
      } else {
        n = vcore_sched_slot_set(&h.ctl(), 1, 30, VCORE_SCHED_MODE_WEIGHT, a);
      }
      ASSERT_GE(n, 0);
      h.Apply(a, n);
      h.RunUntil(h.now() + 200 * kMs);
      EXPECT_TRUE(h.gpu().At(t).enabled) << "way " << way << " at " << at;
    }
  }
}

// An action array too small loses no state: the gate stays owed and is emitted next tick.
TEST(SchedTeardown, ActionsNotTakenAreRetried) {
  vcore_sched s{};
  ASSERT_EQ(vcore_sched_init(&s, nullptr), 0);
  ASSERT_EQ(vcore_sched_slot_add(&s, 1, 10, VCORE_SCHED_MODE_CAP), 0);
  uint64_t next = 0;
  vcore_sched_action a[4];
  uint64_t now = kSec;
  // Saturating report until the gate goes off.
  int off_at = -1;
  for (int i = 0; i < 200 && off_at < 0; i++, now += kMs) {
    vcore_sched_report r{1, 0, 1'000'000, 1'000'000, 0};
    const int n = vcore_sched_tick(&s, now, &r, 1, a, i == 50 ? 0 : 4, &next);
    for (int k = 0; k < n; k++) {
      if (a[k].kind == VCORE_SCHED_ACT_GATE_OFF) {
        off_at = i;
      }
    }
    if (i == 50) {
      EXPECT_FALSE(vcore_sched_slot_gated(&s, 1)) << "not gated without the action";
    }
  }
  EXPECT_GE(off_at, 0);
}

TEST(SchedStats, CountersAndWindows) {
  Harness h;
  const size_t t = h.AddTenant(1, 40, VCORE_SCHED_MODE_CAP, kMs);
  h.RunUntil(h.now() + 12 * kSec);
  vcore_sched_slot_stats st;
  ASSERT_EQ(vcore_sched_get_stats(&h.ctl(), 1, &st), 0);
  EXPECT_EQ(st.mode, VCORE_SCHED_MODE_CAP);
  EXPECT_EQ(st.share, 40);
  EXPECT_NEAR(st.share_1s_pm, 400, 30);
  EXPECT_NEAR(st.share_10s_pm, 400, 15);
  EXPECT_NEAR(static_cast<double>(st.busy_ns), static_cast<double>(h.gpu().At(t).busy_total), 2e6);
  // Off ~60 % of 12 s.
  EXPECT_NEAR(st.throttled_ns / 1e9, 12 * 0.6, 0.5);
  EXPECT_GT(st.overshoot_ns, 0u);  // drain after off edges
  EXPECT_LT(st.overshoot_ns, st.busy_ns / 5);
  EXPECT_GT(st.gate_actions, 12u * 2 * 15);  // ~20 periods a second, 2 edges each
}

// Measurements that arrive late and in lumps (200 ms samples, 250 ms late: the H200 shim host)
// are spread over the time they cover: the 1 s share does not jump by a sample's worth.
TEST(SchedStats, WindowsFollowUsageNotArrival) {
  Harness::Options o;
  o.report_period_ns = 200 * kMs;
  o.report_delay_ns = 250 * kMs;
  Harness h(o);
  h.AddTenant(1, 40, VCORE_SCHED_MODE_CAP, kMs);
  h.RunUntil(h.now() + 4 * kSec);
  uint32_t lo = 1000, hi = 0;
  for (int i = 0; i < 20; i++) {
    h.RunUntil(h.now() + 370 * kMs);
    vcore_sched_slot_stats st;
    ASSERT_EQ(vcore_sched_get_stats(&h.ctl(), 1, &st), 0);
    lo = std::min(lo, st.share_1s_pm);
    hi = std::max(hi, st.share_1s_pm);
    EXPECT_NEAR(st.share_10s_pm, 400, 15);
  }
  EXPECT_GE(lo, 380u);
  EXPECT_LE(hi, 420u);
}

TEST(SchedStats, WeightSlotReportsTimeslice) {
  Harness h;
  h.AddTenant(1, 30, VCORE_SCHED_MODE_WEIGHT, kMs);
  h.RunUntil(h.now() + 2 * kSec);
  vcore_sched_slot_stats st;
  ASSERT_EQ(vcore_sched_get_stats(&h.ctl(), 1, &st), 0);
  EXPECT_EQ(st.timeslice_us, 3000u);  // base map alone: no contention, no correction
  EXPECT_EQ(st.throttled_ns, 0u);
  EXPECT_GT(st.share_1s_pm, 990u);
}

TEST(SchedCtrl, DisableChannelsLayout) {
  NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS p;
  std::memset(&p, 0xff, sizeof(p));
  const vcs_u32 ch[3] = {0x5c000010, 0x5c000011, 0x5c000012};
  ASSERT_EQ(vcore_sched_fill_disable(&p, 0xc1d00042, ch, 3, 1), 0);
  const auto* b = reinterpret_cast<const unsigned char*>(&p);
  EXPECT_EQ(b[0], 1);  // bDisable
  vcs_u32 u;
  std::memcpy(&u, b + 4, 4);
  EXPECT_EQ(u, 3u);    // numChannels
  EXPECT_EQ(b[8], 1);  // bOnlyDisableScheduling
  EXPECT_EQ(b[9], 0);  // bRewindGpPut
  vcs_u64 ev;
  std::memcpy(&ev, b + 16, 8);
  EXPECT_EQ(ev, 0u);  // pRunlistPreemptEvent: NULL for user clients
  std::memcpy(&u, b + 24 + 4 * 2, 4);
  EXPECT_EQ(u, 0xc1d00042u);
  std::memcpy(&u, b + 280 + 4 * 2, 4);
  EXPECT_EQ(u, 0x5c000012u);
  std::memcpy(&u, b + 280 + 4 * 3, 4);
  EXPECT_EQ(u, 0u);  // rest zeroed
  ASSERT_EQ(vcore_sched_fill_disable(&p, 1, ch, 3, 0), 0);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[8], 0);
  EXPECT_EQ(vcore_sched_fill_disable(&p, 1, ch, 0, 1), -VCS_EINVAL);
  EXPECT_EQ(vcore_sched_fill_disable(&p, 1, ch, 65, 1), -VCS_EINVAL);
}

TEST(SchedCtrl, PreemptAndTimeslice) {
  NVA06C_CTRL_PREEMPT_PARAMS p;
  std::memset(&p, 0xff, sizeof(p));
  vcore_sched_fill_preempt(&p);
  EXPECT_EQ(p.bWait, 1);
  EXPECT_EQ(p.bManualTimeout, 0);
  EXPECT_EQ(p.timeoutUs, 0u);
  NVA06C_CTRL_TIMESLICE_PARAMS t;
  vcore_sched_fill_timeslice(&t, 3000);
  EXPECT_EQ(t.timesliceUs, 3000u);
}

}  // namespace
}  // namespace vgpu::sched_test

// The gate's protocol (kmod/compute_gate.c, top) in the guest: part of the compute_test program
// (guest.cmake joins this file to it; the harness makes one program per *.c/*.cc file).
//
// On the H200, FIFO_DISABLE_CHANNELS(bOnlyDisableScheduling=1) followed by the enable with no
// PREEMPT of the TSG in between stalled the process for good (compute-control-h200.md); the shim
// host froze 8 of 11 capped tenants while it enabled channels it had never disabled and issued
// on edges before the off edge's PREEMPT returned (commit e3a0af7). nvsim models the rule
// (nvsim_sched.c): such an enable wedges the TSG and is counted (enable_unpreempted); an enable
// of a channel that was not disabled is counted (enable_undisabled).
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compute_suite.h"

namespace compute_test {
namespace {

// The model itself, straight on nvsim: disable(onlySched) + enable with no PREEMPT wedges; with a
// PREEMPT between them it does not; an enable of an enabled channel is counted.
TEST_F(NvsimContract, EnableWithoutPreemptWedgesAndIsCounted) {
  uint32_t tsg[2] = {}, ch[2] = {};
  for (int i = 0; i < 2; ++i) {
    ASSERT_NO_FATAL_FAILURE(TsgWithChannel(&tsg[i], &ch[i]));
    nva06c_gpfifo_schedule_params on{1, 0, 0};
    ASSERT_EQ(Ctl(tsg[i], NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &on, 3), NV_OK);
  }
  const Contract c0 = ReadGpu(kGpu).contract;
  ASSERT_NE(c0.enable_unpreempted, ~0ull) << "nvsim shows the enable counters";
  // TSG 0: disable, PREEMPT(bWait=1), enable: throttled, never wedged.
  nva06c_preempt_params pp{1, 0, {}, 1000};
  EXPECT_EQ(DisableChannel(ch[0], true), NV_OK);
  EXPECT_EQ(Ctl(tsg[0], NVA06C_CTRL_CMD_PREEMPT, &pp, sizeof(pp)), NV_OK);
  EXPECT_EQ(DisableChannel(ch[0], false), NV_OK);
  EXPECT_EQ(DisableChannel(ch[0], false), NV_OK);  // an enable of an enabled channel: counted
  // TSG 1: disable, enable with no PREEMPT: wedged for good.
  EXPECT_EQ(DisableChannel(ch[1], true), NV_OK);
  EXPECT_EQ(DisableChannel(ch[1], false), NV_OK);
  const GpuView v = ReadGpu(kGpu);
  EXPECT_EQ(v.contract.enable_unpreempted - c0.enable_unpreempted, 1u);
  EXPECT_EQ(v.contract.enable_undisabled - c0.enable_undisabled, 1u);
  EXPECT_EQ(v.contract.wedged - c0.wedged, 1u);
  EXPECT_EQ(v.tsgs.at({client_, tsg[0]}).runnable, 1u);
  EXPECT_EQ(v.tsgs.at({client_, tsg[1]}).wedged, 1u);
  EXPECT_EQ(v.tsgs.at({client_, tsg[1]}).runnable, 0u);
}

// nvsim's preempt_delay_us for the scope of a test (module parameter, writable at run time).
class PreemptDelay {
 public:
  explicit PreemptDelay(unsigned us) { ok_ = Write(us); }
  ~PreemptDelay() { Write(0); }
  bool ok() const { return ok_; }

 private:
  static bool Write(unsigned us) {
    std::ofstream f("/sys/module/nvsim/parameters/preempt_delay_us");
    f << us;
    f.flush();
    return f.good();
  }
  bool ok_;
};

// Cap 90: off phases of ~5 ms per 50 ms period, and every PREEMPT(bWait=1) takes 15 ms (like one
// that waits for a running kernel on the H200; nvsim serves other calls meanwhile). An on edge
// issued when the controller asks for it comes before the PREEMPT returned and wedges the TSG
// (the kmod host before this protocol: the tenant stopped within the first period). With the
// protocol the enable waits for the PREEMPT: the tenant keeps running (it gets less than 90 %:
// each off phase lasts at least the PREEMPT's 15 ms, which no controller can shorten) and never
// more than the cap.
TEST_F(ComputeShares, PreemptSlowerThanTheOffPhaseIsWaitedFor) {
  const uint32_t gpu = 3, cap = 90;
  PreemptDelay delay(15000);
  ASSERT_TRUE(delay.ok());
  const Contract c0 = ReadGpu(gpu).contract;
  Slot slot(*nl_, gpu, cap, vgpu::kmod::ComputeMode::kCap, "slowpreempt");
  ASSERT_TRUE(slot.ok());
  auto t = StartTenant(slot, gpu);
  ASSERT_TRUE(t);
  SleepMs(1000);
  const Window win = MeasureWindow(gpu, slot, 1000);
  const GpuView& v1 = win.v1;
  const double got = win.Share(*t);
  const double allow = win.late_pts;
  const auto info = slot.Get();
  EXPECT_EQ(v1.contract.enable_unpreempted - c0.enable_unpreempted, 0u)
      << "an on edge enabled channels before the off edge's PREEMPT returned";
  EXPECT_EQ(v1.contract.wedged - c0.wedged, 0u);
  EXPECT_EQ(v1.contract.enable_undisabled - c0.enable_undisabled, 0u);
  EXPECT_EQ(v1.Of(*t).wedged, 0u);
  EXPECT_GT(got, 20.0) << "the tenant stalled";
  EXPECT_LT(got, cap + kBound + allow) << "the cap is a hard limit";
  EXPECT_GT(v1.Of(*t).preempt_calls, 0u);
  EXPECT_GT(info.stats[VGPU_STAT_GATE_ACTIONS], 0u);
  EXPECT_EQ(info.stats[VGPU_STAT_COMPUTE_ERRORS], 0u);
  Log("gate protocol, cap 90 with a 15 ms PREEMPT: " + Pct(got) + " % (1 s)" +
      (allow > 0 ? " (+" + Pct(allow) + " stalled)" : "") + ", nvsim: enables before the PREEMPT " +
      std::to_string(v1.contract.enable_unpreempted - c0.enable_unpreempted) + ", wedged " +
      std::to_string(v1.contract.wedged - c0.wedged) + ", PREEMPTs " +
      std::to_string(v1.Of(*t).preempt_calls) + ", gate edges " +
      std::to_string(info.stats[VGPU_STAT_GATE_ACTIONS]));
  t->Send('q');
  EXPECT_EQ(t->Wait(), 0);
}

// Cap 10 (off ~45 ms of each 50 ms): four more tenants join the slot one after another, each TSG
// becoming scheduled at its own point of the cycle, most of them while the slot is gated off.
// The controller sees a new TSG at its next tick, which in an off phase is the on edge: an on
// edge that enables every scheduled TSG's channels enables channels it never disabled (the kmod
// host before this protocol). With it, the on edge enables only what this host disabled, and the
// new TSG is gated from the next off edge on. Every tenant runs, the slot stays within its cap.
TEST_F(ComputeShares, TsgScheduledWhileGatedIsNotEnabledByTheOnEdge) {
  const uint32_t gpu = 4, cap = 10;
  const Contract c0 = ReadGpu(gpu).contract;
  Slot slot(*nl_, gpu, cap, vgpu::kmod::ComputeMode::kCap, "joiners");
  ASSERT_TRUE(slot.ok());
  std::vector<std::unique_ptr<Tenant>> ts;
  ts.push_back(StartTenant(slot, gpu));
  ASSERT_TRUE(ts.back());
  ASSERT_TRUE(WaitGated(gpu, *ts.back(), 2000));
  for (int i = 0; i < 4; ++i) {
    SleepMs(37 + 23 * i);  // a different point of the 50 ms cycle each time
    ts.push_back(StartTenant(slot, gpu));
    ASSERT_TRUE(ts.back());
  }
  SleepMs(300);
  // The controller's side of the window: what the joiners left it owing, and the GPU time it
  // measured while the slot was gated off (a TSG running before its first off edge).
  const auto before = slot.Get();
  const Window win = MeasureWindow(gpu, slot, 1000);
  const GpuView& v1 = win.v1;
  double sum = 0;
  std::string row;
  for (auto& t : ts) {
    const double p = win.Share(*t);
    EXPECT_GT(p, 0.0) << "a tenant stalled";
    EXPECT_EQ(v1.Of(*t).wedged, 0u);
    sum += p;
    row += " " + Pct(p);
  }
  const double allow = win.late_pts;
  EXPECT_LT(sum, cap + kBound + allow) << "the slot's cap";
  EXPECT_EQ(v1.contract.enable_undisabled - c0.enable_undisabled, 0u)
      << "an on edge enabled channels this host never disabled";
  EXPECT_EQ(v1.contract.enable_unpreempted - c0.enable_unpreempted, 0u);
  EXPECT_EQ(v1.contract.wedged - c0.wedged, 0u);
  Log("gate protocol, cap 10, 4 TSGs joining mid-cycle: slot " + Pct(sum) + " % (tenants" + row +
      "), debt at the window's start " + Pct(before.stats[VGPU_STAT_DEBT_NS] / 1e6) +
      " ms, GPU time measured while gated off before it " +
      Pct(before.stats[VGPU_STAT_OVERSHOOT_NS] / 1e6) +
      " ms, nvsim: enables of never-disabled channels " +
      std::to_string(v1.contract.enable_undisabled - c0.enable_undisabled) +
      ", enables before the PREEMPT " +
      std::to_string(v1.contract.enable_unpreempted - c0.enable_unpreempted));
  for (auto& t : ts) {
    t->Send('q');
    EXPECT_EQ(t->Wait(), 0);
  }
}

}  // namespace
}  // namespace compute_test

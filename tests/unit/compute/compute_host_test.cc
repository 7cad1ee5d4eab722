// The shim host (shim/compute/ComputeHost) against a fake RM: which controls it issues, on which
// objects, with which parameters; that its perfmon measurement closes the loop; that Stop()
// leaves every channel enabled. Real threads and real time, so tolerances are wide.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "shim/compute/compute_host.h"
#include "shim/compute/perfmon.h"

extern "C" {
#include "sched/vcore_sched_ctrl.h"
}

namespace vgpu::shim::compute {
namespace {

constexpr uint32_t kClient = 0xc1d00001, kDevice = 0x5c000001, kSub = 0x5c000002;
constexpr uint32_t kGrTsg = 0x5c000010, kCopyTsg = 0x5c000020;

// A saturating tenant on a fake GPU: busy whenever its channels are enabled; perfmon samples
// every 10 ms name this process.
class FakeRm {
 public:
  struct Call {
    uint32_t client, object, cmd;
    std::vector<uint8_t> params;
  };

  static int Control(void* ctx, uint32_t c, uint32_t o, uint32_t cmd, void* p, uint32_t size,
                     uint32_t* status) {
    return static_cast<FakeRm*>(ctx)->Do(c, o, cmd, p, size, status);
  }

  int Do(uint32_t c, uint32_t o, uint32_t cmd, void* p, uint32_t size, uint32_t* status) {
    std::lock_guard<std::mutex> lock(mu);
    Advance();
    *status = 0;
    calls.push_back({c, o, cmd, {static_cast<uint8_t*>(p), static_cast<uint8_t*>(p) + size}});
    const bool on_gr_tsg = o == kGrTsg && (cmd == VCS_NVA06C_CTRL_CMD_PREEMPT ||
                                           cmd == VCS_NVA06C_CTRL_CMD_SET_TIMESLICE);
    const bool on_gr_channels = cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && size >= 284 &&
                                (Load32(p, 280) & 0xffffff00u) == 0x5c000100u;
    if ((on_gr_tsg || on_gr_channels) && !gr_scheduled) {
      unscheduled_controls++;  // what froze the tenant on the H200 (compute_host.cc)
    }
    if (cmd == 0xd05) {  // GET_CHILD_HANDLE
      uint32_t* q = static_cast<uint32_t*>(p);
      EXPECT_EQ(q[0], kDevice);
      EXPECT_EQ(q[1], 0x2080u);
      q[2] = kSub;
    } else if (cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
      EXPECT_EQ(size, 536u);
      EXPECT_EQ(o, kSub);
      enabled = static_cast<uint8_t*>(p)[0] == 0;
      CheckProtocol(static_cast<const uint8_t*>(p));
      if (!enabled && block_disable_ms != 0) {  // the control thread stuck in RM, gated off
        const int ms = block_disable_ms;
        block_disable_ms = 0;
        mu.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        mu.lock();
      }
    } else if (cmd == VCS_NVA06C_CTRL_CMD_PREEMPT) {
      if (preempt_block_ms != 0) {
        // A long kernel: PREEMPT(bWait=1) returns only when it ends.
        mu.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(preempt_block_ms));
        mu.lock();
      }
      preempted[o] = true;  // off the GPU once the PREEMPT has returned
    } else if (cmd == kCtrlPerfmonSamplesV2) {
      EXPECT_EQ(size, kPerfmonParamsSize);
      if (block_perfmon_ms != 0) {
        const int ms = block_perfmon_ms;
        block_perfmon_ms = 0;
        mu.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        mu.lock();
      }
      Fill(static_cast<uint8_t*>(p));
    }
    return 0;
  }

  // The gate's protocol as the H200 showed it (compute_gate.cc, "The gate's protocol"): a channel
  // disabled with bOnlyDisableScheduling=1 and enabled again before a PREEMPT of its TSG returned
  // stalled the process for good; an enable is only ever owed to a channel the gate disabled.
  void CheckProtocol(const uint8_t* p) {
    vcs_disable_channels_params d;
    memcpy(&d, p, sizeof d);
    for (uint32_t i = 0; i < d.numChannels && i < 64; i++) {
      const uint32_t ch = d.hChannelList[i];
      const uint32_t tsg = TsgOf(ch);
      if (d.bDisable) {
        disabled_channels.insert(ch);
        preempted[tsg] = false;
      } else if (disabled_channels.erase(ch) == 0) {
        enable_never_disabled++;
      } else if (!preempted[tsg]) {
        enable_before_preempt++;
      }
    }
  }
  static uint32_t TsgOf(uint32_t channel) {  // the fixtures' handle layout (AddObjects)
    return (channel & 0xffffff00u) == 0x5c000100u   ? kGrTsg
           : (channel & 0xffffff00u) == 0x5c000200u ? kCopyTsg
                                                    : 0x5c000030u;
  }

  // Closes 10 ms samples up to now.
  void Advance() {
    const uint64_t now = MonotonicNs();
    if (last == 0) {
      last = sample_start = now;
      return;
    }
    if (enabled || now < busy_until_ns) {
      busy_in_sample += now - last;
      busy_total += now - last;
    }
    last = now;
    while (now - sample_start >= 10'000'000) {
      sample_start += 10'000'000;
      samples.push_back({sample_start, static_cast<uint32_t>(std::min<uint64_t>(
                                           10000, busy_in_sample * 10000 / 10'000'000))});
      busy_in_sample = 0;
    }
  }

  void Fill(uint8_t* b) {
    PerfmonPrepare(b);
    const uint32_t n = std::min<size_t>(samples.size(), kPerfmonSampleCount);
    const uint32_t count = n, tracker = n % kPerfmonSampleCount;
    memcpy(b + 8, &count, 4);
    memcpy(b + 12, &tracker, 4);
    for (uint32_t i = 0; i < n; i++) {
      const auto& s = samples[samples.size() - n + i];
      uint8_t* e = b + 16 + static_cast<size_t>(i) * kPerfmonSampleSize;
      memcpy(e, &s.first, 8);
      memcpy(e + kSampleGrOffset, &s.second, 4);
      const uint32_t pid = static_cast<uint32_t>(getpid());
      memcpy(e + kSampleGrOffset + 8, &pid, 4);
    }
    if (samples.size() > kPerfmonSampleCount - 1) {
      samples.erase(samples.begin(), samples.end() - (kPerfmonSampleCount - 1));
    }
  }

  static uint32_t Load32(const void* p, size_t off) {
    uint32_t v;
    memcpy(&v, static_cast<const uint8_t*>(p) + off, 4);
    return v;
  }

  std::mutex mu;
  bool gr_scheduled = false;  // GPFIFO_SCHEDULE(bEnable=1) done on the GR TSG
  int unscheduled_controls = 0;
  int preempt_block_ms = 0;
  int block_disable_ms = 0;
  int block_perfmon_ms = 0;
  std::vector<Call> calls;
  std::set<uint32_t> disabled_channels;
  std::map<uint32_t, bool> preempted;  // TSG -> a PREEMPT returned since its last disable
  int enable_before_preempt = 0, enable_never_disabled = 0;
  bool enabled = true;
  uint64_t busy_until_ns = 0;  // busy whatever the gate until then (a kernel never evicted)
  uint64_t last = 0, sample_start = 0, busy_in_sample = 0, busy_total = 0;
  std::vector<std::pair<uint64_t, uint32_t>> samples;
};

// What libcuda does at the end of context setup (nvidia-rm-abi.md §6.1), as RM and the hooks see
// it.
void Schedule(ComputeHost& h, FakeRm& rm) {
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    rm.gr_scheduled = true;
  }
  h.OnTsgScheduled(kClient, kGrTsg, true);
  h.OnTsgScheduled(kClient, kCopyTsg, true);
}

// A CUDA context's compute objects: the GR TSG with 8 channels, a copy TSG with 4, scheduled
// unless the test is about the setup before the schedule.
void AddObjects(ComputeHost& h, FakeRm& rm, bool schedule = true) {
  h.OnTsg(kClient, kDevice, kGrTsg, 1);
  h.OnTsg(kClient, kDevice, kCopyTsg, 11);
  for (uint32_t i = 0; i < 8; i++) {
    h.OnChannel(kClient, kGrTsg, 0x5c000100 + i);
  }
  for (uint32_t i = 0; i < 4; i++) {
    h.OnChannel(kClient, kCopyTsg, 0x5c000200 + i);
  }
  if (schedule) {
    Schedule(h, rm);
  }
}

// A cap (or weight) slot controlled from the schedule on (settling has its own tests), measured
// every measure_ns.
ComputeConfig Config(uint32_t share, uint64_t measure_ns = 100'000'000,
                     uint32_t mode = VCORE_SCHED_MODE_CAP) {
  ComputeConfig cfg;
  cfg.settle_ns = 0;
  cfg.share = share;
  cfg.mode = mode;
  cfg.measure_ns = measure_ns;
  return cfg;
}

// Before Stop(), whose enable does not wait for a PREEMPT still in RM.
void ExpectGateProtocolKept(FakeRm& rm) {
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_EQ(rm.enable_before_preempt, 0) << "a channel enabled before its TSG's PREEMPT returned";
  EXPECT_EQ(rm.enable_never_disabled, 0) << "a channel enabled that the gate never disabled";
}

TEST(ComputeHost, CapGatesGrChannelsAndHoldsTheShare) {
  FakeRm rm;
  ComputeConfig cfg = Config(30, 20'000'000);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  uint64_t busy0;
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    rm.Advance();
    busy0 = rm.busy_total;
  }
  const uint64_t t0 = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  double share;
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    rm.Advance();
    share = static_cast<double>(rm.busy_total - busy0) / static_cast<double>(MonotonicNs() - t0);
  }
  ExpectGateProtocolKept(rm);
  h.Stop();
  EXPECT_NEAR(share, 0.30, 0.08);
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_TRUE(rm.enabled) << "Stop() leaves the channels enabled";
  int disables = 0, preempts = 0, perfmon = 0;
  for (const auto& c : rm.calls) {
    EXPECT_EQ(c.client, kClient);
    if (c.cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
      disables++;
      vcs_disable_channels_params p;
      memcpy(&p, c.params.data(), sizeof p);
      ASSERT_EQ(p.numChannels, 8u) << "GR channels only, not the copy TSG's";
      std::set<uint32_t> ch(p.hChannelList, p.hChannelList + 8);
      EXPECT_EQ(ch.size(), 8u);
      EXPECT_EQ(*ch.begin(), 0x5c000100u);
      EXPECT_EQ(p.bOnlyDisableScheduling, p.bDisable);
    } else if (c.cmd == VCS_NVA06C_CTRL_CMD_PREEMPT) {
      preempts++;
      EXPECT_EQ(c.object, kGrTsg);
      EXPECT_EQ(c.params[0], 1) << "bWait";
    } else if (c.cmd == kCtrlPerfmonSamplesV2) {
      perfmon++;
    }
  }
  EXPECT_GT(disables, 20);
  EXPECT_GT(preempts, 10);
  EXPECT_GT(perfmon, 20);
  EXPECT_EQ(h.Counters().control_errors, 0u);
}

// A tenant capped before its context exists: nothing touches the TSG while libcuda sets it up
// (the H200 froze such a tenant for good), and the cap acts from the schedule on.
TEST(ComputeHost, ControlsWaitForTheTsgSchedule) {
  FakeRm rm;
  ComputeConfig cfg = Config(10, 20'000'000);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm, /*schedule=*/false);
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // 8 controller periods
  auto count = [&rm](uint32_t cmd) {
    std::lock_guard<std::mutex> lock(rm.mu);
    int n = 0;
    for (const auto& c : rm.calls) {
      n += c.cmd == cmd;
    }
    return n;
  };
  EXPECT_EQ(count(VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS), 0);
  EXPECT_EQ(count(VCS_NVA06C_CTRL_CMD_PREEMPT), 0);
  Schedule(h, rm);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_GT(count(VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS), 10) << "gated once scheduled";
  EXPECT_GT(count(VCS_NVA06C_CTRL_CMD_PREEMPT), 3);
  ExpectGateProtocolKept(rm);
  EXPECT_TRUE(h.Stop());
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_EQ(rm.unscheduled_controls, 0);
  EXPECT_TRUE(rm.enabled);
}

// A scheduled TSG is left alone while it settles, then joins the gate at once: here a second
// context settles while a long kernel of the first holds the controller fully off (duty 0, no
// gate edges), and its channels must still be disabled as it settles, not after the debt.
TEST(ComputeHost, SettledTsgJoinsTheGateEvenWhenFullyOff) {
  constexpr uint32_t kTsg2 = 0x5c000030;
  FakeRm rm;
  ComputeConfig cfg;
  cfg.share = 10;
  cfg.measure_ns = 20'000'000;
  cfg.settle_ns = 300'000'000;
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  auto disabled = [&rm](uint32_t channel) {  // DISABLE_CHANNELS(1) calls naming the channel
    std::lock_guard<std::mutex> lock(rm.mu);
    int n = 0;
    for (const auto& c : rm.calls) {
      vcs_disable_channels_params p;
      if (c.cmd != VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS || c.params.size() != sizeof p) {
        continue;
      }
      memcpy(&p, c.params.data(), sizeof p);
      n += p.bDisable && std::count(p.hChannelList, p.hChannelList + p.numChannels, channel);
    }
    return n;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(disabled(0x5c000100), 0) << "gated while settling";
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_GT(disabled(0x5c000100), 0) << "gated once settled";
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    rm.busy_until_ns = MonotonicNs() + 3'000'000'000;  // a kernel that ignores the gate
  }
  for (int i = 0; i < 200 && h.Stats().duty_pm != 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(h.Stats().duty_pm, 0u) << "the debt holds the slot fully off";
  h.OnTsg(kClient, kDevice, kTsg2, 1);
  h.OnChannel(kClient, kTsg2, 0x5c000300);
  h.OnTsgScheduled(kClient, kTsg2, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(disabled(0x5c000300), 0) << "the new TSG is left alone while it settles";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(h.Stats().duty_pm, 0u) << "still fully off: no gate edge has come since";
  EXPECT_GT(disabled(0x5c000300), 0) << "a settled TSG joins the gate at once";
  ExpectGateProtocolKept(rm);
  EXPECT_TRUE(h.Stop());
}

// PREEMPT that blocks (a long kernel on the H200) must not stall the control loop, and the gate
// must not enable the channels before it returns (the H200 froze a tenant enabled between its
// disable and its PREEMPT): the on edges are owed meanwhile, and the first tick after the PREEMPT
// returned pays them. Stop() still returns.
TEST(ComputeHost, BlockingPreemptDefersTheEnableNotTheLoop) {
  FakeRm rm;
  rm.preempt_block_ms = 700;
  ComputeConfig cfg = Config(50);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  auto count = [&rm](uint8_t disable) {
    std::lock_guard<std::mutex> lock(rm.mu);
    int n = 0;
    for (const auto& c : rm.calls) {
      n += c.cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && c.params[0] == disable;
    }
    return n;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(count(0), 0) << "no enable while the first off edge's PREEMPT is in RM";
  const uint64_t ticks = h.Counters().ticks;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GT(h.Counters().ticks, ticks + 5) << "the control loop keeps ticking";
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the PREEMPT returned at 700
  EXPECT_GE(count(0), 1) << "the owed enable is paid once the PREEMPT returned";
  ExpectGateProtocolKept(rm);
  EXPECT_TRUE(h.Stop());
  const ComputeCounters c = h.Counters();
  EXPECT_GE(c.preempt_max_ns, 600'000'000u);
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_TRUE(rm.enabled);
}

// A PREEMPT slower than the off phase (cap 80: 10 ms of each 50 ms; PREEMPT 15 ms): every enable
// still comes after the PREEMPT of its off edge, and the gate keeps cycling.
TEST(ComputeHost, ShortOffPhaseStillEnablesAfterThePreempt) {
  FakeRm rm;
  rm.preempt_block_ms = 15;
  ComputeConfig cfg = Config(80, 20'000'000);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  ExpectGateProtocolKept(rm);
  EXPECT_GT(h.Counters().preempts, 5u) << "the gate still cycles";
  EXPECT_TRUE(h.Stop());
}

// A TSG that settles while the slot is gated on is left alone until the next off edge: the on
// phase's re-apply never enables channels the gate did not disable.
TEST(ComputeHost, TsgSettlingWhileOnIsNotEnabled) {
  FakeRm rm;
  ComputeConfig cfg;
  cfg.share = 95;  // on for 95 % of the time: the settle lands in an on phase
  cfg.measure_ns = 20'000'000;
  cfg.settle_ns = 100'000'000;
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  for (int i = 0; i < 5; i++) {
    const uint32_t tsg = 0x5c000030;
    h.OnTsg(kClient, kDevice, tsg, 1);
    h.OnChannel(kClient, tsg, 0x5c000300 + i);
    h.OnTsgScheduled(kClient, tsg, true);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    h.OnTsgFreed(kClient, tsg);
  }
  ExpectGateProtocolKept(rm);
  EXPECT_TRUE(h.Stop());
}

// The control thread stuck inside an RM call while the tenant is gated off: the watchdog gates
// it back on without waiting for that thread.
TEST(ComputeHost, WatchdogReenablesWhenTheControlThreadIsStuck) {
  FakeRm rm;
  rm.block_disable_ms = 1500;
  ComputeConfig cfg = Config(30);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // stuck since the first off edge
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    EXPECT_TRUE(rm.enabled) << "watchdog re-enabled while the control thread is stuck";
  }
  h.Stop();
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_TRUE(rm.enabled);
}

// A measurement that blocks in RM does not stop the gating (the controller runs open loop).
TEST(ComputeHost, BlockedMeasurementKeepsGating) {
  FakeRm rm;
  ComputeConfig cfg = Config(50);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    rm.block_perfmon_ms = 1000;
  }
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  int ons = 0;
  {
    std::lock_guard<std::mutex> lock(rm.mu);
    for (const auto& c : rm.calls) {
      ons += c.cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && c.params[0] == 0;
    }
  }
  EXPECT_GE(ons, 8) << "gate edges continue while the perfmon read waits";
  EXPECT_TRUE(h.Stop());
}

TEST(ComputeHost, WeightSetsTimesliceAndNeverGates) {
  FakeRm rm;
  ComputeConfig cfg = Config(30, 100'000'000, VCORE_SCHED_MODE_WEIGHT);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  h.Stop();
  std::lock_guard<std::mutex> lock(rm.mu);
  int timeslices = 0;
  for (const auto& c : rm.calls) {
    EXPECT_NE(c.cmd, VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS);
    if (c.cmd == VCS_NVA06C_CTRL_CMD_SET_TIMESLICE) {
      timeslices++;
      EXPECT_EQ(c.object, kGrTsg);
      uint64_t us;
      memcpy(&us, c.params.data(), 8);
      EXPECT_EQ(us, 3000u);
    }
  }
  EXPECT_GE(timeslices, 1);
}

TEST(ComputeHost, StopWhileGatedReenables) {
  FakeRm rm;
  ComputeConfig cfg = Config(5);
  ComputeHost h(cfg, FakeRm::Control, &rm);
  AddObjects(h, rm);
  ASSERT_TRUE(h.Start());
  for (int i = 0; i < 200; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(rm.mu);
    if (!rm.enabled) {
      break;
    }
  }
  h.Stop();
  std::lock_guard<std::mutex> lock(rm.mu);
  EXPECT_TRUE(rm.enabled);
}

// Several processes of one slot and others outside it on one fake GPU. Each process has its own
// RM (the ctx), the same handles, and its GR channels enabled or not; the GPU time-slices
// between the saturating processes whose channels are enabled, so each gets dt / n of them.
// Every 10 ms a perfmon sample closes: the GPU's busy fraction and the process on the engine at
// that instant (round robin among the enabled ones; none: unattributed, as on the H200).
class SlotGpu {
 public:
  struct Proc {
    uint32_t pid;
    bool saturating;
    bool enabled = true;
    uint64_t busy_ns = 0;  // GPU time this process got
  };
  struct Rm {
    SlotGpu* gpu;
    size_t proc;
  };

  explicit SlotGpu(std::vector<Proc> procs) : procs_(std::move(procs)) {
    for (size_t i = 0; i < procs_.size(); i++) {
      rms_.push_back({this, i});
    }
  }
  void* RmOf(size_t proc) { return &rms_[proc]; }

  static int Control(void* ctx, uint32_t, uint32_t, uint32_t cmd, void* p, uint32_t,
                     uint32_t* status) {
    auto* rm = static_cast<Rm*>(ctx);
    std::lock_guard<std::mutex> lock(rm->gpu->mu_);
    rm->gpu->Advance();
    *status = 0;
    if (cmd == 0xd05) {
      static_cast<uint32_t*>(p)[2] = kSub;
    } else if (cmd == VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
      rm->gpu->procs_[rm->proc].enabled = static_cast<uint8_t*>(p)[0] == 0;
    } else if (cmd == kCtrlPerfmonSamplesV2) {
      rm->gpu->Fill(static_cast<uint8_t*>(p));
    }
    return 0;
  }

  // GPU time each process got, up to now.
  std::vector<uint64_t> Busy() {
    std::lock_guard<std::mutex> lock(mu_);
    Advance();
    std::vector<uint64_t> out;
    for (const Proc& p : procs_) {
      out.push_back(p.busy_ns);
    }
    return out;
  }
  bool AllEnabled() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Proc& p : procs_) {
      if (!p.enabled) {
        return false;
      }
    }
    return true;
  }

 private:
  static constexpr uint64_t kSampleNs = 10'000'000;

  // The state only changes inside Control(), so it is constant since the last call: split the
  // elapsed time exactly at sample boundaries.
  void Advance() {
    const uint64_t now = MonotonicNs();
    if (last_ == 0) {
      last_ = sample_start_ = now;
      return;
    }
    std::vector<size_t> on;
    for (size_t i = 0; i < procs_.size(); i++) {
      if (procs_[i].enabled && procs_[i].saturating) {
        on.push_back(i);
      }
    }
    while (last_ < now) {
      const uint64_t to = std::min(now, sample_start_ + kSampleNs);
      const uint64_t dt = to - last_;
      if (!on.empty()) {
        busy_in_sample_ += dt;
        for (size_t i : on) {
          procs_[i].busy_ns += dt / on.size();
        }
      }
      last_ = to;
      if (to == sample_start_ + kSampleNs) {
        sample_start_ = to;
        const uint32_t pid = on.empty() ? kGpumonPidInvalid : procs_[on[n_ % on.size()]].pid;
        samples_.push_back({to, static_cast<uint32_t>(busy_in_sample_ * 10000 / kSampleNs), pid});
        busy_in_sample_ = 0;
        n_++;
      }
    }
  }

  void Fill(uint8_t* b) {
    PerfmonPrepare(b);
    const size_t n = std::min<size_t>(samples_.size(), kPerfmonSampleCount);
    for (size_t i = 0; i < n; i++) {
      const Sample& s = samples_[samples_.size() - n + i];
      uint8_t* e = b + 16 + i * kPerfmonSampleSize;
      memcpy(e, &s.ts, 8);
      memcpy(e + kSampleGrOffset, &s.util, 4);
      memcpy(e + kSampleGrOffset + 8, &s.pid, 4);
    }
    if (samples_.size() > kPerfmonSampleCount) {
      samples_.erase(samples_.begin(), samples_.end() - kPerfmonSampleCount);
    }
  }

  struct Sample {
    uint64_t ts;
    uint32_t util, pid;
  };
  std::mutex mu_;
  std::vector<Proc> procs_;
  std::vector<Rm> rms_;
  uint64_t last_ = 0, sample_start_ = 0, busy_in_sample_ = 0, n_ = 0;
  std::vector<Sample> samples_;
};

// The slot's membership as the ledger would answer it.
bool InSlot(void* ctx, uint32_t pid) { return static_cast<std::set<uint32_t>*>(ctx)->count(pid); }

struct Published {
  std::mutex mu;
  ComputePublication last;  // unattributed not kept
  uint64_t unattributed_ns = 0, calls = 0;
};
void Record(void* ctx, const ComputePublication& p) {
  auto* pub = static_cast<Published*>(ctx);
  std::lock_guard<std::mutex> lock(pub->mu);
  pub->last = p;
  pub->last.unattributed = nullptr;
  for (uint32_t i = 0; i < p.n_unattributed; i++) {
    pub->unattributed_ns += p.unattributed[i].busy_ns;
  }
  pub->calls++;
}

// One controller per process of the slot, each gating only its own TSG, each measuring the
// slot through the membership predicate.
struct SlotHosts {
  SlotGpu& gpu;
  std::set<uint32_t> members;
  std::vector<std::unique_ptr<Published>> pub;  // per host
  std::vector<std::unique_ptr<ComputeHost>> hosts;

  SlotHosts(SlotGpu& g, std::set<uint32_t> m, uint32_t share, size_t n) : gpu(g), members(m) {
    for (size_t i = 0; i < n; i++) {
      ComputeConfig cfg;
      cfg.settle_ns = 0;
      cfg.share = share;
      cfg.measure_ns = 20'000'000;
      cfg.pid = 1001 + static_cast<uint32_t>(i);
      cfg.slot_member = InSlot;
      cfg.slot_member_ctx = &members;
      pub.push_back(std::make_unique<Published>());
      cfg.publish = Record;
      cfg.publish_ctx = pub.back().get();
      cfg.publish_ns = 100'000'000;
      hosts.push_back(std::make_unique<ComputeHost>(cfg, SlotGpu::Control, gpu.RmOf(i)));
      ComputeHost& h = *hosts.back();
      h.OnTsg(kClient, kDevice, kGrTsg, 1);
      for (uint32_t c = 0; c < 8; c++) {
        h.OnChannel(kClient, kGrTsg, 0x5c000100 + c);
      }
      h.OnTsgScheduled(kClient, kGrTsg, true);
    }
  }
  // Staggered across the controller's 50 ms period, as processes started at different times
  // are: their on-phases do not coincide, so the slot's busy is the union of them.
  bool Start() {
    for (auto& h : hosts) {
      if (!h->Start()) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50 / hosts.size()));
    }
    return true;
  }
  void Stop() {
    for (auto& h : hosts) {
      EXPECT_TRUE(h->Stop());
    }
  }
};

// Fraction of wall time, over `ms` after a `warm_ms` warm-up, that processes [0, n) got.
double ShareOf(SlotGpu& gpu, size_t n, int warm_ms, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(warm_ms));
  auto sum = [n](const std::vector<uint64_t>& b) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
      s += b[i];
    }
    return s;
  };
  const uint64_t b0 = sum(gpu.Busy()), t0 = MonotonicNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  const uint64_t b1 = sum(gpu.Busy());
  return static_cast<double>(b1 - b0) / static_cast<double>(MonotonicNs() - t0);
}

// Two saturating processes of one slot capped at 30: the slot gets 30, not 30 each (each
// controller measuring only its own pid gave the slot ~0.5 here).
TEST(ComputeHostSlot, TwoProcessesOfOneSlotShareTheCap) {
  SlotGpu gpu({{1001, true}, {1002, true}});
  SlotHosts slot(gpu, {1001, 1002}, 30, 2);
  ASSERT_TRUE(slot.Start());
  const double share = ShareOf(gpu, 2, 1000, 2000);
  const ComputeCounters a = slot.hosts[0]->Counters(), b = slot.hosts[1]->Counters();
  slot.Stop();
  printf("slot share %.3f (two saturating members, cap 30)\n", share);
  EXPECT_NEAR(share, 0.30, 0.06) << "the slot's total";
  EXPECT_TRUE(gpu.AllEnabled()) << "Stop() leaves every member's channels enabled";
  EXPECT_GT(a.member_busy_ns, 0u) << "each sees the other's samples as the slot's";
  EXPECT_GT(b.member_busy_ns, 0u);
  EXPECT_EQ(a.foreign_busy_ns + b.foreign_busy_ns, 0u);
  // What each publishes for the manager: its own busy (the members' sum is the slot's), its
  // gate's throttled time, the slot's share; the last publication comes at Stop().
  for (size_t i = 0; i < 2; i++) {
    Published& p = *slot.pub[i];
    std::lock_guard<std::mutex> lock(p.mu);
    EXPECT_GE(p.calls, 10u) << i;
    EXPECT_EQ(p.last.busy_ns, slot.hosts[i]->Counters().own_busy_ns) << i;
    EXPECT_GT(p.last.busy_ns, 0u) << i;
    EXPECT_GT(p.last.throttled_ns, 1'000'000'000u) << i << ": gated off most of the 3 s";
    EXPECT_NEAR(p.last.achieved_share_1s_pm, 300, 120) << i;
    // Over 10 s: the 3 s run so far, its uncapped start included, so only roughly the cap.
    EXPECT_NEAR(p.last.achieved_share_10s_pm, 300, 200) << i;
  }
}

// Three saturating processes capped at 20: the slot gets 20 (each measuring only its own pid
// gave the slot 0.4-0.5 here: each held itself to 20, the on-phases apart).
TEST(ComputeHostSlot, ThreeProcessesOfOneSlotShareTheCap) {
  SlotGpu gpu({{1001, true}, {1002, true}, {1003, true}});
  SlotHosts slot(gpu, {1001, 1002, 1003}, 20, 3);
  ASSERT_TRUE(slot.Start());
  const double share = ShareOf(gpu, 3, 1000, 2000);
  slot.Stop();
  printf("slot share %.3f (three saturating members, cap 20)\n", share);
  EXPECT_NEAR(share, 0.20, 0.06) << "the slot's total";
  EXPECT_TRUE(gpu.AllEnabled());
}

// One process of the slot idle: the other is held to the whole share, not half of it.
TEST(ComputeHostSlot, AnIdleMemberLeavesTheShareToTheOther) {
  SlotGpu gpu({{1001, true}, {1002, false}});
  SlotHosts slot(gpu, {1001, 1002}, 30, 2);
  ASSERT_TRUE(slot.Start());
  const double share = ShareOf(gpu, 2, 1000, 1500);
  slot.Stop();
  printf("slot share %.3f (one member idle, cap 30)\n", share);
  EXPECT_NEAR(share, 0.30, 0.08);
}

// A saturating process outside the slot (pid 2002, not a member) shares the GPU: its samples
// are foreign, the members' are the slot's. The slot gets up to its cap (0.28-0.31 here; each
// member's duty is at most 1.1 x share, kmod/core/sched/vcore_sched.c, and the outsider takes
// its time-slices in every on-phase). Counting the outsider as the slot's would gate the slot
// almost fully off.
TEST(ComputeHostSlot, ANonMembersBusyIsForeign) {
  SlotGpu gpu({{1001, true}, {1002, true}, {2002, true}});
  SlotHosts slot(gpu, {1001, 1002}, 30, 2);
  ASSERT_TRUE(slot.Start());
  const double share = ShareOf(gpu, 2, 1000, 2000);
  const ComputeCounters a = slot.hosts[0]->Counters();
  const std::vector<uint64_t> busy = gpu.Busy();
  slot.Stop();
  printf("slot share %.3f, outsider %.3f of the slot's time (cap 30)\n", share,
         static_cast<double>(busy[2]) / static_cast<double>(busy[0] + busy[1]));
  EXPECT_GT(share, 0.12) << "the outsider's busy is not the slot's";
  EXPECT_LT(share, 0.36) << "both members' busy is the slot's";
  EXPECT_GT(a.foreign_busy_ns, 0u);
  EXPECT_GT(a.member_busy_ns, 0u);
  EXPECT_GT(busy[2], busy[0] + busy[1]) << "the outsider runs whenever it can";
}

TEST(Perfmon, ConsumesOnlyNewSamplesAndAttributesByPid) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  auto put = [&](uint32_t idx, uint64_t ts, uint32_t util, uint32_t pid) {
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(idx) * kPerfmonSampleSize;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &pid, 4);
  };
  PerfmonPrepare(buf.data());
  const uint64_t p = 100'000'000;  // 100 ms in ns
  for (uint32_t i = 0; i < 5; i++) {
    put(i, (i + 1) * p, 5000, i % 2 ? 42 : 7);
  }
  uint32_t count = 5, tracker = 5;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  uint64_t last = 0;
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 0u) << "the first read only primes";
  EXPECT_EQ(last, 5 * p);
  put(5, 6 * p, 2500, 42);
  put(6, 7 * p, 10000, 7);
  count = tracker = 7;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 2u);
  EXPECT_EQ(d.own_busy_ns, p / 4);
  EXPECT_EQ(d.other_busy_ns, p);
  EXPECT_EQ(d.span_ns, 2 * p);
  EXPECT_EQ(d.period_ns, p);
  // Microsecond timestamps are recognized.
  std::vector<uint8_t> us(kPerfmonParamsSize);
  buf.swap(us);
  PerfmonPrepare(buf.data());
  put(0, 1000, 10000, 42);
  put(1, 101000, 10000, 42);
  put(2, 201000, 10000, 42);
  count = tracker = 3;
  memcpy(buf.data() + 8, &count, 4);
  memcpy(buf.data() + 12, &tracker, 4);
  last = 1000;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.own_busy_ns, 2 * p);
  // Malformed replies are refused.
  const uint32_t bad = 1;
  memcpy(buf.data() + 4, &bad, 4);
  EXPECT_FALSE(PerfmonConsume(buf.data(), 42, &last, &d));
}

// The slot's view: a classifier says whom a pid belongs to; samples naming no process are kept
// one by one (their timestamps deduplicate them across the slot's members, ledger.h).
TEST(Perfmon, ClassifiesSlotMembersAndListsUnattributedSamples) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  PerfmonPrepare(buf.data());
  const uint64_t p = 200'000'000;
  const uint32_t pids[] = {42, 43, 7, kGpumonPidInvalid, 42, 0};
  for (uint32_t i = 0; i < 6; i++) {
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(i) * kPerfmonSampleSize;
    const uint64_t ts = (i + 1) * p;
    const uint32_t util = 5000;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &pids[i], 4);
  }
  int asked = 0;
  auto classify = [](void* ctx, uint32_t pid) {
    ++*static_cast<int*>(ctx);
    return pid == 42   ? PerfmonOwner::kSelf
           : pid == 43 ? PerfmonOwner::kMember
                       : PerfmonOwner::kOther;
  };
  uint64_t last = p;  // sample 1 seen
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), classify, &asked, &last, &d));
  EXPECT_EQ(d.samples, 5u);
  EXPECT_EQ(d.own_busy_ns, p / 2);
  EXPECT_EQ(d.member_busy_ns, p / 2);
  EXPECT_EQ(d.other_busy_ns, p / 2);
  EXPECT_EQ(d.unattributed_busy_ns, p);
  ASSERT_EQ(d.n_unattributed, 2u);
  EXPECT_EQ(d.unattributed[0].ts, 4 * p);
  EXPECT_EQ(d.unattributed[1].ts, 6 * p);
  EXPECT_EQ(d.unattributed[1].busy_ns, p / 2);
  EXPECT_EQ(asked, 3) << "asked only about new samples that name a process";
}

// As measured on the H200: count and tracker read 0 although the ring is full and wrapped,
// timestamps are epoch ns 200 ms apart, and a gated-off tenant's samples name no process.
TEST(Perfmon, WrappedRingWithZeroTrackerAndUnattributedSamples) {
  std::vector<uint8_t> buf(kPerfmonParamsSize);
  PerfmonPrepare(buf.data());
  const uint64_t base = 1795940299261101216ULL, p = 200'000'000;
  // Ring slot i holds sample number (i + 30) % 72: the newest is in slot 41.
  for (uint32_t i = 0; i < kPerfmonSampleCount; i++) {
    const uint32_t seq = (i + 30) % kPerfmonSampleCount;
    uint8_t* e = buf.data() + 16 + static_cast<size_t>(i) * kPerfmonSampleSize;
    const uint64_t ts = base + seq * p;
    const uint32_t util = 1000, proc = seq % 2 ? kGpumonPidInvalid : 42;
    memcpy(e, &ts, 8);
    memcpy(e + kSampleGrOffset, &util, 4);
    memcpy(e + kSampleGrOffset + 8, &proc, 4);
  }
  uint64_t last = base + 61 * p;  // seen up to sample 61
  PerfmonDelta d;
  ASSERT_TRUE(PerfmonConsume(buf.data(), 42, &last, &d));
  EXPECT_EQ(d.samples, 10u);  // 62..71
  EXPECT_EQ(last, base + 71 * p);
  EXPECT_EQ(d.end_ts, base + 71 * p);
  EXPECT_EQ(d.span_ns, 10 * p);
  EXPECT_EQ(d.own_busy_ns, 5 * p / 10);
  EXPECT_EQ(d.unattributed_busy_ns, 5 * p / 10);
  EXPECT_EQ(d.other_busy_ns, 0u);
  EXPECT_EQ(d.period_ns, p);
}

}  // namespace
}  // namespace vgpu::shim::compute

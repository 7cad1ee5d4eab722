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
    const bool on_gr_tsg =
        o == kGrTsg && (cmd == NVA06C_CTRL_CMD_PREEMPT || cmd == NVA06C_CTRL_CMD_SET_TIMESLICE);
    const bool on_gr_channels = cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && size >= 284 &&
                                (Load32(p, 280) & 0xffffff00u) == 0x5c000100u;
    if ((on_gr_tsg || on_gr_channels) && !gr_scheduled) {
      unscheduled_controls++;  // what froze the tenant on the H200 (compute_host.cc)
    }
    if (cmd == 0xd05) {  // GET_CHILD_HANDLE
      uint32_t* q = static_cast<uint32_t*>(p);
      EXPECT_EQ(q[0], kDevice);
      EXPECT_EQ(q[1], 0x2080u);
      q[2] = kSub;
    } else if (cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
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
    } else if (cmd == NVA06C_CTRL_CMD_PREEMPT) {
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
    NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS d;
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
    if (c.cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
      disables++;
      NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS p;
      memcpy(&p, c.params.data(), sizeof p);
      ASSERT_EQ(p.numChannels, 8u) << "GR channels only, not the copy TSG's";
      std::set<uint32_t> ch(p.hChannelList, p.hChannelList + 8);
      EXPECT_EQ(ch.size(), 8u);
      EXPECT_EQ(*ch.begin(), 0x5c000100u);
      EXPECT_EQ(p.bOnlyDisableScheduling, p.bDisable);
    } else if (c.cmd == NVA06C_CTRL_CMD_PREEMPT) {
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
  EXPECT_EQ(count(NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS), 0);
  EXPECT_EQ(count(NVA06C_CTRL_CMD_PREEMPT), 0);
  Schedule(h, rm);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_GT(count(NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS), 10) << "gated once scheduled";
  EXPECT_GT(count(NVA06C_CTRL_CMD_PREEMPT), 3);
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
      NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS p;
      if (c.cmd != NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS || c.params.size() != sizeof p) {
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
      n += c.cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && c.params[0] == disable;
    }
    return n;
  };
  // The loop's ticks are counted over 400 ms of the 700 ms PREEMPT (from 100 to 500 ms), not
  // 100: a stalled loop makes none, and a loop on a loaded 2-core machine (ASan, a guest VM beside
  // it) still makes dozens, where a 100 ms window missed its 5 about once in three at load 20.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const uint64_t ticks = h.Counters().ticks;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(count(0), 0) << "no enable while the first off edge's PREEMPT is in RM";
  EXPECT_GT(h.Counters().ticks, ticks + 10) << "the control loop keeps ticking";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the PREEMPT returned at ~700
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
      ons += c.cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS && c.params[0] == 0;
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
    EXPECT_NE(c.cmd, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS);
    if (c.cmd == NVA06C_CTRL_CMD_SET_TIMESLICE) {
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

}  // namespace
}  // namespace vgpu::shim::compute

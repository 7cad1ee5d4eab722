// Several processes of one slot (ComputeHost, "Multi-process slots" in compute_measure.cc): each
// with its own controller on one fake GPU, measuring the slot through the ledger's membership.
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
constexpr uint32_t kGrTsg = 0x5c000010;

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
    } else if (cmd == NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) {
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

// Weight tenants in separate slots, each knowing only its own share (nothing gives a slot the
// others'), on a node whose weights do not sum to 100: two slots of weight 30, so 50/50 is right.
// Assuming the rest of the GPU had 100 - 30 = 70, each host's feedback saw 50 % against a 30 %
// target and shrank its timeslice every window (3000 us to 985-1210 within 1.5 s here, towards the
// 200 us floor). Now the calibrated timeslice stays; with the others' share configured, the
// feedback still corrects.
TEST(ComputeHostSlot, WeightSlotsKeepTheirTimesliceWhenTheOthersSharesAreUnknown) {
  for (const uint32_t foreign : {0u, 70u}) {
    SlotGpu gpu({{1001, true}, {1002, true}});
    std::set<uint32_t> own_a{1001}, own_b{1002};
    std::vector<std::unique_ptr<ComputeHost>> hosts;
    for (uint32_t i = 0; i < 2; i++) {
      ComputeConfig cfg;
      cfg.settle_ns = 0;
      cfg.share = 30;
      cfg.mode = VCORE_SCHED_MODE_WEIGHT;
      cfg.foreign_share = foreign;
      cfg.measure_ns = 20'000'000;
      cfg.weight_window_ns = 200'000'000;
      cfg.pid = 1001 + i;
      cfg.slot_member = InSlot;
      cfg.slot_member_ctx = i == 0 ? &own_a : &own_b;
      hosts.push_back(std::make_unique<ComputeHost>(cfg, SlotGpu::Control, gpu.RmOf(i)));
      hosts.back()->OnTsg(kClient, kDevice, kGrTsg, 1);
      hosts.back()->OnChannel(kClient, kGrTsg, 0x5c000100);
      hosts.back()->OnTsgScheduled(kClient, kGrTsg, true);
      ASSERT_TRUE(hosts.back()->Start());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const uint32_t ts_a = hosts[0]->Stats().timeslice_us, ts_b = hosts[1]->Stats().timeslice_us;
    for (auto& h : hosts) {
      EXPECT_TRUE(h->Stop());
    }
    printf("weight 30 + 30, foreign share %u: timeslices %u / %u us\n", foreign, ts_a, ts_b);
    if (foreign == 0) {
      EXPECT_EQ(ts_a, 3000u) << "the calibrated map: 30 x 100 us";
      EXPECT_EQ(ts_b, 3000u);
    } else {
      EXPECT_LT(ts_a, 2500u) << "configured: the feedback corrects toward 30 / (30 + 70)";
    }
  }
}

}  // namespace
}  // namespace vgpu::shim::compute

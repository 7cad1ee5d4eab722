#include "shim/compute/compute_host.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "shim/compute/perfmon.h"

extern "C" {
#include "sched/vcore_sched_ctrl.h"
}

namespace vgpu::shim::compute {
namespace {

// NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE (ctrl0000client.h): finds the subdevice (class 0x2080)
// libcuda allocated under the device. A second subdevice of the same instance cannot be
// allocated (subdeviceConstruct: NV_ERR_INSUFFICIENT_RESOURCES), so we look up libcuda's.
constexpr uint32_t kCtrlClientGetChildHandle = 0x00000d05;
constexpr uint32_t kClassSubdevice = 0x2080;
constexpr uint32_t kEngineGr = 1;  // NV2080_ENGINE_TYPE_GRAPHICS: the compute TSG
constexpr uint64_t kMaxSleepNs = 5'000'000;
constexpr uint64_t kReapplyNs = 1'000'000'000;
// How long an on edge waits for its off edge's PREEMPT ("The gate's protocol").
constexpr uint64_t kEnableWaitNs = 20'000'000;
constexpr uint32_t kEdgesLogged = 64;
constexpr size_t kMaxUnpublished = 4 * kPerfmonSampleCount;

// Clock weighting
// ---------------
// The controller (kmod/core/sched) integrates reported GPU time against the cap. The host
// reports work instead: busy_ns * q, where q is the work a busy second does at the clock it
// ran at, in units of the work a busy second does when the tenant saturates the GPU uncapped
// (sm_clock.h has the measurement that motivates it). With x = f_busy / f_ref and c the
// fraction of the saturated loop's time that scales with the SM clock (Amdahl in the clock:
// time per unit of work = c / x + (1 - c)):
//
//   q = 1 / (c / x + 1 - c)
//
//  - f_busy: mean of SM clock samples taken every clock_poll_ns (20 ms) while the slot is gated
//    ON, i.e. while its work can run; at 50 ms periods that is >= 1 sample per on phase above
//    duty 40 % and one every few periods below, and the meter folds them into each perfmon
//    span (200 ms). The clock moves on the power controller's time scale (tens of ms and more),
//    so the samples need not be aligned with the perfmon samples, which lag by <= ~0.4 s.
//  - f_ref: the clock the GPU sustains when this tenant saturates it uncapped: configured
//    (compute_ref_clock_mhz), or learned from spans with no off edge for kLearnQuietNs and
//    >= 90 % busy, as an exponential average over kLearnSpans spans (~1 s at 200 ms). Before
//    any is known q = 1 (the time cap of the previous runs).
//  - c (clock_scaling_pm, default 700): measured on the H200 (docs/results/compute-h200.md,
//    run 3, q = x there): the bf16 matmul loop's work per busy second rose 1.10-1.19x where the
//    reported SM clock rose 1.14-1.35x (1980 MHz in the on phases vs 1467-1476 MHz saturated),
//    c = (1 - 1/r) / (1 - 1/x) = 0.5-1.0 across caps and the two loops, median ~0.7. A reported
//    clock overstates the effective one when the card's fast power limiter acts within an on
//    phase; c = 1 is the pure-compute model. It is a calibration per GPU model and kind of
//    load, configurable, not a law.
//  - q is clamped to [1, kMaxWorkPerTimePm / 1000]: a GPU running slower than its reference
//    (thermal throttling, or idle clocks sampled in a light tenant's on phase) is not credited,
//    so a cap never gives more GPU time than its share; 1.5 bounds what a bad sample can take
//    away.
// The controller's gains are unchanged: q only rescales the measured quantity (by <= 20 % on
// the H200) and changes on the clock's own time scale, slower than the 500 ms integral.
constexpr uint64_t kLearnQuietNs = 1'000'000'000;
constexpr uint32_t kLearnSpans = 4;
constexpr uint32_t kMaxWorkPerTimePm = 1500;
constexpr uint64_t kClockBindRetryNs = 1'000'000'000;
// NV2080_CTRL_CMD_GPU_GET_GID_INFO (ctrl2080gpu.h): index@0 flags@4 length@8 data[256]@12;
// flags 0 = FORMAT_ASCII | TYPE_SHA1 gives "GPU-%08x-%04x-%04x-%04x-%012x", NVML's UUID form.
constexpr uint32_t kCtrlGpuGetGidInfo = 0x2080014a;
constexpr uint32_t kGidInfoParamsSize = 12 + 256;

void SleepUntil(uint64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

ComputeHost::ComputeHost(const ComputeConfig& cfg, RmControlFn rm, void* rm_ctx)
    : cfg_(cfg),
      rm_(rm),
      rm_ctx_(rm_ctx),
      pid_(cfg.pid != 0 ? cfg.pid : static_cast<uint32_t>(getpid())) {
  vcore_sched_params p;
  vcore_sched_params_default(&p);
  p.weight_window_ns = cfg_.weight_window_ns;
  vcore_sched_init(&sched_, &p);
  Set(cfg_.share, cfg_.mode);
  perfmon_buf_.resize(kPerfmonParamsSize);
}

ComputeHost::~ComputeHost() { Stop(); }

void ComputeHost::Set(uint32_t share, uint32_t mode) {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  vcore_sched_action a[2];
  vcore_sched_slot_remove(&sched_, kForeign, a);
  int n = vcore_sched_slot_set(&sched_, kSlot, share, mode, a);
  if (n == -VCS_ENOENT) {
    n = vcore_sched_slot_add(&sched_, kSlot, share, mode);
  }
  if (n > 0) {
    Execute(a, n);
  }
  if (mode == VCORE_SCHED_MODE_WEIGHT && share < 100) {
    const uint32_t foreign = cfg_.foreign_share != 0 ? cfg_.foreign_share : 100 - share;
    vcore_sched_slot_add(&sched_, kForeign, foreign, VCORE_SCHED_MODE_FOREIGN);
  }
  cfg_.share = share;
  cfg_.mode = mode;
  mode_.store(mode, std::memory_order_relaxed);
}

void ComputeHost::OnTsg(uint32_t h_client, uint32_t h_device, uint32_t h_tsg,
                        uint32_t engine_type) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  tsgs_[{h_client, h_tsg}] = Tsg{h_device, engine_type, false};
  generation_++;
}

// Scheduled TSGs only
// -------------------
// libcuda builds a context as TSG -> channels -> UVM_REGISTER_CHANNEL per channel ->
// GPFIFO_SCHEDULE(bEnable=1) per TSG (nvidia-rm-abi.md §6.1; RM refuses to schedule channels UVM
// has not bound). On the H200 a tenant capped from its first kernel froze for good when its GR
// TSG was gated early (docs/results/compute-h200.md, runs 5-9): gated as soon as it was
// allocated, its first PREEMPT(bWait=1) held RM for 4.0 s and the process never ran again;
// gated from the moment its schedule succeeded, it froze just the same (GPU idle, every later
// DISABLE_CHANNELS and PREEMPT status 0), with the standalone test preload as with the full shim;
// capped only after a while uncapped, every cap held. Those runs broke the gate's protocol (below:
// enables of channels the gate had not disabled); with it kept, no tenant froze (runs 11-13).
// A TSG is still left alone until settle_ns after its schedule succeeded (libcuda finishes the
// context after the schedule: GR_SET_CTXSW_PREEMPTION_MODE, its own SET_TIMESLICE, §6.1), which
// the protocol runs were measured with: Snapshot() hides it from
// the gate, PREEMPT and SET_TIMESLICE until the control thread marks it settled (Reapply(): it is
// disabled and preempted at once if the slot is gated off, else at the next off edge).
// The settle of a process's first context is not measured either (MeasureOnce() starts with the
// first settled TSG): on the H200, 250 ms settles measured that way held caps 10-90 on both
// loops with no stall (run 8), while 500 ms settles whose GPU time was measured and carried as
// debt held the new context off for ~3 s right away and froze it again (run 9). The price is
// that a context runs uncapped for its first settle_ns.
void ComputeHost::OnTsgScheduled(uint32_t h_client, uint32_t h_tsg, bool scheduled) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  auto it = tsgs_.find({h_client, h_tsg});
  if (it != tsgs_.end() && it->second.scheduled != scheduled) {
    it->second.scheduled = scheduled;
    it->second.scheduled_ns = MonotonicNs();
    it->second.settled = scheduled && cfg_.settle_ns == 0;
    generation_++;
  }
}

void ComputeHost::OnTsgFreed(uint32_t h_client, uint32_t h_tsg) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  tsgs_.erase({h_client, h_tsg});
  for (auto it = channels_.lower_bound({h_client, 0});
       it != channels_.end() && it->first.first == h_client;) {
    it = it->second.h_tsg == h_tsg ? channels_.erase(it) : std::next(it);
  }
  generation_++;
}

void ComputeHost::OnChannel(uint32_t h_client, uint32_t h_tsg, uint32_t h_channel) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  channels_[{h_client, h_channel}] = Channel{h_tsg};
  generation_++;
}

void ComputeHost::OnChannelFreed(uint32_t h_client, uint32_t h_channel) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  channels_.erase({h_client, h_channel});
  generation_++;
}

void ComputeHost::OnClientGone(uint32_t h_client) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  for (auto* m : {&tsgs_}) {
    for (auto it = m->lower_bound({h_client, 0}); it != m->end() && it->first.first == h_client;) {
      it = m->erase(it);
    }
  }
  for (auto it = channels_.lower_bound({h_client, 0});
       it != channels_.end() && it->first.first == h_client;) {
    it = channels_.erase(it);
  }
  generation_++;
}

void ComputeHost::OnSubdevice(uint32_t h_client, uint32_t h_device, uint32_t h_subdevice) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  subdevices_[{h_client, h_device}] = h_subdevice;
}

std::vector<ComputeHost::ClientObjs> ComputeHost::Snapshot(bool settled_only) {
  std::vector<ClientObjs> out;
  std::lock_guard<std::mutex> lock(objs_mu_);
  for (const auto& [key, tsg] : tsgs_) {
    if (tsg.engine_type != kEngineGr || !tsg.scheduled || (settled_only && !tsg.settled)) {
      continue;  // copy-engine TSGs are DMA, not compute; unscheduled ones are being set up
    }
    if (out.empty() || out.back().h_client != key.first) {
      out.push_back({key.first, tsg.h_device, {}, {}, {}, {}});
    }
    out.back().tsgs.push_back(key.second);
  }
  for (const auto& [key, ch] : channels_) {
    for (auto& c : out) {
      if (c.h_client != key.first) {
        continue;
      }
      for (uint32_t t : c.tsgs) {
        if (t == ch.h_tsg) {
          c.channels.push_back(key.second);
          if (ch.disabled) {
            c.disabled_channels.push_back(key.second);
          }
          if (!ch.disable_confirmed) {
            c.to_disable.push_back(key.second);
          }
        }
      }
    }
  }
  return out;
}

bool ComputeHost::Control(uint32_t h_client, uint32_t h_object, uint32_t cmd, void* p,
                          uint32_t size) {
  uint32_t status = 0;
  const int rc = rm_(rm_ctx_, h_client, h_object, cmd, p, size, &status);
  counters_.controls++;
  if (rc != 0 || status != 0) {
    counters_.control_errors++;
    counters_.last_bad_status = rc != 0 ? static_cast<uint32_t>(-rc) | 0x80000000u : status;
    counters_.last_bad_cmd = cmd;
    return false;
  }
  return true;
}

uint32_t ComputeHost::CachedSubdevice(uint32_t h_client, uint32_t h_device) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  auto it = subdevices_.find({h_client, h_device});
  return it != subdevices_.end() ? it->second : 0;
}

uint32_t ComputeHost::Subdevice(uint32_t h_client, uint32_t h_device) {
  {
    std::lock_guard<std::mutex> lock(objs_mu_);
    auto it = subdevices_.find({h_client, h_device});
    if (it != subdevices_.end()) {
      return it->second;
    }
  }
  // NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE_PARAMS: hParent@0 classId@4 hObject@8 (out).
  uint32_t p[3] = {h_device, kClassSubdevice, 0};
  uint32_t status = 0;
  const int rc = rm_(rm_ctx_, h_client, h_client, kCtrlClientGetChildHandle, p, sizeof p, &status);
  const uint32_t h = rc == 0 && status == 0 ? p[2] : 0;
  std::lock_guard<std::mutex> lock(objs_mu_);
  subdevices_[{h_client, h_device}] = h;
  return h;
}

// The gate's protocol
// ------------------
// On the H200, FIFO_DISABLE_CHANNELS(bOnlyDisableScheduling=1) followed by the enable with no
// PREEMPT of the TSG in between stalled the process for good (compute-control-h200.md); the same
// pair with a PREEMPT(bWait=1) between them throttled it. So the off edge disables and then
// PREEMPTs (on the worker: it may wait as long as a kernel runs), and the on edge re-enables
// only (1) channels this host disabled -- never one it did not, such as a TSG that settled while
// the slot was on -- and (2) once every PREEMPT queued before it has returned. An on edge that
// finds one pending waits kEnableWaitNs (a PREEMPT takes ~0.6 ms on the H200) and otherwise
// leaves the enable owed, retried on every tick (Reapply()): the TSG is then still on the GPU
// running the kernel the PREEMPT waits for, so the delay takes no GPU time from the tenant.
// Earlier builds enabled every channel of every settled TSG on each on edge and on each object
// change while on, and re-disabled (and re-PREEMPTed) disabled channels on each object change
// while off; 8 of 11 tenants capped from their first kernel froze on the H200 (run 10, and runs
// 6, 7, 9 before it). With this protocol 0 of 30 froze (runs 11-13, docs/results/compute-h200.md).
// No on edge there had to wait (the longest PREEMPT took 1.7 ms), so what the GPU needed was
// the first half: no enable of a channel the gate did not disable, no repeated disable; which of
// the two, and why RM then never runs the TSG again, is not isolated.
void ComputeHost::Gate(bool off, bool force) {
  const std::vector<ClientObjs> objs = Snapshot();
  if (!off) {
    enable_owed_ = false;  // paid below, or owed again
  }
  if (!off && !force && !PreemptsSettled(kEnableWaitNs)) {
    enable_owed_ = true;
    enables_deferred_++;
    gated_ = false;  // the controller's state; the channels follow once the PREEMPT returned
    gate_on_.store(true, std::memory_order_relaxed);
    LogEdge("on-deferred", 0, 0);
    return;
  }
  std::vector<Key> preempt;  // off: the TSGs whose channels this edge disabled
  size_t touched = 0;
  for (const ClientObjs& c : objs) {
    // Off: only channels not already disabled (new ones, or a failed disable): an off edge after
    // an on edge that is still owed has nothing to do, and queues no PREEMPT behind the pending
    // one. On: only channels this host disabled.
    const std::vector<uint32_t>& chans = off ? c.to_disable : c.disabled_channels;
    const uint32_t sub = Subdevice(c.h_client, c.h_device);
    if (sub == 0 || chans.empty()) {
      continue;
    }
    bool all = true;
    for (size_t i = 0; i < chans.size(); i += VCS_NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES) {
      const size_t n =
          std::min<size_t>(VCS_NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES, chans.size() - i);
      vcs_disable_channels_params p;
      vcore_sched_fill_disable(&p, c.h_client, chans.data() + i, static_cast<uint32_t>(n),
                               off ? 1 : 0);
      if (off) {  // marked first: the watchdog may need to enable them while RM still has this
        MarkChannels(c.h_client, chans.data() + i, n, /*disabled=*/true, /*confirmed=*/false);
      }
      const bool ok =
          Control(c.h_client, sub, VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &p, sizeof p);
      // A failed disable may still have disabled some: they stay marked, so the on edge enables
      // them (an extra enable of a channel this host disabled is harmless; a missed one stalls)
      // and the next off edge retries. A failed enable leaves them marked and owed.
      if (ok) {
        MarkChannels(c.h_client, chans.data() + i, n, off, off);
      } else if (!off) {
        enable_owed_ = true;
      }
      all = ok && all;
      touched += n;
    }
    if (off && all) {
      for (uint32_t tsg : c.tsgs) {
        preempt.push_back({c.h_client, tsg});
      }
    }
  }
  const size_t preempted = preempt.size();
  if (!preempt.empty()) {
    // A TSG whose channels were not disabled is not preempted: RM would only put it back.
    std::lock_guard<std::mutex> lock(pre_mu_);
    if (!pre_todo_.empty()) {
      // One queued and not started yet: it runs after this disable anyway; add what it lacks.
      pre_skips_++;
      for (const Key& k : preempt) {
        if (std::find(pre_todo_.begin(), pre_todo_.end(), k) == pre_todo_.end()) {
          pre_todo_.push_back(k);
        }
      }
    } else {
      // Queued even while the worker is busy with an earlier edge's: the PREEMPT that follows
      // this disable is what keeps the next enable safe.
      pre_todo_ = std::move(preempt);
      pre_cv_.notify_one();
    }
  }
  LogEdge(off ? "off" : "on", preempted, touched);
  gated_ = off;
  ever_gated_ = ever_gated_ || off;
  last_gate_change_ns_ = MonotonicNs();
  if (off) {
    last_gate_off_ns_.store(last_gate_change_ns_, std::memory_order_relaxed);
  }
  gate_on_.store(!off, std::memory_order_relaxed);
}

bool ComputeHost::PreemptsSettled(uint64_t wait_ns) {
  std::unique_lock<std::mutex> lock(pre_mu_);
  return pre_idle_cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns),
                               [this] { return !pre_busy_ && pre_todo_.empty(); });
}

void ComputeHost::MarkChannels(uint32_t h_client, const uint32_t* channels, size_t n, bool disabled,
                               bool confirmed) {
  std::lock_guard<std::mutex> lock(objs_mu_);
  for (size_t i = 0; i < n; i++) {
    auto it = channels_.find({h_client, channels[i]});
    if (it != channels_.end()) {
      it->second.disabled = disabled;
      it->second.disable_confirmed = confirmed;
    }
  }
}

// The first edges of a process, with their time: what a frozen tenant's log must show.
void ComputeHost::LogEdge(const char* what, size_t tsgs, size_t channels) {
  if (cfg_.log_fd < 0 || edges_logged_ >= kEdgesLogged) {
    return;
  }
  edges_logged_++;
  uint64_t busy;
  {
    std::lock_guard<std::mutex> lock(pre_mu_);
    busy = pre_busy_ ? 1 : 0;
  }
  dprintf(cfg_.log_fd, "edge: t=%.6f %s preempt_tsgs=%zu channels=%zu preempt_busy=%llu\n",
          MonotonicNs() / 1e9, what, tsgs, channels, static_cast<unsigned long long>(busy));
}

void ComputeHost::SetTimeslice(uint64_t us) {
  for (const ClientObjs& c : Snapshot()) {
    for (uint32_t tsg : c.tsgs) {
      vcs_timeslice_params p;
      vcore_sched_fill_timeslice(&p, us);
      Control(c.h_client, tsg, VCS_NVA06C_CTRL_CMD_SET_TIMESLICE, &p, sizeof p);
    }
  }
  timeslice_us_ = us;
}

void ComputeHost::Execute(const vcore_sched_action* a, int n) {
  for (int i = 0; i < n; i++) {
    switch (a[i].kind) {
      case VCORE_SCHED_ACT_GATE_OFF:
        Gate(true);
        break;
      case VCORE_SCHED_ACT_GATE_ON:
        Gate(false);
        break;
      case VCORE_SCHED_ACT_TIMESLICE:
        SetTimeslice(a[i].timeslice_us);
        break;
      default:
        break;
    }
  }
}

// New TSGs or channels take the current state; libcuda's own SET_TIMESLICE(2048) at the end of
// context setup (nvidia-rm-abi.md §6.1) is overridden again by the periodic re-apply.
void ComputeHost::Reapply() {
  const uint64_t now = MonotonicNs();
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(objs_mu_);
    for (auto& [key, tsg] : tsgs_) {
      if (tsg.scheduled && !tsg.settled && now - tsg.scheduled_ns >= cfg_.settle_ns) {
        tsg.settled = true;  // it joins the gate now, whatever the controller's state
        generation_++;
      }
    }
    gen = generation_;
  }
  const bool changed = gen != applied_generation_;
  if (enable_owed_ && !gated_) {
    Gate(false);  // the last on edge waited for a PREEMPT: enable once it has returned
  }
  if (!changed && now - last_reapply_ns_ < kReapplyNs) {
    return;
  }
  applied_generation_ = gen;
  last_reapply_ns_ = now;
  if (changed && (gated_ || ever_gated_)) {
    // Off: new channels, and TSGs that just settled, join the gate. On: a TSG that libcuda took
    // off the runlist while we had its channels disabled and now schedules again gets them
    // back; a TSG never disabled is not touched ("The gate's protocol").
    Gate(gated_);
  }
  if (timeslice_us_ != 0) {
    SetTimeslice(timeslice_us_);
  }
}

// Multi-process slots
// -------------------
// A slot may hold several processes (a launcher and its workers), each with its own shim and
// its own controller, sharing the slot's ledger (shim/preload/ledger.h). If each controller
// held only its own pid's GPU time to the share, n saturating processes would get n shares.
// So every member measures the slot: perfmon samples naming any live member (slot_member, the
// ledger's membership) are the slot's; samples naming anyone else are foreign. The samples are
// the GPU's, not the client's (RM keeps one ring per GPU and translates procId into the
// caller's pid namespace, which the slot's processes share with their ledger entries), so
// every member reads the same measurement, runs the same controller on it (same share, same
// gains, same debt) and comes to the same duty, which it applies to its own TSGs:
//  - cap, all members saturating: the GPU is busy for the slot whenever any member is gated on.
//    Where the members' on-phases overlap they share them (the GPU time-slices between their
//    TSGs, so the overlap is busy once, not twice); where they do not, the slot's busy is the
//    union of the on-phases, which the measurement sees as more than the share, and the integral
//    lowers every member's duty until the union holds the share. Either way the quantity held
//    is the slot's total (unit test: ComputeHostSlot.TwoProcessesOfOneSlotShareTheCap). A
//    member that starts later starts with no debt and no history, so for a while its duty
//    differs from the others'; each still corrects the same slot total toward the share.
//  - cap, one member idle: it gates its idle TSGs to no effect; the busy one measures only its
//    own busy (the idle one adds none) and is held to the whole share, as a lone process is.
//  - weight: the foreign share is everything not in the slot, measured as the samples naming
//    non-members, so the 30-s feedback corrects the slot's total against the rest of the GPU.
//    The calibrated timeslice is per TSG, so n saturating members start at up to n times the
//    slot's timeslice share; closing that gap is the feedback's job (tested against fakes only).
// Without a ledger (the standalone GPU test preload, a slot configured without one) the slot is
// this process: only samples naming our pid are ours, as before. Samples naming no process stay
// the slot's in cap mode (perfmon.h), whoever's they were.
//
// The membership check takes the ledger's process-shared lock (and at most once a second reads
// /proc for each member), so it is asked once per distinct pid per perfmon read, never per
// sample; a read brings ~1 new sample per 200 ms.
PerfmonOwner ComputeHost::Classify(void* ctx, uint32_t pid) {
  auto* h = static_cast<ComputeHost*>(ctx);
  if (pid == h->pid_) {
    return PerfmonOwner::kSelf;
  }
  if (h->cfg_.slot_member == nullptr) {
    return PerfmonOwner::kOther;
  }
  for (const auto& [p, member] : h->member_memo_) {
    if (p == pid) {
      return member ? PerfmonOwner::kMember : PerfmonOwner::kOther;
    }
  }
  const bool member = h->cfg_.slot_member(h->cfg_.slot_member_ctx, pid);
  h->member_memo_.emplace_back(pid, member);
  return member ? PerfmonOwner::kMember : PerfmonOwner::kOther;
}

// One perfmon read (meter thread). RM may take its time over it; only this thread waits.
void ComputeHost::MeasureOnce() {
  // Measured from the first settled TSG on: perfmon names the process, not the TSG, so this
  // forgives only the settle of the process's first context ("Scheduled TSGs only").
  const std::vector<ClientObjs> objs = Snapshot();
  if (objs.empty()) {
    return;
  }
  const uint32_t sub = Subdevice(objs[0].h_client, objs[0].h_device);
  if (sub == 0) {
    measure_errors_++;
    return;
  }
  if (perfmon_client_ != objs[0].h_client) {
    perfmon_client_ = objs[0].h_client;
    perfmon_last_ts_ = 0;  // re-prime on a new client
  }
  PerfmonPrepare(perfmon_buf_.data());
  PerfmonDelta d;
  uint32_t status = 0;
  const int rc = rm_(rm_ctx_, objs[0].h_client, sub, kCtrlPerfmonSamplesV2, perfmon_buf_.data(),
                     kPerfmonParamsSize, &status);
  member_memo_.clear();  // membership may have changed since the last read
  if (rc != 0 || status != 0 ||
      !PerfmonConsume(perfmon_buf_.data(), Classify, this, &perfmon_last_ts_, &d)) {
    measure_errors_++;
    return;
  }
  if (!perfmon_logged_ && cfg_.log_fd >= 0 && d.period_ns != 0) {
    // Once: what the samples look like on this GPU (period, util, who they name).
    perfmon_logged_ = true;
    const auto* b = perfmon_buf_.data();
    uint32_t tracker, count;
    memcpy(&count, b + 8, 4);
    memcpy(&tracker, b + 12, 4);
    dprintf(cfg_.log_fd, "perfmon: pid=%u count=%u tracker=%u period_ns=%llu\n", pid_, count,
            tracker, static_cast<unsigned long long>(d.period_ns));
    for (uint32_t k = 1; k <= 6 && k <= kPerfmonSampleCount; k++) {
      const uint8_t* s =
          b + 16 + ((tracker + kPerfmonSampleCount - k) % kPerfmonSampleCount) * kPerfmonSampleSize;
      uint64_t ts;
      uint32_t util, proc;
      memcpy(&ts, s, 8);
      memcpy(&util, s + kSampleGrOffset, 4);
      memcpy(&proc, s + kSampleGrOffset + 8, 4);
      dprintf(cfg_.log_fd, "perfmon:   ts=%llu gr.util=%u gr.procId=%u\n",
              static_cast<unsigned long long>(ts), util, proc);
    }
  }
  samples_ += d.samples;
  sample_period_ns_.store(d.period_ns);
  if (d.samples == 0) {
    return;
  }
  // Sample timestamps are CLOCK_REALTIME ns on the H200; the controller runs on CLOCK_MONOTONIC.
  uint64_t end = 0;
  if (d.end_ts > 1'000'000'000'000'000'000ULL) {
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    const uint64_t real =
        static_cast<uint64_t>(rt.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(rt.tv_nsec);
    const uint64_t mono = MonotonicNs();
    end = d.end_ts <= real ? mono - std::min(mono, real - d.end_ts) : mono;
  }
  // The slot's busy: every member's ("Multi-process slots"). Cap: unattributed busy counts as
  // the slot's (perfmon.h); weight: only what names a member.
  const bool cap = mode_.load() == VCORE_SCHED_MODE_CAP;
  const uint64_t slot = d.own_busy_ns + d.member_busy_ns + (cap ? d.unattributed_busy_ns : 0);
  own_busy_total_ += d.own_busy_ns;
  member_busy_total_ += d.member_busy_ns;
  foreign_busy_total_ += d.other_busy_ns;
  // Work, not time ("Clock weighting"). Both sides of a weight split ran at the same clock, so
  // the weighting leaves weight shares as they were.
  const uint64_t q =
      WorkPerTime(d.own_busy_ns + d.member_busy_ns + d.unattributed_busy_ns, d.span_ns);
  std::lock_guard<std::mutex> lock(rep_mu_);
  reports_.push_back({kSlot, 0, slot * q / 1000, d.span_ns, end});
  reports_.push_back({kForeign, 0, d.other_busy_ns * q / 1000, d.span_ns, end});
  if (cap && cfg_.publish != nullptr) {
    // Bounded: the control thread publishes once a second (~5 samples); if it is stuck, the
    // oldest unpublished samples are dropped rather than growing without end.
    if (unattributed_.size() + d.n_unattributed > kMaxUnpublished) {
      unattributed_.erase(unattributed_.begin(),
                          unattributed_.begin() +
                              std::min(unattributed_.size(),
                                       unattributed_.size() + d.n_unattributed - kMaxUnpublished));
    }
    unattributed_.insert(unattributed_.end(), d.unattributed, d.unattributed + d.n_unattributed);
  }
}

// Control thread (or Stop() once the threads are joined): this process's counters for the
// manager. Work-weighting stays out of them: busy and throttled are time, as vgpu.ko's are.
void ComputeHost::Publish() {
  if (cfg_.publish == nullptr) {
    return;
  }
  ComputePublication p;
  {
    std::lock_guard<std::mutex> lock(ctl_mu_);
    vcore_sched_slot_stats st{};
    vcore_sched_get_stats(&sched_, kSlot, &st);
    p.throttled_ns = st.throttled_ns;
    p.achieved_share_1s_pm = st.share_1s_pm;
    p.achieved_share_10s_pm = st.share_10s_pm;
  }
  std::vector<PerfmonDelta::Sample> unattributed;
  {
    std::lock_guard<std::mutex> lock(rep_mu_);
    unattributed.swap(unattributed_);
  }
  p.busy_ns = own_busy_total_.load();
  p.unattributed = unattributed.data();
  p.n_unattributed = static_cast<uint32_t>(unattributed.size());
  cfg_.publish(cfg_.publish_ctx, p);
  publications_++;
}

// Meter thread: folds the clock samples taken since the last span, learns the reference.
uint32_t ComputeHost::WorkPerTime(uint64_t busy_ns, uint64_t span_ns) {
  if (cfg_.clock == nullptr) {
    return 1000;
  }
  uint64_t sum, n;
  {
    std::lock_guard<std::mutex> lock(clk_mu_);
    sum = clk_sum_;
    n = clk_n_;
    clk_sum_ = clk_n_ = 0;
  }
  uint32_t busy = busy_mhz_.load(std::memory_order_relaxed);
  if (n != 0) {
    busy = static_cast<uint32_t>(sum / n);  // else the last known (slot off the whole span)
    busy_mhz_.store(busy, std::memory_order_relaxed);
  }
  uint32_t ref = cfg_.ref_clock_mhz != 0 ? cfg_.ref_clock_mhz : ref_mhz_.load();
  const uint64_t last_off = last_gate_off_ns_.load(std::memory_order_relaxed);
  const bool quiet = last_off == 0 || MonotonicNs() - last_off > kLearnQuietNs;
  if (cfg_.ref_clock_mhz == 0 && n != 0 && quiet && span_ns != 0 && busy_ns * 10 >= span_ns * 9) {
    ref = ref == 0 ? busy : (ref * (kLearnSpans - 1) + busy) / kLearnSpans;
  }
  ref_mhz_.store(ref, std::memory_order_relaxed);
  uint32_t q = 1000;
  if (busy != 0 && ref != 0) {
    // q = 1 / (c / x + 1 - c) = 1000 * busy / (c * ref + (1 - c) * busy), in permille.
    const uint64_t c = std::min<uint32_t>(cfg_.clock_scaling_pm, 1000);
    const uint64_t den = c * ref + (1000 - c) * busy;
    q = static_cast<uint32_t>(std::clamp<uint64_t>(
        den != 0 ? uint64_t{busy} * 1'000'000 / den : 1000, 1000, kMaxWorkPerTimePm));
  }
  work_pm_.store(q, std::memory_order_relaxed);
  return q;
}

// Clock thread: binds the clock source to the tenant's GPU once, then samples the SM clock
// while the slot is gated on. Its own thread because NVML may take its time (an RM control
// that goes to GSP); only this thread waits for it.
void ComputeHost::ClockOnce() {
  if (clock_failed_) {
    return;
  }
  if (!clock_bound_) {
    const uint64_t now = MonotonicNs();
    if (now < clock_bind_next_ns_) {
      return;
    }
    clock_bind_next_ns_ = now + kClockBindRetryNs;
    const std::vector<ClientObjs> objs = Snapshot(/*settled_only=*/false);
    if (objs.empty()) {
      return;  // no GPU context yet: try again later
    }
    const uint32_t sub = Subdevice(objs[0].h_client, objs[0].h_device);
    uint8_t p[kGidInfoParamsSize] = {};
    uint32_t status = 0;
    const bool gid =
        sub != 0 &&
        rm_(rm_ctx_, objs[0].h_client, sub, kCtrlGpuGetGidInfo, p, sizeof p, &status) == 0 &&
        status == 0;
    uint32_t len = 0;
    memcpy(&len, p + 8, 4);
    char uuid[96] = "";
    if (gid && len > 0 && len < sizeof uuid) {
      memcpy(uuid, p + 12, len);
      uuid[len] = '\0';
    }
    clock_bound_ = cfg_.clock->Bind(uuid[0] != '\0' ? uuid : nullptr);
    clock_failed_ = !clock_bound_;
    if (cfg_.log_fd >= 0) {
      dprintf(cfg_.log_fd, "clock: %s (gpu %s)\n",
              clock_bound_ ? "SM clock bound" : "no SM clock: GPU time counted as is",
              uuid[0] != '\0' ? uuid : "?");
    }
    return;
  }
  if (!gate_on_.load(std::memory_order_relaxed)) {
    return;
  }
  const uint32_t mhz = cfg_.clock->SmMhz();
  if (mhz != 0 && gate_on_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(clk_mu_);
    clk_sum_ += mhz;
    clk_n_++;
  }
}

void* ComputeHost::ClockMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  while (h->running_.load(std::memory_order_acquire)) {
    const uint64_t next = MonotonicNs() + h->cfg_.clock_poll_ns;
    h->ClockOnce();
    SleepUntil(next);
  }
  return nullptr;
}

void ComputeHost::Loop() {
  vcore_sched_action acts[VCORE_SCHED_MAX_ACTIONS];
  std::vector<vcore_sched_report> reports;
  while (running_.load(std::memory_order_acquire)) {
    uint64_t next = 0;
    bool publish = false;
    {
      std::lock_guard<std::mutex> lock(ctl_mu_);
      const uint64_t now = MonotonicNs();
      heartbeat_ns_.store(now, std::memory_order_release);
      reports.clear();
      {
        std::lock_guard<std::mutex> rlock(rep_mu_);
        reports.swap(reports_);
      }
      if (watchdog_fired_.exchange(false) && gated_) {
        // The watchdog enabled the channels while this thread was stuck with the slot gated
        // off: make the channels match the controller's state again. A disable that was stuck
        // in RM across the watchdog's enable returned success, yet the enable came after it.
        {
          std::lock_guard<std::mutex> olock(objs_mu_);
          for (auto& [key, ch] : channels_) {
            ch.disable_confirmed = false;
          }
        }
        Gate(true);
      }
      const int n =
          vcore_sched_tick(&sched_, now, reports.data(), static_cast<uint32_t>(reports.size()),
                           acts, VCORE_SCHED_MAX_ACTIONS, &next);
      Execute(acts, n);
      Reapply();
      counters_.ticks++;
      if (cfg_.log_fd >= 0 && now - last_log_ns_ >= 1'000'000'000) {
        last_log_ns_ = now;
        vcore_sched_slot_stats st{};
        vcore_sched_get_stats(&sched_, kSlot, &st);
        dprintf(cfg_.log_fd,
                "t=%.3f share=%u mode=%u share1s=%u share10s=%u duty=%u debt_ms=%.1f "
                "overshoot_ms=%.1f throttled_ms=%.1f ts_us=%u gates=%llu controls=%llu "
                "errors=%llu bad_cmd=%#x bad_status=%#x samples=%llu period_us=%llu "
                "measure_errors=%llu preempts=%llu preempt_skips=%llu preempt_max_ms=%.1f "
                "clk_mhz=%u ref_mhz=%u work_pm=%u watchdog=%llu enables_deferred=%llu\n",
                now / 1e9, st.share, st.mode, st.share_1s_pm, st.share_10s_pm, st.duty_pm,
                st.debt_ns / 1e6, st.overshoot_ns / 1e6, st.throttled_ns / 1e6, st.timeslice_us,
                static_cast<unsigned long long>(st.gate_actions),
                static_cast<unsigned long long>(counters_.controls),
                static_cast<unsigned long long>(counters_.control_errors), counters_.last_bad_cmd,
                counters_.last_bad_status, static_cast<unsigned long long>(samples_.load()),
                static_cast<unsigned long long>(sample_period_ns_.load() / 1000),
                static_cast<unsigned long long>(measure_errors_.load()),
                static_cast<unsigned long long>(pre_done_.load()),
                static_cast<unsigned long long>(pre_skips_.load()), pre_max_ns_.load() / 1e6,
                busy_mhz_.load(), cfg_.ref_clock_mhz != 0 ? cfg_.ref_clock_mhz : ref_mhz_.load(),
                work_pm_.load(), static_cast<unsigned long long>(watchdog_releases_.load()),
                static_cast<unsigned long long>(enables_deferred_));
      }
      const uint64_t cap = now + kMaxSleepNs;
      if (next > cap || next == 0) {
        next = cap;
      }
      publish = cfg_.publish != nullptr && now - last_publish_ns_ >= cfg_.publish_ns;
      if (publish) {
        last_publish_ns_ = now;
      }
    }
    if (publish) {
      Publish();  // outside ctl_mu_: it may wait for the ledger's process-shared lock
    }
    SleepUntil(next);
  }
}

void* ComputeHost::PreemptMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  std::unique_lock<std::mutex> lock(h->pre_mu_);
  while (true) {
    h->pre_cv_.wait(lock, [h] { return h->pre_stop_ || !h->pre_todo_.empty(); });
    if (h->pre_stop_) {
      return nullptr;
    }
    std::vector<Key> todo;
    todo.swap(h->pre_todo_);
    h->pre_busy_ = true;
    lock.unlock();
    for (const Key& k : todo) {
      vcs_preempt_params p;
      vcore_sched_fill_preempt(&p);
      uint32_t status = 0;
      const uint64_t t0 = MonotonicNs();
      const int rc =
          h->rm_(h->rm_ctx_, k.first, k.second, VCS_NVA06C_CTRL_CMD_PREEMPT, &p, sizeof p, &status);
      const uint64_t took = MonotonicNs() - t0;
      if (rc != 0 || status != 0) {
        h->pre_errors_++;
      }
      h->pre_done_++;
      uint64_t max = h->pre_max_ns_.load();
      while (took > max && !h->pre_max_ns_.compare_exchange_weak(max, took)) {
      }
    }
    lock.lock();
    h->pre_busy_ = false;
    h->pre_idle_cv_.notify_all();
  }
}

void* ComputeHost::MeterMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  while (h->running_.load(std::memory_order_acquire)) {
    const uint64_t next = MonotonicNs() + h->cfg_.measure_ns;
    h->MeasureOnce();
    SleepUntil(next);
  }
  return nullptr;
}

void* ComputeHost::ThreadMain(void* self) {
  static_cast<ComputeHost*>(self)->Loop();
  return nullptr;
}

// Re-enables the channels if the control thread stops ticking. It takes no lock the control
// thread may hold while stuck in RM (only objs_mu_, never held across an RM call); RM
// serializes the controls itself.
void* ComputeHost::WatchdogMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  uint64_t released_beat = 0;  // the stall already handled: one release per stall
  while (h->running_.load(std::memory_order_acquire)) {
    SleepUntil(MonotonicNs() + 50'000'000);  // short: Stop() joins this thread at process exit
    const uint64_t beat = h->heartbeat_ns_.load(std::memory_order_acquire);
    if (beat != 0 && beat != released_beat && MonotonicNs() - beat > kWatchdogNs) {
      released_beat = beat;
      h->watchdog_releases_++;
      for (const ClientObjs& c : h->Snapshot()) {
        // Only what the gate disabled. They stay marked disabled, unconfirmed: the control
        // thread's next off edge disables them again, its next on edge enables them.
        const std::vector<uint32_t>& chans = c.disabled_channels;
        const uint32_t sub = h->CachedSubdevice(c.h_client, c.h_device);
        for (size_t i = 0; sub != 0 && i < chans.size(); i += 64) {
          const size_t n = std::min<size_t>(64, chans.size() - i);
          vcs_disable_channels_params p;
          vcore_sched_fill_disable(&p, c.h_client, chans.data() + i, static_cast<uint32_t>(n), 0);
          uint32_t status;
          h->rm_(h->rm_ctx_, c.h_client, sub, VCS_NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &p,
                 sizeof p, &status);
          h->MarkChannels(c.h_client, chans.data() + i, n, /*disabled=*/true,
                          /*confirmed=*/false);
        }
      }
      // After the enable: whatever gate edge the control thread issued meanwhile, its next
      // tick re-issues its own state over ours.
      h->watchdog_fired_.store(true, std::memory_order_release);
    }
  }
  return nullptr;
}

bool ComputeHost::Start() {
  if (started_) {
    return true;
  }
  running_.store(true, std::memory_order_release);
  if (pthread_create(&preempt_, nullptr, PreemptMain, this) != 0) {
    running_.store(false);
    return false;
  }
  if (pthread_create(&meter_, nullptr, MeterMain, this) != 0) {
    running_.store(false);
    StopWorkers();
    return false;
  }
  // Without its clock thread the host still caps GPU time (q = 1): not a reason to fail.
  clock_started_ =
      cfg_.clock != nullptr && pthread_create(&clock_thread_, nullptr, ClockMain, this) == 0;
  if (pthread_create(&thread_, nullptr, ThreadMain, this) != 0) {
    running_.store(false);
    StopWorkers();
    return false;
  }
  if (pthread_create(&watchdog_, nullptr, WatchdogMain, this) != 0) {
    running_.store(false);
    pthread_join(thread_, nullptr);
    StopWorkers();
    return false;
  }
  started_ = true;
  return true;
}

// Joins the PREEMPT worker, the meter and the clock thread. Each may be waiting in RM (a long
// kernel) or NVML: process exit must not wait for that forever, so together they get 2 s; false
// if one did not return.
bool ComputeHost::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(pre_mu_);
    pre_stop_ = true;
    pre_cv_.notify_one();
  }
  timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 2;
  const bool pre = pthread_timedjoin_np(preempt_, nullptr, &deadline) == 0;
  const bool meter = pthread_timedjoin_np(meter_, nullptr, &deadline) == 0;
  bool clock = true;
  if (clock_started_) {
    clock = pthread_timedjoin_np(clock_thread_, nullptr, &deadline) == 0;
    clock_started_ = !clock;
  }
  return pre && meter && clock;
}

bool ComputeHost::Stop() {
  bool clean = true;
  if (started_) {
    running_.store(false, std::memory_order_release);
    pthread_join(thread_, nullptr);
    pthread_join(watchdog_, nullptr);
  }
  {
    std::lock_guard<std::mutex> lock(ctl_mu_);
    vcore_sched_action acts[VCORE_SCHED_MAX_ACTIONS];
    const int n = vcore_sched_release_all(&sched_, acts, VCORE_SCHED_MAX_ACTIONS);
    Execute(acts, n);
    // Belt and braces: whatever the controller thought, every channel the gate disabled ends
    // enabled, without waiting for a PREEMPT the exiting process cannot afford to wait for.
    Gate(false, /*force=*/true);
  }
  if (started_) {
    // After the gate-on: with its channels enabled the TSG can finish and the PREEMPT return.
    clean = StopWorkers();
    started_ = false;
    // The last counters, before the shim detaches this process from the ledger (its counters
    // then move to the slot's accumulators, ledger.h).
    Publish();
  }
  return clean;
}

vcore_sched_slot_stats ComputeHost::Stats() {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  vcore_sched_slot_stats st{};
  vcore_sched_get_stats(&sched_, kSlot, &st);
  return st;
}

ComputeCounters ComputeHost::Counters() {
  std::lock_guard<std::mutex> lock(ctl_mu_);
  ComputeCounters c = counters_;
  c.samples = samples_.load();
  c.sample_period_ns = sample_period_ns_.load();
  c.measure_errors = measure_errors_.load();
  c.preempts = pre_done_.load();
  c.preempt_skips = pre_skips_.load();
  c.preempt_max_ns = pre_max_ns_.load();
  c.watchdog_releases = watchdog_releases_.load();
  c.busy_clock_mhz = busy_mhz_.load();
  c.ref_clock_mhz = cfg_.ref_clock_mhz != 0 ? cfg_.ref_clock_mhz : ref_mhz_.load();
  c.work_per_time_pm = work_pm_.load();
  c.control_errors += pre_errors_.load();
  c.own_busy_ns = own_busy_total_.load();
  c.member_busy_ns = member_busy_total_.load();
  c.foreign_busy_ns = foreign_busy_total_.load();
  c.publications = publications_.load();
  return c;
}

}  // namespace vgpu::shim::compute

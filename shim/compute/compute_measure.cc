#include "shim/compute/compute_host.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "shim/compute/compute_host_internal.h"
#include "shim/compute/perfmon.h"

extern "C" {
#include "sched/vcore_sched_ctrl.h"
}

namespace vgpu::shim::compute {

namespace {

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
//  - f_ref: the clock the GPU sustains when saturated at its power limit. Configured
//    (compute_ref_clock_mhz): the manager writes what it measured on this GPU over long
//    saturated stretches (daemon/reference_clock), a property of the GPU rather than of the
//    moment a process starts: a 2-s probe read 1483 MHz on a hot H200 and 1538 MHz on the same
//    card a minute later (docs/results/e2e-h200.md, run H), and caps 70/90 over-delivered by 3-5
//    points against the higher one. Unknown (0): learned by the start-up probe of a cap slot
//    (ref_clock_probe.h: the slot runs ungated from its first settled context, at most
//    ref_probe_max_ns), and from then on from spans with no off edge for kLearnQuietNs and
//    >= 90 % busy, as an exponential average over kLearnSpans spans (~1 s at 200 ms). Before
//    any is known q = 1 (the time cap).
//  - The probe also gives c's learner its reference bin (the tenant's DRAM traffic per busy
//    second at the saturated clock): a tenant capped from its first kernel never runs there
//    otherwise, and without that bin c stays at its prior 1, which under-delivers low caps
//    (26.3 % at cap 30 on the H200, docs/results/compute-h200.md, run 3). So a configured
//    reference skips the probe only where c is configured too; its spans then feed c alone.
//  - c's lifted bin takes only gated spans (an off edge within kLearnQuietNs, and not the
//    probe's last spans, which perfmon reports up to kPerfmonLagNs late): the probe's first
//    spans on a cold card boost far above the reference and once taught c = 0 (run H).
//  - c (the fraction of the busy time that scales with the clock): learned per tenant and GPU
//    from the same perfmon samples' DRAM (fb) busy, which is proportional to work for a given
//    loop (clock_scaling.h says how, and why not a constant: the H200 bf16 matmul loop's c was
//    0.5-1.0 across caps, docs/results/compute-h200.md, run 3); until it has learned, the model's
//    prior c = 1. Configured (compute_clock_scaling_pm) only by tests that want it fixed.
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
// Spans kept for c's learner until the reference is known: the probe's (at most
// ref_probe_max_ns, ~13 spans of 200 ms by default) with room to spare.
constexpr size_t kMaxUnbinned = 64;
constexpr uint64_t kForeignQuietNs = 2'000'000'000;
// How late perfmon reports GPU time (<= ~0.4 s on the H200, "Clock weighting").
constexpr uint64_t kPerfmonLagNs = 500'000'000;

}  // namespace

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
    memcpy(&count, b + kPerfmonCountOffset, sizeof count);
    memcpy(&tracker, b + kPerfmonTrackerOffset, sizeof tracker);
    dprintf(cfg_.log_fd, "perfmon: pid=%u count=%u tracker=%u period_ns=%llu\n", pid_, count,
            tracker, static_cast<unsigned long long>(d.period_ns));
    for (uint32_t k = 1; k <= 6 && k <= kPerfmonSampleCount; k++) {
      const uint8_t* s =
          b + kPerfmonSamplesOffset +
          ((tracker + kPerfmonSampleCount - k) % kPerfmonSampleCount) * kPerfmonSampleSize;
      uint64_t ts;
      uint32_t util, proc;
      memcpy(&ts, s, sizeof ts);
      memcpy(&util, s + kSampleGrOffset + kEngineUtilOffset, sizeof util);
      memcpy(&proc, s + kSampleGrOffset + kEngineProcIdOffset, sizeof proc);
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
  // fb is the whole GPU's DRAM traffic, and a sample names only the process on the engine at its
  // end: another process's traffic also hides in samples that name the slot. So c learns only
  // while no sample has named anyone outside the slot for kForeignQuietNs.
  const uint64_t now_ns = MonotonicNs();
  if (d.other_busy_ns != 0) {
    last_foreign_ns_ = now_ns;
  }
  const bool shared = last_foreign_ns_ != 0 && now_ns - last_foreign_ns_ < kForeignQuietNs;
  const uint64_t q = WorkPerTime(d.own_busy_ns + d.member_busy_ns + d.unattributed_busy_ns,
                                 d.span_ns, d.fb_busy_ns, shared);
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

// Meter thread: folds the clock samples taken since the last span, learns the reference and c.
// `shared`: a process outside the slot was named recently, so the span's fb (the whole GPU's
// DRAM busy) is not the slot's work signal.
uint32_t ComputeHost::WorkPerTime(uint64_t busy_ns, uint64_t span_ns, uint64_t fb_ns, bool shared) {
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
  const uint64_t now = MonotonicNs();
  const uint64_t last_off = last_gate_off_ns_.load(std::memory_order_relaxed);
  const bool quiet = last_off == 0 || now - last_off > kLearnQuietNs;
  const bool probing = probe_state_.load() == 1;
  if (probing) {
    // The start-up probe (ref_clock_probe.h): the slot runs ungated until it has learned. A
    // configured reference stays the reference: the probe ran for c's reference spans.
    if (probe_.Add(now, busy_ns, span_ns, n != 0 ? busy : 0) != RefClockProbe::State::kProbing) {
      if (cfg_.ref_clock_mhz == 0) {
        ref = probe_.ref_mhz();
      }
      probe_end_ns_ = now;
      ref_mhz_.store(ref, std::memory_order_relaxed);  // before the state the control thread reads
      probe_state_.store(probe_.state() == RefClockProbe::State::kLearned ? 2 : 3);
    }
  } else if (cfg_.ref_clock_mhz == 0 && n != 0 && quiet && span_ns != 0 &&
             busy_ns * 10 >= span_ns * 9) {
    ref = ref == 0 ? busy : (ref * (kLearnSpans - 1) + busy) / kLearnSpans;
  }
  ref_mhz_.store(ref, std::memory_order_relaxed);
  // c's learner (clock_scaling.h) bins spans by u = ref / clock; the probe's spans, the
  // reference bin's first, come before a learned reference is known, so they wait for it. Only a
  // gated span may be a lifted one ("Clock weighting").
  const bool after_probe = !probing && (probe_end_ns_ == 0 || now - probe_end_ns_ >= kPerfmonLagNs);
  const bool gated = !quiet && after_probe;
  if (n != 0 && !shared && unbinned_.size() < kMaxUnbinned) {
    unbinned_.push_back({busy_ns, fb_ns, busy, gated});
  }
  if (ref != 0) {
    for (const UnbinnedSpan& u : unbinned_) {
      scaling_.Add(u.busy_ns, u.fb_ns,
                   static_cast<uint32_t>(std::min<uint64_t>(uint64_t{ref} * 1000 / u.mhz, 10'000)),
                   u.gated);
    }
    unbinned_.clear();
  }
  const bool configured = cfg_.clock_scaling_pm != kLearnClockScaling;
  const uint32_t c_pm = configured
                            ? std::min<uint32_t>(cfg_.clock_scaling_pm, ClockScalingLearner::kMaxPm)
                            : scaling_.c_pm();
  scaling_pm_.store(c_pm, std::memory_order_relaxed);
  scaling_learned_.store(!configured && scaling_.learned(), std::memory_order_relaxed);
  rho_ref_pm_.store(scaling_.rho_ref_pm(), std::memory_order_relaxed);
  rho_lift_pm_.store(scaling_.rho_lift_pm(), std::memory_order_relaxed);
  u_lift_pm_.store(scaling_.u_lift_pm(), std::memory_order_relaxed);
  uint32_t q = 1000;
  if (busy != 0 && ref != 0) {
    // q = 1 / (c / x + 1 - c) = 1000 * busy / (c * ref + (1 - c) * busy), in permille. Signed:
    // c may exceed 1 (clock_scaling.h, kMaxPm), and then a high enough clock leaves no positive
    // denominator: the most work per time the clamp allows.
    const int64_t c = c_pm;
    const int64_t den = c * ref + (1000 - c) * int64_t{busy};
    q = den > 0 ? static_cast<uint32_t>(
                      std::clamp<int64_t>(int64_t{busy} * 1'000'000 / den, 1000, kMaxWorkPerTimePm))
                : kMaxWorkPerTimePm;
  }
  work_pm_.store(q, std::memory_order_relaxed);
  return q;
}

// Control thread, ctl_mu_ held: once the probe has ended (learned or given up), the controller
// switches from share 100 to the slot's share. The share change forgives the probe's spans
// (vcore_sched_slot_set: reports of time before the change do not count against the new share).
void ComputeHost::EndProbeIfDone() {
  if (!probing_ || probe_state_.load() == 1) {
    return;
  }
  probing_ = false;
  vcore_sched_action a[2];
  const int n = vcore_sched_slot_set(&sched_, kSlot, cfg_.share, cfg_.mode, a);
  if (n > 0) {
    Execute(a, n);
  }
  if (cfg_.log_fd >= 0) {
    dprintf(cfg_.log_fd,
            "clock probe: %s, reference %u MHz (%s; the probe's %u MHz) after %u "
            "saturated spans\n",
            probe_state_.load() == 2 ? "learned" : "gave up", ref_mhz_.load(),
            cfg_.ref_clock_mhz != 0 ? "configured" : "probed", probe_.ref_mhz(),
            probe_.busy_spans());
  }
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
    // Bound as soon as the first context exists (every clock_poll_ns until then): a cap slot's
    // probe runs ungated until the clock is known to work or known to be missing.
    const std::vector<ClientObjs> objs = Snapshot(/*settled_only=*/false);
    if (objs.empty()) {
      return;  // no GPU context yet: try again at the next poll
    }
    clock_bind_next_ns_ = now + kClockBindRetryNs;
    const uint32_t sub = Subdevice(objs[0].h_client, objs[0].h_device);
    // flags 0 = FORMAT_ASCII | TYPE_SHA1: "GPU-%08x-%04x-%04x-%04x-%012x", NVML's UUID form.
    NV2080_CTRL_GPU_GET_GID_INFO_PARAMS p{};
    uint32_t status = 0;
    const bool gid = sub != 0 &&
                     rm_(rm_ctx_, objs[0].h_client, sub, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &p,
                         sizeof p, &status) == 0 &&
                     status == 0;
    const uint32_t len = p.length;
    char uuid[96] = "";
    if (gid && len > 0 && len < sizeof uuid) {
      memcpy(uuid, p.data, len);
      uuid[len] = '\0';
    }
    clock_bound_ = cfg_.clock->Bind(uuid[0] != '\0' ? uuid : nullptr);
    clock_failed_ = !clock_bound_;
    uint32_t probing = 1;
    if (clock_failed_) {
      probe_state_.compare_exchange_strong(probing, 3);  // nothing to learn: cap time at once
    }
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

namespace {

// A periodic thread's loop: `once` every `period_ns` (from one start to the next) while
// `running` holds.
template <typename Once>
void RunEvery(const std::atomic<bool>& running, const uint64_t& period_ns, Once once) {
  while (running.load(std::memory_order_acquire)) {
    const uint64_t next = MonotonicNs() + period_ns;
    once();
    SleepUntil(next);
  }
}

}  // namespace

void* ComputeHost::ClockMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  RunEvery(h->running_, h->cfg_.clock_poll_ns, [h] { h->ClockOnce(); });
  return nullptr;
}

void* ComputeHost::MeterMain(void* self) {
  auto* h = static_cast<ComputeHost*>(self);
  RunEvery(h->running_, h->cfg_.measure_ns, [h] { h->MeasureOnce(); });
  return nullptr;
}

}  // namespace vgpu::shim::compute

// ComputeHost: construction, the control loop, start and stop, counters. The objects it gates
// are tracked in compute_objects.cc, the gate's protocol is compute_gate.cc, measurement and the
// clock weighting compute_measure.cc (compute_host_internal.h).
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

constexpr uint64_t kMaxSleepNs = 5'000'000;
constexpr uint64_t kReapplyNs = 1'000'000'000;

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
      pid_(cfg.pid != 0 ? cfg.pid : static_cast<uint32_t>(getpid())),
      probe_(cfg.ref_probe_max_ns) {
  // The probe learns the reference clock, and gives c's learner its reference spans (the tenant
  // saturating at the reference: clock_scaling.h). With both configured nothing is left to learn.
  const bool learn_c = cfg_.clock_scaling_pm == kLearnClockScaling;
  probing_ = cfg_.mode == VCORE_SCHED_MODE_CAP && cfg_.share < 100 && cfg_.clock != nullptr &&
             (cfg_.ref_clock_mhz == 0 || learn_c) && cfg_.ref_probe_max_ns != 0;
  probe_state_.store(probing_ ? 1 : 0);
  scaling_pm_.store(cfg_.clock_scaling_pm != kLearnClockScaling
                        ? std::min<uint32_t>(cfg_.clock_scaling_pm, ClockScalingLearner::kMaxPm)
                        : ClockScalingLearner::kPriorPm);
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
  // While the reference clock's probe runs, a cap slot runs ungated (ref_clock_probe.h); the
  // share is applied when it ends (EndProbeIfDone).
  probing_ = probing_ && mode == VCORE_SCHED_MODE_CAP;
  uint32_t probing_state = 1;
  if (!probing_) {
    probe_state_.compare_exchange_strong(probing_state, 0);  // no longer needed
  }
  const uint32_t sched_share = probing_ ? 100 : share;
  int n = vcore_sched_slot_set(&sched_, kSlot, sched_share, mode, a);
  if (n == -VCS_ENOENT) {
    n = vcore_sched_slot_add(&sched_, kSlot, sched_share, mode);
  }
  if (n > 0) {
    Execute(a, n);
  }
  // Weight: the other side of the split is a party of the controller only when its total share
  // is known (compute_foreign_share). A slot knows its own share only: assuming 100 - share made
  // the feedback correct toward the wrong target on a node whose weight slots do not sum to 100
  // (two slots of weight 30 each measured 50 % and each shrank its timeslice every window, towards
  // the 200 us floor, where the switches cost throughput). Without it the split is the calibrated
  // map's (each tenant's timeslice is its own share; the runlist alternates), which held 30/70 and
  // 10/90 within 1 point in separate slots on the H200 (docs/results/compute-h200.md, run 14).
  if (mode == VCORE_SCHED_MODE_WEIGHT && share < 100 && cfg_.foreign_share != 0) {
    vcore_sched_slot_add(&sched_, kForeign, cfg_.foreign_share, VCORE_SCHED_MODE_FOREIGN);
  }
  cfg_.share = share;
  cfg_.mode = mode;
  mode_.store(mode, std::memory_order_relaxed);
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

void ComputeHost::SetTimeslice(uint64_t us) {
  for (const ClientObjs& c : Snapshot()) {
    for (uint32_t tsg : c.tsgs) {
      NVA06C_CTRL_TIMESLICE_PARAMS p;
      vcore_sched_fill_timeslice(&p, us);
      Control(c.h_client, tsg, NVA06C_CTRL_CMD_SET_TIMESLICE, &p, sizeof p);
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
        tsg.settled = true;  // disabled now if the slot is gated off, else at the next off edge
        generation_++;
      }
    }
    gen = generation_;
  }
  const bool changed = gen != applied_generation_;
  const bool due = changed || now - last_reapply_ns_ >= kReapplyNs;
  if (due) {
    applied_generation_ = gen;
    last_reapply_ns_ = now;
  }
  // One Gate() call covers both reasons, so an owed enable and an object change in the same
  // tick wait for the PREEMPT worker once, not twice:
  //  - changed, off: new channels, and TSGs that just settled, join the gate. On: a TSG that
  //    libcuda took off the runlist while we had its channels disabled and now schedules again
  //    gets them back; a TSG never disabled is not touched (compute_gate.cc, "The gate's
  //    protocol");
  //  - the last on edge waited for a PREEMPT in vain: its enable is retried every tick.
  if ((changed && (gated_ || ever_gated_)) || (enable_owed_ && !gated_)) {
    Gate(gated_);
  }
  if (due && timeslice_us_ != 0) {
    SetTimeslice(timeslice_us_);
  }
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
      EndProbeIfDone();
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
                "clk_mhz=%u ref_mhz=%u work_pm=%u probe=%u c_pm=%u c_learned=%d rho_ref_pm=%u "
                "rho_lift_pm=%u u_lift_pm=%u watchdog=%llu enables_deferred=%llu\n",
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
                work_pm_.load(), probe_state_.load(), scaling_pm_.load(),
                scaling_learned_.load() ? 1 : 0, rho_ref_pm_.load(), rho_lift_pm_.load(),
                u_lift_pm_.load(), static_cast<unsigned long long>(watchdog_releases_.load()),
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

void* ComputeHost::ThreadMain(void* self) {
  static_cast<ComputeHost*>(self)->Loop();
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
  c.ref_probe_state = probe_state_.load();
  c.clock_scaling_pm = scaling_pm_.load();
  c.clock_scaling_learned = scaling_learned_.load();
  c.control_errors += pre_errors_.load();
  c.own_busy_ns = own_busy_total_.load();
  c.member_busy_ns = member_busy_total_.load();
  c.foreign_busy_ns = foreign_busy_total_.load();
  c.publications = publications_.load();
  return c;
}

}  // namespace vgpu::shim::compute

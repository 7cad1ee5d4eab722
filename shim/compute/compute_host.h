// The shim host of the compute share controller (kmod/core/sched): a control thread inside the
// tenant's process that measures the process's GPU time and drives the process's own TSGs and
// channels through the process's own ctl fd (the only file RM accepts controls on for those
// clients, nvidia-rm-abi.md §9.2).
//
// The object source (which TSGs and channels exist) and the way controls are issued are
// injected: libvgpu-shim.so wires them to vshim_hooks.h (compute_shim.cc); the GPU measurement
// preload in tests/gpu/compute wires them to its own ioctl interposer; unit tests to a fake RM.
//
// No stalls (docs/results/compute-h200.md): the gate is the only state that can leave a tenant
// stuck, and
//  - Stop() (process exit through the shim's destructor, fork child re-init) joins the thread and
//    then gates every channel back on;
//  - a TSG or channel that appears while the slot is gated off is disabled by the next tick,
//    once libcuda has scheduled the TSG (never before: that froze the tenant on the H200);
//  - process death (crash, SIGKILL, exec): the kernel closes the ctl fd and RM frees the client
//    with its TSGs and channels, so nothing remains to re-enable;
//  - the control thread cannot die alone (no exceptions, no exits), and it issues only the
//    controls that gate (DISABLE_CHANNELS, SET_TIMESLICE). The RM calls that may wait run on their
//    own threads: PREEMPT(bWait=1), which waits for the TSG to leave the GPU (a kernel that runs
//    for seconds), and the perfmon read (an RPC to GSP; a stall there was once suspected on the
//    H200 and later ruled out: docs/results). A blocked measurement leaves the controller in
//    open loop; a blocked PREEMPT skips later ones; a blocked NVML clock read only stops the
//    clock weighting.
//  - a watchdog re-enables the channels after kWatchdogNs without a tick, whatever the control
//    thread is stuck in (it needs no lock that thread holds), once per stall; when the control
//    thread comes back it re-issues its own gate state, since the watchdog changed the channels
//    behind its back (unit test: vshim_compute_clock_test,
//    ComputeClock.WatchdogReleaseThenGatingResumes). The H200 run that looked like a stopped
//    control thread (docs/results, run 2, long kernel) was not one: its controller.log ticks
//    through the whole capped phase (see the results doc).
//
// Work, not time: with a ClockSource the measured GPU time is weighted by the SM clock it ran
// at relative to the clock the GPU sustains uncapped under load (sm_clock.h explains why;
// compute_measure.cc "Clock weighting" explains the estimate, the period and the clamps).
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

extern "C" {
#include "sched/vcore_sched.h"
}

#include "shim/compute/clock_scaling.h"
#include "shim/compute/compute_config.h"
#include "shim/compute/perfmon.h"
#include "shim/compute/ref_clock_probe.h"
#include "shim/compute/sm_clock.h"

namespace vgpu::shim::compute {

class ComputeHost {
 public:
  ComputeHost(const ComputeConfig& cfg, RmControlFn rm, void* rm_ctx);
  ~ComputeHost();
  ComputeHost(const ComputeHost&) = delete;
  ComputeHost& operator=(const ComputeHost&) = delete;

  // Object lifecycle (from the shim's hooks; cheap, never blocks on RM).
  void OnTsg(uint32_t h_client, uint32_t h_device, uint32_t h_tsg, uint32_t engine_type);
  void OnTsgFreed(uint32_t h_client, uint32_t h_tsg);
  void OnChannel(uint32_t h_client, uint32_t h_tsg, uint32_t h_channel);
  void OnChannelFreed(uint32_t h_client, uint32_t h_channel);
  void OnClientGone(uint32_t h_client);
  // A subdevice (NV20_SUBDEVICE_0) the process allocated; saves the GET_CHILD_HANDLE lookup.
  void OnSubdevice(uint32_t h_client, uint32_t h_device, uint32_t h_subdevice);
  // GPFIFO_SCHEDULE(bEnable) on the TSG succeeded. Only a scheduled TSG is controlled: libcuda
  // schedules it at the end of context setup, and a TSG gated or preempted before that froze
  // the tenant on the H200 (compute_objects.cc, "Scheduled TSGs only").
  void OnTsgScheduled(uint32_t h_client, uint32_t h_tsg, bool scheduled);

  // Starts the control thread. Returns false if it could not (then nothing is ever gated).
  bool Start();
  // Stops the threads and gates everything back on. Idempotent. Returns false if the PREEMPT
  // worker was still blocked in RM after 2 s: the object must then be leaked, not deleted.
  bool Stop();
  // Changes share/mode at run time (the GPU benchmark's schedule uses it).
  void Set(uint32_t share, uint32_t mode);

  vcore_sched_slot_stats Stats();
  ComputeCounters Counters();

  static constexpr uint32_t kSlot = 1;     // this process's slot in its own controller
  static constexpr uint32_t kForeign = 2;  // the rest of the GPU (weight mode)
  static constexpr uint64_t kWatchdogNs = 500'000'000;

 private:
  struct Tsg {
    uint32_t h_device;
    uint32_t engine_type;
    bool scheduled = false;
    uint64_t scheduled_ns = 0;  // when GPFIFO_SCHEDULE(bEnable=1) succeeded
    bool settled = false;       // settle_ns passed since: controlled (control thread sets it)
  };
  struct Channel {
    uint32_t h_tsg;
    // This host asked RM to disable it and has not enabled it since: set before the disable is
    // issued, kept by the watchdog's enable ("maybe disabled" must never miss one). Only such
    // channels are ever enabled.
    bool disabled = false;
    bool disable_confirmed = false;  // and RM said the disable succeeded: not re-issued
  };
  using Key = std::pair<uint32_t, uint32_t>;  // (client, handle)

  static void* ThreadMain(void* self);
  static void* PreemptMain(void* self);
  static void* MeterMain(void* self);
  static void* ClockMain(void* self);
  void ClockOnce();  // clock thread
  // Weight (permille) for GPU time measured over a span: clock while busy / reference clock.
  uint32_t WorkPerTime(uint64_t busy_ns, uint64_t span_ns, uint64_t fb_ns, bool shared);
  bool StopWorkers();
  static void* WatchdogMain(void* self);
  void Loop();
  void MeasureOnce();                                     // meter thread
  static PerfmonOwner Classify(void* ctx, uint32_t pid);  // meter thread, per perfmon read
  void Publish();  // control thread (or Stop() after it), never with ctl_mu_ held
  void Execute(const vcore_sched_action* a, int n);
  // force: enable without waiting for the off edge's PREEMPT (Stop() only).
  void Gate(bool off, bool force = false);
  // Waits up to wait_ns for the PREEMPT worker to have nothing queued or in flight.
  bool PreemptsSettled(uint64_t wait_ns);
  // Sets Channel::disabled to `disabled` and disable_confirmed to `confirmed`.
  void MarkChannels(uint32_t h_client, const uint32_t* channels, size_t n, bool disabled,
                    bool confirmed);
  void LogEdge(const char* what, size_t tsgs, size_t channels);
  void SetTimeslice(uint64_t us);
  void Reapply();
  // Libcuda's subdevice under the device (cached; looked up with GET_CHILD_HANDLE once).
  uint32_t Subdevice(uint32_t h_client, uint32_t h_device);
  uint32_t CachedSubdevice(uint32_t h_client, uint32_t h_device);
  bool Control(uint32_t h_client, uint32_t h_object, uint32_t cmd, void* p, uint32_t size);
  // Scheduled GR TSGs and their channels, grouped by client, copied under the lock.
  struct ClientObjs {
    uint32_t h_client;
    uint32_t h_device;
    std::vector<uint32_t> tsgs;
    std::vector<uint32_t> channels;
    std::vector<uint32_t> disabled_channels;  // those of `channels` this host disabled
    std::vector<uint32_t> to_disable;         // those of `channels` not confirmed disabled
  };
  // settled_only: without the TSGs still within settle_ns of their schedule (what is gated).
  std::vector<ClientObjs> Snapshot(bool settled_only = true);

  ComputeConfig cfg_;
  RmControlFn rm_;
  void* rm_ctx_;

  std::mutex objs_mu_;  // guards tsgs_, channels_, generation_, subdevices_; never held in RM
  std::map<Key, Tsg> tsgs_;
  std::map<Key, Channel> channels_;
  uint64_t generation_ = 0;
  std::map<Key, uint32_t> subdevices_;  // (client, device) -> subdevice handle (0: none)

  std::mutex ctl_mu_;  // guards sched_, gated_, timeslice_us_, counters_, the gating controls
  vcore_sched sched_{};
  bool gated_ = false;
  bool ever_gated_ = false;  // a weight slot never gates: no enables to re-issue either
  uint64_t timeslice_us_ = 0;
  uint64_t applied_generation_ = 0;
  bool enable_owed_ = false;  // an on edge found its off edge's PREEMPT pending: retry
  uint64_t enables_deferred_ = 0;
  uint32_t edges_logged_ = 0;
  uint64_t last_gate_change_ns_ = 0;
  uint64_t last_log_ns_ = 0;
  uint64_t last_reapply_ns_ = 0;
  ComputeCounters counters_;

  // Meter thread: its own perfmon state; hands reports over under rep_mu_.
  std::vector<uint8_t> perfmon_buf_;
  uint64_t perfmon_last_ts_ = 0;
  uint32_t perfmon_client_ = 0;
  bool perfmon_logged_ = false;
  std::atomic<uint32_t> mode_{VCORE_SCHED_MODE_CAP};
  std::atomic<uint64_t> samples_{0}, sample_period_ns_{0}, measure_errors_{0};
  uint32_t pid_ = 0;  // cfg_.pid or getpid()
  // Per perfmon read: the pids already asked about (slot_member is asked once per pid per read).
  std::vector<std::pair<uint32_t, bool>> member_memo_;
  std::atomic<uint64_t> own_busy_total_{0}, member_busy_total_{0}, foreign_busy_total_{0};
  std::mutex rep_mu_;  // guards reports_, unattributed_
  std::vector<vcore_sched_report> reports_;
  std::vector<PerfmonDelta::Sample> unattributed_;  // cap: not yet published
  uint64_t last_publish_ns_ = 0;                    // control thread
  std::atomic<uint64_t> publications_{0};
  pthread_t meter_{};

  // Clock thread and the clock weighting (compute_measure.cc, "Clock weighting").
  std::atomic<bool> gate_on_{true};                  // !gated_, for the clock thread
  std::atomic<uint64_t> last_gate_off_ns_{0};        // when the slot was last gated off
  std::mutex clk_mu_;                                // guards clk_sum_, clk_n_
  uint64_t clk_sum_ = 0, clk_n_ = 0;                 // on-phase samples since the meter took them
  bool clock_bound_ = false, clock_failed_ = false;  // clock thread only
  uint64_t clock_bind_next_ns_ = 0;
  std::atomic<uint32_t> busy_mhz_{0}, ref_mhz_{0}, work_pm_{1000};
  // The reference clock's probe (ref_clock_probe.h): the meter feeds probe_ and publishes
  // probe_state_ (0 none, 1 probing, 2 learned, 3 gave up); the control thread holds the
  // controller at share 100 while probing_ and applies the slot's share when the probe ends.
  RefClockProbe probe_;
  ClockScalingLearner scaling_;  // meter thread; c_pm_ published for the counters
  struct UnbinnedSpan {
    uint64_t busy_ns, fb_ns;
    uint32_t mhz;
    bool gated;  // duty-cycled: may be a lifted span (compute_measure.cc, "Clock weighting")
  };
  std::vector<UnbinnedSpan> unbinned_;  // meter thread: spans before the reference was known
  uint64_t last_foreign_ns_ = 0;        // meter thread: the last span naming a non-member
  uint64_t probe_end_ns_ = 0;           // meter thread: when the start-up probe ended
  std::atomic<uint32_t> scaling_pm_{0};
  std::atomic<bool> scaling_learned_{false};
  std::atomic<uint32_t> rho_ref_pm_{0}, rho_lift_pm_{0}, u_lift_pm_{0};  // for the log
  std::atomic<uint32_t> probe_state_{0};
  bool probing_ = false;  // ctl_mu_
  void EndProbeIfDone();  // control thread, ctl_mu_ held
  pthread_t clock_thread_{};
  bool clock_started_ = false;

  // PREEMPT worker: takes the TSGs of one off edge at a time (pre_mu_ guards pre_*).
  std::mutex pre_mu_;
  std::condition_variable pre_cv_;
  std::condition_variable pre_idle_cv_;  // the worker finished a batch
  std::vector<Key> pre_todo_;
  bool pre_busy_ = false;
  bool pre_stop_ = false;
  std::atomic<uint64_t> pre_done_{0}, pre_skips_{0}, pre_max_ns_{0}, pre_errors_{0};
  pthread_t preempt_{};

  std::atomic<bool> running_{false};
  std::atomic<uint64_t> heartbeat_ns_{0};
  // Set by the watchdog after it re-enabled the channels of a stuck control thread; the control
  // thread re-issues its gate state when it sees it.
  std::atomic<bool> watchdog_fired_{false};
  std::atomic<uint64_t> watchdog_releases_{0};
  pthread_t thread_{};
  pthread_t watchdog_{};
  bool started_ = false;
};

uint64_t MonotonicNs();

}  // namespace vgpu::shim::compute

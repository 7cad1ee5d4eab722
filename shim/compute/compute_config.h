// What ComputeHost is given and what it reports (compute_host.h): the RM and slot callbacks, its
// configuration, its counters and the per-second publication for the manager.
#pragma once

#include <cstdint>

extern "C" {
#include "sched/vcore_sched.h"
}

#include "shim/compute/perfmon.h"
#include "shim/compute/ref_clock_probe.h"
#include "shim/compute/sm_clock.h"

namespace vgpu::shim::compute {

// Issues one RM control (NVOS54) on h_client's ctl fd. Returns 0 or -errno; *status = RM status.
using RmControlFn = int (*)(void* ctx, uint32_t h_client, uint32_t h_object, uint32_t cmd,
                            void* params, uint32_t params_size, uint32_t* status);

// Multi-process slots (compute_measure.cc, "Multi-process slots"): true if `pid`, as perfmon names
// it (this process's pid namespace), is a live process of this process's slot. Called from the
// meter thread, at most once per distinct pid per perfmon read.
using SlotMemberFn = bool (*)(void* ctx, uint32_t pid);

// What the control thread publishes about this process once every publish_ns (and once more
// at Stop()), for the manager's per-slot counters (libvgpu-shim.so writes it into the slot's
// ledger, shim/preload/ledger.h). Counters are cumulative over the host's life.
struct ComputePublication {
  uint64_t busy_ns = 0;       // GPU busy in perfmon samples naming this process (time, unweighted)
  uint64_t throttled_ns = 0;  // time this process's gate held its channels off
  uint32_t achieved_share_1s_pm = 0;   // the slot's share of the GPU over the last 1 s, as measured
  uint32_t achieved_share_10s_pm = 0;  // the same over the last 10 s
  // Cap mode: the samples naming no process since the last publication (weight: none). They
  // count as the slot's (perfmon.h), but every member reads them, so the ledger keeps one
  // slot-wide counter of them, deduplicated by timestamp.
  const PerfmonDelta::Sample* unattributed = nullptr;
  uint32_t n_unattributed = 0;
};
using PublishFn = void (*)(void* ctx, const ComputePublication& p);

inline constexpr uint32_t kLearnClockScaling = UINT32_MAX;

struct ComputeConfig {
  uint32_t share = 100;                  // 1..100
  uint32_t mode = VCORE_SCHED_MODE_CAP;  // VCORE_SCHED_MODE_CAP or _WEIGHT
  // Weight: the other weight slots' total share on this GPU, if whoever configures the slot knows
  // it; 0: unknown, no feedback (compute_host.cc, Set()).
  uint32_t foreign_share = 0;
  uint64_t measure_ns = 100'000'000;  // perfmon poll interval
  // Weight feedback window: the one for perfmon-sampled measurements (vcore_sched.h says why).
  uint64_t weight_window_ns = VCORE_SCHED_SAMPLED_WEIGHT_WINDOW_NS;
  int log_fd = -1;  // one line per second of counters, if >= 0
  // A scheduled TSG is left alone for this long after its GPFIFO_SCHEDULE (0: controlled at
  // once); compute_objects.cc, "Scheduled TSGs only", says why and where the value comes from.
  uint64_t settle_ns = 250'000'000;
  // Clock weighting (nullptr: GPU time is counted as is). Not owned; must outlive the host.
  ClockSource* clock = nullptr;
  uint32_t ref_clock_mhz = 0;  // the GPU's saturated uncapped SM clock; 0: learn it
  // Cap with a clock and no ref_clock_mhz: the start-up probe that learns it (ref_clock_probe.h)
  // runs for at most this long after the first settled context; 0: no probe.
  uint64_t ref_probe_max_ns = RefClockProbe::kDefaultMaxNs;
  // c, the permille of the work's time that scales with the clock: learned per tenant and GPU
  // (clock_scaling.h) unless configured (tests that want it fixed).
  uint32_t clock_scaling_pm = kLearnClockScaling;
  uint64_t clock_poll_ns = 20'000'000;  // SM clock sample interval while gated on
  // The slot's other processes (nullptr: the slot is this process alone, as in the standalone
  // GPU test preload). Not owned.
  SlotMemberFn slot_member = nullptr;
  void* slot_member_ctx = nullptr;
  uint32_t pid = 0;  // this process as perfmon names it; 0: getpid() (tests model several)
  // Counter publication (nullptr: none). Called from the control thread, never with a host lock
  // held; it may take a process-shared lock, never one of the tenant's launch paths.
  PublishFn publish = nullptr;
  void* publish_ctx = nullptr;
  uint64_t publish_ns = 1'000'000'000;
};

struct ComputeCounters {
  uint64_t ticks = 0;
  uint64_t controls = 0;        // RM controls issued
  uint64_t control_errors = 0;  // ioctl error or RM status != 0
  uint64_t measure_errors = 0;
  uint64_t samples = 0;  // perfmon samples consumed
  uint64_t sample_period_ns = 0;
  uint64_t preempts = 0;        // PREEMPT calls completed by the worker
  uint64_t preempt_skips = 0;   // off edges whose PREEMPT was skipped: previous one pending
  uint64_t preempt_max_ns = 0;  // longest PREEMPT(bWait=1) seen
  uint32_t last_bad_status = 0;
  uint32_t last_bad_cmd = 0;
  uint64_t watchdog_releases = 0;    // stalls of the control thread the watchdog gated back on
  uint32_t busy_clock_mhz = 0;       // mean SM clock of the last measured span's on phases
  uint32_t ref_clock_mhz = 0;        // configured or learned saturated uncapped clock
  uint32_t work_per_time_pm = 1000;  // last weight applied to measured GPU time (permille)
  uint32_t clock_scaling_pm = 0;     // c in use: configured, learned, or the learner's prior
  bool clock_scaling_learned = false;
  // The reference clock's start-up probe: 0 none, 1 probing, 2 learned, 3 gave up.
  uint32_t ref_probe_state = 0;
  uint64_t own_busy_ns = 0;      // busy in samples naming this process
  uint64_t member_busy_ns = 0;   // busy in samples naming another process of the slot
  uint64_t foreign_busy_ns = 0;  // busy in samples naming a process outside the slot
  uint64_t publications = 0;
};

}  // namespace vgpu::shim::compute

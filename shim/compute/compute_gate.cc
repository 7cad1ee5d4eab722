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

// How long an on edge waits for its off edge's PREEMPT ("The gate's protocol").
constexpr uint64_t kEnableWaitNs = 20'000'000;
constexpr uint32_t kEdgesLogged = 64;

}  // namespace

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
  // After the wait: the channels and their marks as they are now, not as they were before it.
  const std::vector<ClientObjs> objs = Snapshot();
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
    for (size_t i = 0; i < chans.size(); i += NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES) {
      const size_t n =
          std::min<size_t>(NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES, chans.size() - i);
      NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS p;
      vcore_sched_fill_disable(&p, c.h_client, chans.data() + i, static_cast<uint32_t>(n),
                               off ? 1 : 0);
      if (off) {  // marked first: the watchdog may need to enable them while RM still has this
        MarkChannels(c.h_client, chans.data() + i, n, /*disabled=*/true, /*confirmed=*/false);
      }
      const bool ok = Control(c.h_client, sub, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &p, sizeof p);
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
      NVA06C_CTRL_PREEMPT_PARAMS p;
      vcore_sched_fill_preempt(&p);
      uint32_t status = 0;
      const uint64_t t0 = MonotonicNs();
      const int rc =
          h->rm_(h->rm_ctx_, k.first, k.second, NVA06C_CTRL_CMD_PREEMPT, &p, sizeof p, &status);
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
          NV2080_CTRL_FIFO_DISABLE_CHANNELS_PARAMS p;
          vcore_sched_fill_disable(&p, c.h_client, chans.data() + i, static_cast<uint32_t>(n), 0);
          uint32_t status;
          h->rm_(h->rm_ctx_, c.h_client, sub, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &p, sizeof p,
                 &status);
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

}  // namespace vgpu::shim::compute

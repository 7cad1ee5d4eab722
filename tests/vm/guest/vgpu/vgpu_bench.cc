// The proxy's cost on the hot path: a small RM_CONTROL through /dev/vgpuctlN (filter core +
// forwarding) against the same control on the same kind of object directly on nvsim's
// /dev/nvidiactl, measured in the same run in interleaved rounds (the order alternates every
// round). A batch is 1000 calls (about 5 ms under TCG): shorter ones were dominated by timer
// ticks and host bursts (121 x 200 calls gave a p10..p90 ratio spread of 0.96..1.47).
// Prints per-call times (min and median over rounds) and the ratio: min-of-mins (the two paths'
// best batches, least disturbed by other work on the host), the median of the per-round ratios,
// and their 10th..90th percentile spread; the unsealed path's target was <= 1.15x; every control
// now runs from a sealed copy of its NVOS54, kmod/seal.c (docs/results/kmod-bench.md). The slot has
// a memory quota, as a tenant's does, so FB_GET_INFO_V2 goes through the memory view's rewrite. A
// measurement, not a test: it fails only if a call fails. VGPU_BENCH_ROUNDS and VGPU_BENCH_CALLS
// (per batch) scale it (guest.sh shortens it on KASAN). The process is pinned to the vCPU it
// starts on: a migration between QEMU's vCPU threads in the middle of a batch lands on one path
// only.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "vgpu_rm.h"

namespace {

using namespace vgpu_test;  // NOLINT

struct Target {
  Session s;
  uint32_t tsg = 0xe0000001;
};

bool Setup(Target& t, const std::string& ctl, const std::string& dev) {
  std::string err = t.s.Open(ctl, dev);
  if (!err.empty()) {
    std::fprintf(stderr, "bench: %s: %s\n", ctl.c_str(), err.c_str());
    return false;
  }
  nv_channel_group_alloc_params gp{};
  gp.engineType = 1;
  int64_t st = Alloc(t.s.ctl, t.s.client, t.s.device, &t.tsg, KEPLER_CHANNEL_GROUP_A, &gp);
  if (st != NV_OK) {
    std::fprintf(stderr, "bench: TSG alloc on %s: %lld\n", ctl.c_str(), static_cast<long long>(st));
    return false;
  }
  return true;
}

// ns per call of one batch.
double Batch(Target& t, uint32_t cmd, int n) {
  nva06c_timeslice_params ts{};
  nv2080_fb_get_info_v2_params fb{};
  fb.fbInfoListSize = 1;
  fb.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    int64_t st = cmd == NVA06C_CTRL_CMD_GET_TIMESLICE
                     ? Control(t.s.ctl, t.s.client, t.tsg, cmd, &ts, sizeof(ts))
                     : Control(t.s.ctl, t.s.client, t.s.subdevice, cmd, &fb, sizeof(fb));
    if (st != NV_OK) {
      std::fprintf(stderr, "bench: control 0x%x failed: %lld\n", cmd, static_cast<long long>(st));
      std::exit(1);
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}

int EnvInt(const char* name, int def, int min) {
  const char* v = getenv(name);
  return v ? std::max(min, atoi(v)) : def;
}

// The p-th percentile (0..100) by nearest rank.
double Percentile(std::vector<double> v, int p) {
  std::sort(v.begin(), v.end());
  size_t i = (v.size() - 1) * static_cast<size_t>(p) / 100;
  return v[i];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 50); }

void Measure(Target& direct, Target& proxy, uint32_t cmd, const char* name) {
  const int kRounds = EnvInt("VGPU_BENCH_ROUNDS", 401, 3);
  const int kCalls = EnvInt("VGPU_BENCH_CALLS", 100, 10);
  Batch(direct, cmd, 200);  // warm up both paths
  Batch(proxy, cmd, 200);
  std::vector<double> d, p, ratio;
  for (int r = 0; r < kRounds; ++r) {
    // Alternate the order so neither side always runs second.
    double a = 0, b = 0;
    if (r % 2) {
      b = Batch(proxy, cmd, kCalls);
      a = Batch(direct, cmd, kCalls);
    } else {
      a = Batch(direct, cmd, kCalls);
      b = Batch(proxy, cmd, kCalls);
    }
    d.push_back(a);
    p.push_back(b);
    ratio.push_back(b / a);
  }
  const double dmin = *std::min_element(d.begin(), d.end());
  const double pmin = *std::min_element(p.begin(), p.end());
  std::printf(
      "bench %-28s direct min %.0f ns median %.0f ns | /dev/vgpuctl min %.0f ns median %.0f ns | "
      "ratio min-of-mins %.3f median %.3f p10..p90 %.3f..%.3f (sealed; unsealed target was <= "
      "1.15; %d rounds x %d "
      "calls)\n",
      name, dmin, Median(d), pmin, Median(p), pmin / dmin, Median(ratio), Percentile(ratio, 10),
      Percentile(ratio, 90), kRounds, kCalls);
}

}  // namespace

// Pin to the current vCPU; says which (or why not) on stdout, next to the figures.
void PinToOneCpu() {
  int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) CPU_SET(cpu, &set);
  if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set) != 0) {
    std::printf("bench: not pinned (%s)\n",
                cpu < 0 ? "sched_getcpu failed" : "sched_setaffinity failed");
    return;
  }
  std::printf("bench: pinned to CPU %d\n", cpu);
}

int main() {
  PinToOneCpu();
  ScopedSlot slot(512ull << 20, "bench");
  if (!slot.ok()) return 1;
  Target direct, proxy;
  if (!Setup(direct, "/dev/nvidiactl", "/dev/nvidia0") || !Setup(proxy, slot.ctl(), slot.dev()))
    return 1;
  Measure(direct, proxy, NVA06C_CTRL_CMD_GET_TIMESLICE, "RM_CONTROL GET_TIMESLICE 8B");
  Measure(direct, proxy, NV2080_CTRL_CMD_FB_GET_INFO_V2, "RM_CONTROL FB_GET_INFO_V2 1028B");
  return 0;
}

// The perfmon utilisation samples (NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2):
// nvsim serves them from its GPU-time model as the 580 driver does (tests/vm/nvsim/
// nvsim_perfmon.c), the kernel host's compute meter measures every slot with them
// (kmod/compute_meter.c; the cap and weight tests of compute_test.cc run on it), and a tenant
// reading them through its slot sees no process of another slot (F11.4, docs/security.md).
// Joins compute_test (guest.cmake).
#include <time.h>

#include <memory>
#include <vector>

#include "compute_suite.h"

namespace compute_test {
namespace {

using PerfmonParams = nv2080_perf_get_gpumon_perfmon_util_samples_v2_params;

constexpr uint32_t kPerfmonGpu = 3;
constexpr double kPeriodNs = 200e6;  // nvsim's default perfmon_period_ms

std::unique_ptr<PerfmonParams> PerfmonRequest() {
  auto p = std::make_unique<PerfmonParams>();
  memset(p.get(), 0, sizeof(*p));
  p->type = NV2080_CTRL_GPUMON_SAMPLE_TYPE_PERFMON_UTIL;
  p->bufSize = sizeof(p->samples);
  return p;
}

uint64_t RealNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The written samples of a reply, oldest first (the ring is returned as it lies).
std::vector<nv2080_gpumon_perfmon_util_sample> Written(const PerfmonParams& p) {
  std::vector<nv2080_gpumon_perfmon_util_sample> v;
  for (const auto& s : p.samples)
    if (s.timeStamp) v.push_back(s);
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.timeStamp < b.timeStamp; });
  return v;
}

// nvsim's samples against its own model, straight on nvsim: a lone saturating TSG is on the GR
// engine at every sampling instant and busy for the whole period; once it stops, the engine
// samples idle with no process. bufSize other than 72 * 776 is refused, as by the driver.
TEST_F(NvsimContract, PerfmonSamplesFollowTheModel) {
  auto p = PerfmonRequest();
  p->bufSize = 776;
  EXPECT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(), sizeof(*p)),
            NV_ERR_INVALID_ARGUMENT);

  uint32_t tsg = 0, ch = 0;
  ASSERT_NO_FATAL_FAILURE(TsgWithChannel(&tsg, &ch));
  nva06c_gpfifo_schedule_params on{1, 0, 0}, off{0, 0, 0};
  ASSERT_EQ(Ctl(tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &on, 3), NV_OK);
  const uint64_t t_on = RealNowNs();  // the TSG runs from before this instant
  SleepMs(1000);
  p = PerfmonRequest();
  ASSERT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(), sizeof(*p)),
            NV_OK);
  const uint64_t t_read = RealNowNs();
  EXPECT_EQ(p->count, 0u) << "count and tracker read 0 on the H200";
  EXPECT_EQ(p->tracker, 0u);
  auto v = Written(*p);
  ASSERT_GE(v.size(), 2u);
  EXPECT_LE(v.back().timeStamp, t_read) << "timestamps are real-time ns";
  EXPECT_GT(v.back().timeStamp + 2 * kPeriodNs, static_cast<double>(t_read));
  unsigned running = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i - 1].timeStamp <= t_on) continue;  // the period began before the TSG ran
    ++running;
    EXPECT_NEAR(v[i].timeStamp - v[i - 1].timeStamp, kPeriodNs, kPeriodNs / 20)
        << "one sample per period (+- 5 %)";
    EXPECT_EQ(v[i].gr.procId, static_cast<uint32_t>(getpid())) << "the TSG's process is named";
    EXPECT_EQ(v[i].gr.util, 10000u) << "a saturating TSG is busy the whole period";
    EXPECT_EQ(v[i].fb.procId, NV2080_GPUMON_PID_INVALID) << "only GR is modelled";
  }
  EXPECT_GE(running, 3u) << "samples of the running TSG in 1 s";

  ASSERT_EQ(Ctl(tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &off, 3), NV_OK);
  const uint64_t t_off = RealNowNs();  // the TSG is off the runlist before this instant
  SleepMs(700);
  p = PerfmonRequest();
  ASSERT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(), sizeof(*p)),
            NV_OK);
  v = Written(*p);
  unsigned idle = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i - 1].timeStamp <= t_off) continue;
    ++idle;
    EXPECT_EQ(v[i].gr.procId, NV2080_GPUMON_PID_INVALID) << "an idle engine names nobody";
    EXPECT_EQ(v[i].gr.util, 0u);
  }
  EXPECT_GE(idle, 2u);
}

// F11.4: one tenant in each of two slots on one GPU, both saturating, so the GR engine
// alternates between them and the samples name both. The driver's reply (read straight on
// nvsim, the ground truth) names the other slot's process; read through slot A's nodes, the
// reply names A's process and never B's: B's samples read "no process", with the engine's
// busy fraction kept (NVML's process utilisation still works for A's own processes).
TEST_F(ComputeShares, PerfmonSamplesNameNoProcessOfAnotherSlot) {
  Slot sa(*nl_, kPerfmonGpu, 100, vgpu::kmod::ComputeMode::kCap, "pm-a");
  Slot sb(*nl_, kPerfmonGpu, 100, vgpu::kmod::ComputeMode::kCap, "pm-b");
  ASSERT_TRUE(sa.ok() && sb.ok());
  auto a = StartTenant(sa, kPerfmonGpu), b = StartTenant(sb, kPerfmonGpu);
  ASSERT_TRUE(a && b);
  SleepMs(2500);  // ~12 samples: each names A or B (P(B never named) ~ 2^-12)

  ProxySession through_a;  // this process joins slot A
  ASSERT_EQ(through_a.Open(sa.id(), kPerfmonGpu), "");
  auto seen = PerfmonRequest();
  ASSERT_EQ(through_a.Ctl(through_a.sub(), NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2,
                          seen.get(), sizeof(*seen)),
            NV_OK);
  // The driver's own reply (straight on nvsim), read right after: the same ring, maybe one
  // sample newer.
  int ctl = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
  int dev = open(("/dev/nvidia" + std::to_string(kPerfmonGpu)).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(ctl, 0);
  ASSERT_GE(dev, 0);
  uint32_t client = 0, device = 0xd1000001, sub = 0xd1000002, sub_id = 0;
  ASSERT_EQ(AllocClient(ctl, &client), NV_OK);
  nv0080_alloc_params dp{};
  dp.deviceId = kPerfmonGpu;
  ASSERT_EQ(Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp), NV_OK);
  ASSERT_EQ(Alloc(ctl, client, device, &sub, NV20_SUBDEVICE_0, &sub_id), NV_OK);
  auto truth = PerfmonRequest();
  ASSERT_EQ(Control(ctl, client, sub, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2,
                    truth.get(), sizeof(*truth)),
            NV_OK);
  EXPECT_EQ(Free(ctl, client, client, client), NV_OK);
  close(dev);
  close(ctl);

  std::map<uint64_t, const nv2080_gpumon_perfmon_util_sample*> by_ts;
  for (const auto& s : truth->samples)
    if (s.timeStamp) by_ts[s.timeStamp] = &s;
  const uint32_t pa = a->pid(), pb = b->pid();
  unsigned b_in_truth = 0, a_seen = 0, b_seen = 0, b_hidden = 0;
  for (const auto& s : seen->samples) {
    if (!s.timeStamp || !by_ts.count(s.timeStamp)) continue;
    const auto& t = *by_ts[s.timeStamp];
    b_in_truth += t.gr.procId == pb;
    a_seen += s.gr.procId == pa;
    b_seen += s.gr.procId == pb;
    if (t.gr.procId == pb && s.gr.procId == NV2080_GPUMON_PID_INVALID) {
      ++b_hidden;
      EXPECT_EQ(s.gr.util, t.gr.util) << "the engine's busy fraction is kept";
    }
    if (t.gr.procId == pa) {
      EXPECT_EQ(s.gr.procId, pa) << "A's own samples are untouched";
    }
    EXPECT_EQ(s.gr.pOsPidInfo, 0u);
  }
  Log("perfmon through slot A: samples naming B's process: " + std::to_string(b_in_truth) +
      " in the driver's reply, " + std::to_string(b_seen) + " seen by A (" +
      std::to_string(b_hidden) +
      " read as no process); naming A's own process: " + std::to_string(a_seen));
  ASSERT_GT(b_in_truth, 0u) << "B was on the engine at some sampling instant";
  EXPECT_EQ(b_seen, 0u) << "a tenant of slot A reads slot B's process in the samples";
  EXPECT_EQ(b_hidden, b_in_truth);
  EXPECT_GT(a_seen, 0u) << "A's own process stays visible (nvidia-smi pmon, NVML)";
  a->Send('q');
  b->Send('q');
  EXPECT_EQ(a->Wait(), 0);
  EXPECT_EQ(b->Wait(), 0);
}

}  // namespace
}  // namespace compute_test

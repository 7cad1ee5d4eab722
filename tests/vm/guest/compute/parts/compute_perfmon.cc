// The perfmon utilisation samples (NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2):
// nvsim serves them from its GPU-time model as the 580 driver does (tests/vm/nvsim/
// nvsim_perfmon.c), the kernel host's compute meter measures every slot with them
// (kmod/compute_meter.c; the cap and weight tests of compute_test.cc run on it).
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
  EXPECT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(),
                sizeof(*p)),
            NV_ERR_INVALID_ARGUMENT);

  uint32_t tsg = 0, ch = 0;
  ASSERT_NO_FATAL_FAILURE(TsgWithChannel(&tsg, &ch));
  nva06c_gpfifo_schedule_params on{1, 0, 0}, off{0, 0, 0};
  ASSERT_EQ(Ctl(tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &on, 3), NV_OK);
  const uint64_t t_on = RealNowNs();  // the TSG runs from before this instant
  SleepMs(1000);
  p = PerfmonRequest();
  ASSERT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(),
                sizeof(*p)),
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
  ASSERT_EQ(Ctl(sub_, NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2, p.get(),
                sizeof(*p)),
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

}  // namespace
}  // namespace compute_test

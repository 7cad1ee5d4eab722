// The compute controller's levers belong to the controller (F7 of the security review;
// docs/security/kernel-lifetime-compute.md): a tenant cannot issue the controls the gate uses
// (FIFO_DISABLE_CHANNELS, per-channel GPFIFO_SCHEDULE, interleave level, realtime), cannot
// stall the GPU's RM with a PREEMPT(bWait=1) of a TSG that is not on the runlist, and in weight
// mode cannot re-issue its own SET_TIMESLICE over the controller's, nor leave a TSG the registry
// thinks scheduled off the runlist by racing GPFIFO_SCHEDULE's params. Joins compute_test
// (guest.cmake); the tenant is this process, through one slot's proxy nodes.
#include <fstream>

#include "compute_suite.h"

namespace compute_test {
namespace {

constexpr uint32_t kLeverGpu = 5;
constexpr uint32_t kSetInterleaveLevel = 0xa06c0107;
constexpr uint32_t kMakeRealtime = 0xa06c0110;
constexpr uint32_t kChannelGpfifoSchedule = 0xa06f0103;

TEST_F(ComputeShares, TenantCannotPullTheGatesLevers) {
  Slot slot(*nl_, kLeverGpu, 50, vgpu::kmod::ComputeMode::kCap, "levers");
  ASSERT_TRUE(slot.ok());
  ProxySession s;
  ASSERT_EQ(s.Open(slot.id(), kLeverGpu), "");
  const uint32_t tsg = 0xd0000010, ch = 0xd0000020, idle = 0xd0000030, idle_ch = 0xd0000040;
  ASSERT_EQ(s.Tsg(tsg, ch, true), "");
  ASSERT_EQ(s.Tsg(idle, idle_ch, false), "");
  const Contract c0 = ReadGpu(kLeverGpu).contract;

  nv2080_fifo_disable_channels_params dc{};
  dc.bDisable = 0;  // re-enable what the controller's off edge disabled
  dc.bOnlyDisableScheduling = 1;
  dc.numChannels = 1;
  dc.hClientList[0] = s.client();
  dc.hChannelList[0] = ch;
  EXPECT_EQ(s.Ctl(s.sub(), NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &dc, sizeof(dc)),
            NV_ERR_INSUFFICIENT_PERMISSIONS)
      << "FIFO_DISABLE_CHANNELS reached the driver";
  uint32_t level = 2;  // NVA06C_CTRL_INTERLEAVE_LEVEL_HIGH
  EXPECT_EQ(s.Ctl(tsg, kSetInterleaveLevel, &level, sizeof(level)), NV_ERR_INSUFFICIENT_PERMISSIONS)
      << "SET_INTERLEAVE_LEVEL reached the driver";
  uint8_t rt = 1;
  EXPECT_EQ(s.Ctl(tsg, kMakeRealtime, &rt, sizeof(rt)), NV_ERR_INSUFFICIENT_PERMISSIONS)
      << "MAKE_REALTIME reached the driver";
  uint8_t chs[2] = {0, 0};  // unschedule the channel behind the registry's back
  EXPECT_EQ(s.Ctl(ch, kChannelGpfifoSchedule, chs, sizeof(chs)), NV_ERR_INSUFFICIENT_PERMISSIONS)
      << "NVA06F GPFIFO_SCHEDULE reached the driver";

  // A PREEMPT(bWait=1) of a TSG that is not on the runlist: RM waits its whole timeout with the
  // GPU's lock held (4 s on the H200; nvsim models it and counts it). Nothing to preempt.
  nva06c_preempt_params pp{1, 0, {0, 0}, 0};
  EXPECT_EQ(s.Ctl(idle, NVA06C_CTRL_CMD_PREEMPT, &pp, sizeof(pp)), NV_OK);
  const Contract c1 = ReadGpu(kLeverGpu).contract;
  EXPECT_EQ(c1.preempt_unscheduled, c0.preempt_unscheduled)
      << "the tenant's PREEMPT of an unscheduled TSG reached the driver and held its lock "
      << c1.preempt_unscheduled_ms - c0.preempt_unscheduled_ms << " ms";
  // libcuda's own PREEMPT of its scheduled TSG still works (the recorded corpus has two).
  EXPECT_EQ(s.Ctl(tsg, NVA06C_CTRL_CMD_PREEMPT, &pp, sizeof(pp)), NV_OK);
}

// nvsim's rewrite_ctrl hook (tests/vm/nvsim/README.md) stores into a control's params just before
// the driver reads them: a sibling thread's store after the core's read, made deterministic.
bool ArmCtrlRewrite(uint32_t offset, uint32_t value) {
  const std::string dir = "/sys/module/nvsim/parameters/rewrite_ctrl_";
  std::ofstream(dir + "offset") << offset;
  std::ofstream(dir + "value") << value;
  std::ofstream t(dir + "tgid");
  t << getpid();
  t.flush();
  return t.good();
}
uint64_t CtrlRewrites() {
  std::ifstream f("/sys/module/nvsim/parameters/rewrite_ctrl_done");
  uint64_t v = ~0ull;
  f >> v;
  return v;
}

// The registry's "scheduled" is what the gate preempts: a TSG it thinks scheduled while the driver
// has it off the runlist makes every PREEMPT(bWait=1) of it wait RM's timeout with the GPU's lock
// held (4 s on the H200), for every slot on the GPU. libcuda's GPFIFO_SCHEDULE(bEnable=1) with
// bEnable rewritten to 0 between the core's read and the driver's made exactly that TSG. The
// driver must schedule what the core read.
TEST_F(ComputeShares, ScheduleTheDriverRunsIsTheOneTheRegistryRecords) {
  Slot slot(*nl_, kLeverGpu, 50, vgpu::kmod::ComputeMode::kCap, "sched-race");
  ASSERT_TRUE(slot.ok());
  ProxySession s;
  ASSERT_EQ(s.Open(slot.id(), kLeverGpu), "");
  const uint32_t tsg = 0xd0000010;
  ASSERT_EQ(s.Tsg(tsg, 0xd0000020, false), "");
  const Contract c0 = ReadGpu(kLeverGpu).contract;
  const uint64_t done = CtrlRewrites();
  ASSERT_TRUE(ArmCtrlRewrite(0, 0));  // bEnable@0 := 0
  nva06c_gpfifo_schedule_params sp{1, 0, 0};
  EXPECT_EQ(s.Ctl(tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sp, 3), NV_OK);
  std::ofstream("/sys/module/nvsim/parameters/rewrite_ctrl_tgid") << 0;
  const GpuView v = ReadGpu(kLeverGpu);
  const auto row = v.tsgs.find({s.client(), tsg});
  ASSERT_NE(row, v.tsgs.end());
  // The tenant's PREEMPT goes to the driver only for a TSG the registry thinks scheduled.
  nva06c_preempt_params pp{1, 0, {0, 0}, 0};
  EXPECT_EQ(s.Ctl(tsg, NVA06C_CTRL_CMD_PREEMPT, &pp, sizeof(pp)), NV_OK);
  const Contract c1 = ReadGpu(kLeverGpu).contract;
  std::printf(
      "schedule race: rewrites %llu, driver's TSG scheduled %u, PREEMPTs of an "
      "unscheduled TSG %llu holding the lock %llu ms\n",
      static_cast<unsigned long long>(CtrlRewrites() - done), row->second.scheduled,
      static_cast<unsigned long long>(c1.preempt_unscheduled - c0.preempt_unscheduled),
      static_cast<unsigned long long>(c1.preempt_unscheduled_ms - c0.preempt_unscheduled_ms));
  EXPECT_EQ(row->second.scheduled, 1u) << "the driver left the TSG off the runlist";
  EXPECT_EQ(c1.preempt_unscheduled, c0.preempt_unscheduled)
      << "a PREEMPT of a TSG the driver had not scheduled held its lock";
}

TEST_F(ComputeShares, WeightModeTimesliceIsTheControllers) {
  Slot slot(*nl_, kLeverGpu, 30, vgpu::kmod::ComputeMode::kWeight, "ts-owner");
  ASSERT_TRUE(slot.ok());
  ProxySession s;
  ASSERT_EQ(s.Open(slot.id(), kLeverGpu), "");
  const uint32_t tsg = 0xd0000010;
  ASSERT_EQ(s.Tsg(tsg, 0xd0000020, true), "");
  SleepMs(200);  // the controller has seen the TSG and set its timeslice
  nva06c_timeslice_params ts{20000};
  EXPECT_EQ(s.Ctl(tsg, NVA06C_CTRL_CMD_SET_TIMESLICE, &ts, sizeof(ts)), NV_OK)
      << "libcuda's SET_TIMESLICE must keep succeeding";
  nva06c_timeslice_params got{0};
  ASSERT_EQ(s.Ctl(tsg, NVA06C_CTRL_CMD_GET_TIMESLICE, &got, sizeof(got)), NV_OK);
  EXPECT_NE(got.timesliceUs, 20000u)
      << "the tenant's own timeslice reached the driver over the controller's";
}

}  // namespace
}  // namespace compute_test

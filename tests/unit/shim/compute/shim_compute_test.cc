// End to end: the compute thread inside libvgpu-shim.so (shim/compute/compute_shim.cc) driving
// a fake driver's TSGs through the shim's hooks and vshim_rm_control.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// The layout only (no code): the test reads the ledger the shim wrote, as the manager does.
#include "shim/preload/ledger.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

class ShimComputeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vshim-compute-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* n : {"nvidiactl", "nvidia0", "nvidia-uvm"}) {
      std::ofstream(dir_ + "/" + n).put('\0');
    }
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0); }
  int Run(const std::string& env, const std::string& ms) {
    const std::string cmd =
        "env -u VGPU_CONFIG -u VGPU_MEMORY_QUOTA VGPU_DEV_DIR=" + dir_ +
        " VGPU_FAKE_COMPUTE_OUT=" + dir_ + "/controls VGPU_COMPUTE_LOG=" + dir_ +
        "/log LD_PRELOAD=" VSHIM_LIB ":" VSHIM_FAKECOMPUTE ":" VSHIM_FAKENV " " + env +
        " " VSHIM_COMPUTE_CLIENT " " + ms + " >" + dir_ + "/out 2>" + dir_ + "/err";
    const int st = system(cmd.c_str());
    out_ = ReadFile(dir_ + "/out");
    err_ = ReadFile(dir_ + "/err");
    controls_ = Lines(ReadFile(dir_ + "/controls"));
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  int Count(const std::string& prefix) const {
    int n = 0;
    for (const auto& l : controls_) {
      n += l.rfind(prefix, 0) == 0;
    }
    return n;
  }
  std::string dir_, out_, err_;
  std::vector<std::string> controls_;
};

TEST_F(ShimComputeTest, CapGatesTheGrChannelsAndExitLeavesThemEnabled) {
  ASSERT_EQ(Run("VGPU_COMPUTE_SHARE=30 VGPU_COMPUTE_SETTLE_MS=0", "1500"), 0) << out_ << err_;
  ASSERT_NE(out_.find("DONE"), std::string::npos) << out_ << err_;
  EXPECT_EQ(Count("child "), 0) << "subdevice learned from its allocation (the GET_CHILD_HANDLE "
                                   "fallback found nothing on the H200)";
  EXPECT_GE(Count("disable 1 only_sched=1 channels=8"), 10) << ReadFile(dir_ + "/controls");
  EXPECT_GE(Count("preempt wait=1"), 5);
  EXPECT_GE(Count("perfmon "), 5);
  EXPECT_EQ(Count("disable 1 only_sched=1 channels=12"), 0) << "copy TSG left alone";
  // The last gate action is the re-enable done at exit.
  std::string last;
  for (const auto& l : controls_) {
    if (l.rfind("disable ", 0) == 0) {
      last = l;
    }
  }
  EXPECT_EQ(last.rfind("disable 0", 0), 0u) << last;
  const std::string log = ReadFile(dir_ + "/log");
  EXPECT_NE(log.find("share=30"), std::string::npos) << log;
  EXPECT_EQ(log.find("errors=1"), std::string::npos) << log;
}

// Capped before the context exists, with the control thread ticking through libcuda's setup
// (400 ms between the channels and the schedule): the TSG is left alone until it is scheduled,
// as the H200 requires (the tenant froze otherwise: compute_host.cc), then held to its cap.
TEST_F(ShimComputeTest, CappedBeforeTheScheduleStillRuns) {
  ASSERT_EQ(Run("VGPU_COMPUTE_SHARE=10 VGPU_COMPUTE_SETTLE_MS=100", "1500 400"), 0) << out_ << err_;
  ASSERT_NE(out_.find("DONE"), std::string::npos) << out_ << err_;
  const std::string all = ReadFile(dir_ + "/controls");
  EXPECT_EQ(Count("preempt unscheduled"), 0) << all;
  EXPECT_EQ(Count("disable unscheduled"), 0) << all;
  EXPECT_GE(Count("disable 1 only_sched=1 channels=8"), 5) << all;
  unsigned long long busy = 0, run = 0;
  for (const auto& l : controls_) {
    sscanf(l.c_str(), "busy_ms %llu of %llu", &busy, &run);
  }
  ASSERT_GT(run, 1500u) << all;
  EXPECT_GE(busy, 40u) << "the tenant runs once scheduled\n" << all;
  EXPECT_LE(busy, run * 35 / 100) << "and is capped\n" << all;
}

// The compute thread publishes its counters into the slot's ledger (vshim_publish_compute),
// and the shim's exit moves them to the slot's accumulators, where the manager reads them
// (daemon/slots/shim_backend.cc): busy time close to what the fake GPU ran, throttled time.
TEST_F(ShimComputeTest, CountersReachTheSlotsLedger) {
  const std::string ledger = dir_ + "/ledger";
  ASSERT_EQ(
      Run("VGPU_LEDGER=" + ledger + " VGPU_COMPUTE_SHARE=30 VGPU_COMPUTE_SETTLE_MS=0", "1500"), 0)
      << out_ << err_;
  unsigned long long busy_ms = 0, run_ms = 0;
  for (const auto& l : controls_) {
    sscanf(l.c_str(), "busy_ms %llu of %llu", &busy_ms, &run_ms);
  }
  ASSERT_GT(run_ms, 1000u) << ReadFile(dir_ + "/controls");
  vgpu::shim::LedgerFile f;
  std::ifstream in(ledger, std::ios::binary);
  ASSERT_TRUE(in.read(reinterpret_cast<char*>(&f), sizeof f)) << "no ledger at " << ledger;
  ASSERT_EQ(f.version, vgpu::shim::LedgerFile::kVersion);
  const vgpu::shim::LedgerComputeTotals t = vgpu::shim::SumLedgerCompute(f);
  printf("fake GPU ran %llu of %llu ms; ledger: busy %.1f ms, throttled %.1f ms\n", busy_ms, run_ms,
         t.gpu_busy_ns / 1e6, t.throttled_ns / 1e6);
  EXPECT_EQ(f.reaped_busy_ns, t.gpu_busy_ns) << "the process detached: all in the accumulators";
  // Perfmon is read every 100 ms and lags the GPU by up to a sample: most of what ran, no more.
  EXPECT_GT(t.gpu_busy_ns, busy_ms * 1'000'000 / 2) << busy_ms;
  EXPECT_LT(t.gpu_busy_ns, (busy_ms + 100) * 1'000'000) << busy_ms;
  EXPECT_GT(t.throttled_ns, run_ms * 1'000'000 / 3) << "gated off most of the run";
  EXPECT_EQ(t.achieved_share_1s_pm, 0u) << "its writer left";
}

TEST_F(ShimComputeTest, WeightSetsTheTimesliceOnly) {
  ASSERT_EQ(Run("VGPU_COMPUTE_SHARE=30 VGPU_COMPUTE_MODE=weight VGPU_COMPUTE_SETTLE_MS=0", "400"),
            0)
      << out_ << err_;
  EXPECT_GE(Count("timeslice 3000"), 1) << ReadFile(dir_ + "/controls");
  EXPECT_EQ(Count("disable "), 0);
}

TEST_F(ShimComputeTest, NoShareNoControls) {
  // The client's own GPFIFO_SCHEDULE calls and the fake's exit line are all the file may hold.
  auto host_controls = [this] {
    return static_cast<int>(controls_.size()) - Count("schedule ") - Count("busy_ms ");
  };
  ASSERT_EQ(Run("", "300"), 0) << out_ << err_;
  EXPECT_EQ(Count("schedule "), 2);
  EXPECT_EQ(host_controls(), 0) << ReadFile(dir_ + "/controls");
  ASSERT_EQ(Run("VGPU_COMPUTE_SHARE=100", "300"), 0) << out_ << err_;
  EXPECT_EQ(host_controls(), 0) << "an uncapped share issues nothing";
}

}  // namespace

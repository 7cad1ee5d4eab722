// The NVML load source (topology/src/nvml_load_source.cc) on the fake libnvidia-ml.so.1
// (fake_nvml.cc: GPU 0 reads FAKE_NVML_LOAD's "UTIL MHZ" lines, one per sample).
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "vgpu/topology/gpu_load.h"

namespace vgpu::topology {
namespace {

class GpuLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/load-" + std::to_string(getpid());
    std::ofstream(path_) << "100 1510\n99 1483\n";
    setenv("FAKE_NVML_LOAD", path_.c_str(), 1);
    setenv("FAKE_NVML_POWER_LIMIT_MW", "650000", 1);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_LOAD");
    unsetenv("FAKE_NVML_POWER_LIMIT_MW");
    unlink(path_.c_str());
  }
  std::string path_;
};

TEST_F(GpuLoadTest, ReadsUtilizationClockAndPowerLimitPerGpu) {
  auto source = OpenNvmlLoadSource(FAKE_NVML_PATH);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->DriverVersion(), "535.104.05");
  for (auto [util, mhz] : {std::pair{100u, 1510u}, {99u, 1483u}, {0u, 345u}}) {
    auto samples = (*source)->Sample();
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    ASSERT_EQ(samples->size(), 4u) << "every GPU of the fake";
    const GpuLoadSample& g0 = (*samples)[0];
    EXPECT_EQ(g0.uuid, "GPU-fake-0");
    EXPECT_EQ(g0.gpu_util_percent, util);
    EXPECT_EQ(g0.sm_clock_mhz, mhz);
    EXPECT_EQ(g0.power_limit_mw, 650000u);
    EXPECT_EQ((*samples)[1].gpu_util_percent, 0u);
  }
}

TEST(GpuLoadSourceTest, MissingLibraryIsUnavailable) {
  auto source = OpenNvmlLoadSource("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kUnavailable);
}

TEST(GpuLoadSourceTest, InitFailureIsUnavailable) {
  setenv("FAKE_NVML_SHAPE", "noinit", 1);
  auto source = OpenNvmlLoadSource(FAKE_NVML_PATH);
  unsetenv("FAKE_NVML_SHAPE");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace vgpu::topology

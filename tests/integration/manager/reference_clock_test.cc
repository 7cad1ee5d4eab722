// The reference clock end to end through the real vgpu-manager (standalone, shim backend): the
// stand-in libnvidia-ml.so.1 of topology's tests (tests/unit/topology/fake_nvml.cc) shows GPU 0
// saturated for 8 s at 1483 MHz; the manager recognizes the stretch, writes the figure into the
// slot config of a slot that already exists on that GPU and of every slot created after, keeps it
// across a restart without NVML, and never gives it to the other GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "manager_process.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

std::string ReadFile(const fs::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

class ManagerReferenceClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-refclk-it-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ / "nvml");
    fs::create_symlink(VGPU_TOPOLOGY_FAKE_NVML, dir_ / "nvml" / "libnvidia-ml.so.1");
    // The test fixture's two GPUs, named as the fake NVML names its GPUs 0 and 1.
    std::string fixture = ReadFile(VGPU_TEST_DATA "/two-gpu-16g.json");
    for (const char* i : {"0", "1"}) {
      const std::string from = std::string("GPU-00000000-1111-2222-3333-00000000000") + i;
      fixture.replace(fixture.find(from), from.size(), std::string("GPU-fake-") + i);
    }
    std::ofstream(dir_ / "gpus.json") << fixture;
    std::ofstream load(dir_ / "load");
    load << "0 345\n0 345\n";
    for (int i = 0; i < 8; i++) {
      load << "100 " << (i == 0 ? 1980 : 1483) << "\n";  // the first: a cold card's edge
    }
    load.close();
    manager_ = std::make_unique<testing::ManagerProcess>(VGPU_MANAGER_BIN, dir_.string());
    manager_->set_fixture((dir_ / "gpus.json").string());
  }
  void TearDown() override {
    manager_.reset();
    fs::remove_all(dir_);
  }
  bool Start(bool with_load) {
    std::vector<std::string> env = {"LD_LIBRARY_PATH=" + (dir_ / "nvml").string()};
    if (with_load) {
      env.push_back("FAKE_NVML_LOAD=" + (dir_ / "load").string());
    }
    return manager_->Start({"--standalone"}, env);
  }
  json Create(int gpu) {
    json r = manager_->Control(
        {{"op", "create"}, {"gpu", gpu}, {"mem_quota", 1ull << 30}, {"compute_share", 30}});
    EXPECT_TRUE(r.value("ok", false)) << r.dump();
    return r["slot"];
  }
  // The compute_ref_clock_mhz line of slot `id`'s config, as the shim reads it.
  std::string ConfigLine(const json& slot) {
    const std::string text =
        ReadFile(fs::path(manager_->SlotRoot()) / std::to_string(slot["id"].get<int>()) / "config");
    const size_t at = text.find("compute_ref_clock_mhz=");
    return at == std::string::npos ? "(none)" : text.substr(at, text.find('\n', at) - at);
  }
  bool WaitLearned() {
    for (int i = 0; i < 200; i++) {
      if (ReadFile(manager_->LogFile()).find("event=reference_clock_learned") !=
          std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  fs::path dir_;
  std::unique_ptr<testing::ManagerProcess> manager_;
};

TEST_F(ManagerReferenceClockTest, ASaturatedStretchReachesTheGpusSlotConfigs) {
  ASSERT_TRUE(Start(/*with_load=*/true)) << ReadFile(manager_->LogFile());
  const json before = Create(0);
  EXPECT_EQ(ConfigLine(before), "compute_ref_clock_mhz=0") << "nothing measured yet";
  ASSERT_TRUE(WaitLearned()) << ReadFile(manager_->LogFile());
  const std::string log = ReadFile(manager_->LogFile());
  EXPECT_NE(log.find("reference_clock_mhz=1483"), std::string::npos) << log;
  EXPECT_EQ(ConfigLine(before), "compute_ref_clock_mhz=1483") << "the existing slot rewritten";
  EXPECT_EQ(ConfigLine(Create(0)), "compute_ref_clock_mhz=1483") << "a new slot";
  EXPECT_EQ(ConfigLine(Create(1)), "compute_ref_clock_mhz=0") << "GPU 1 never saturated";
  json listed = manager_->Slots();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].value("compute_ref_clock_mhz", 0u), 1483u) << "the control API's JSON";

  // A restart without any load: the figure comes back from beside the checkpoint.
  manager_->Kill(SIGTERM);
  ASSERT_TRUE(Start(/*with_load=*/false)) << ReadFile(manager_->LogFile());
  EXPECT_EQ(ConfigLine(Create(0)), "compute_ref_clock_mhz=1483");
}

}  // namespace
}  // namespace vgpu

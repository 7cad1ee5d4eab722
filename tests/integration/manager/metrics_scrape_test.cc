// Operating parts against the real vgpu-manager binary (standalone mode, fixture GPUs, shim
// backend): /metrics scraped over HTTP after creating slots through the control API, checked
// for names, labels and values; an XID from a stand-in libnvidia-ml.so.1 (LD_LIBRARY_PATH)
// going through HealthMonitor -> SlotManager -> exporter. Plus health in-process: both
// directions reaching SlotManager's ListAndWatch generation and device health.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "manager_process.h"
#include "scrape.h"
#include "testing/exposition_parser.h"
#include "vgpu/health/health_monitor.h"
#include "vgpu/health/slot_manager_sink.h"
#include "vgpu/slots/fake_backend.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using metrics::testing::ParsedExposition;
using namespace std::chrono_literals;

// The GPUs of tests/integration/manager/data/two-gpu-16g.json, which ManagerProcess uses.
const std::string kGpu0 = "GPU-00000000-1111-2222-3333-000000000000";
const std::string kGpu1 = "GPU-00000000-1111-2222-3333-000000000001";

using testing::FreePort;
using testing::Scrape;

// Scrapes until `ready` holds (the sampler runs every --sample-period) or 10 s pass.
std::optional<ParsedExposition> ScrapeUntil(
    int port, const std::function<bool(const ParsedExposition&)>& ready) {
  std::optional<ParsedExposition> p;
  for (int i = 0; i < 100; ++i) {
    p = Scrape(port);
    if (p && ready(*p)) return p;
    std::this_thread::sleep_for(100ms);
  }
  return p;
}

class RealManagerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-ops-it-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ / "nvml");
    fs::create_symlink(VGPU_FAKE_NVML, dir_ / "nvml" / "libnvidia-ml.so.1");
    std::ofstream(dir_ / "xids");
    port_ = FreePort();
    manager_ = std::make_unique<testing::ManagerProcess>(VGPU_MANAGER_BIN, dir_.string());
    ASSERT_TRUE(manager_->Start({"--standalone", "--query-port=" + std::to_string(port_),
                                 "--sample-period=1", "--hostname-override=it-node"},
                                {"LD_LIBRARY_PATH=" + (dir_ / "nvml").string(),
                                 "VGPU_FAKE_NVML_UUIDS=" + kGpu0 + "," + kGpu1,
                                 "VGPU_FAKE_NVML_EVENTS=" + (dir_ / "xids").string()}))
        << "manager did not start; log: " << manager_->LogFile();
  }
  void TearDown() override {
    manager_.reset();
    fs::remove_all(dir_);
  }

  // The control socket answers before the services step starts the exporter: wait for it.
  bool MetricsUp() {
    for (int i = 0; i < 50; ++i) {
      if (Scrape(port_)) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<testing::ManagerProcess> manager_;
};

TEST_F(RealManagerMetricsTest, SeriesMatchTheSlotsItCreated) {
  if (!MetricsUp()) {
    GTEST_SKIP() << "vgpu-manager does not serve /metrics on --query-port (not wired yet?)";
  }
  std::vector<json> slots;
  for (auto [gpu, gib, core, label] :
       {std::tuple{0, 2ull, 25, "trainer-0"}, std::tuple{0, 1ull, 50, "odd\"name"},
        std::tuple{1, 4ull, 100, "whole-ish"}}) {
    json r = manager_->Control({{"op", "create"},
                                {"gpu", gpu},
                                {"mem_quota", gib << 30},
                                {"compute_share", core},
                                {"label", label}});
    ASSERT_TRUE(r.value("ok", false)) << r.dump();
    slots.push_back(r["slot"]);
  }
  auto p = ScrapeUntil(port_, [](const ParsedExposition& e) {
    return e.Find("vgpu_slot_memory_quota_bytes").size() == 3;
  });
  ASSERT_TRUE(p);
  ASSERT_EQ(p->Find("vgpu_slot_memory_quota_bytes").size(), 3u);
  for (const json& s : slots) {
    const std::string id = std::to_string(s["id"].get<uint32_t>());
    std::map<std::string, std::string> match = {{"slot", id},
                                                {"node", "it-node"},
                                                {"gpu_uuid", s["gpu_uuid"].get<std::string>()},
                                                {"pod", s["pod_name"].get<std::string>()}};
    EXPECT_EQ(p->Value("vgpu_slot_memory_quota_bytes", match),
              double(s["mem_quota"].get<uint64_t>()))
        << s.dump();
    EXPECT_EQ(p->Value("vgpu_slot_core_share_ratio", match), s["compute_share"].get<int>() / 100.0);
    EXPECT_EQ(p->Value("vgpu_slot_memory_charged_bytes", match), 0);  // nothing ran
  }
  EXPECT_EQ(p->Value("vgpu_gpu_slots", {{"gpu_uuid", kGpu0}}), 2);
  EXPECT_EQ(p->Value("vgpu_gpu_slots", {{"gpu_uuid", kGpu1}}), 1);
  EXPECT_EQ(p->Value("vgpu_gpu_memory_committed_bytes", {{"gpu_uuid", kGpu0}}), double(3ull << 30));
  EXPECT_EQ(p->Value("vgpu_gpu_healthy", {{"gpu_uuid", kGpu1}}), 1);
  for (const char* family : {"vgpu_allocations_total", "vgpu_allocation_failures_total",
                             "vgpu_registrations_total", "vgpu_slot_memory_denials_total",
                             "vgpu_slot_busy_seconds_total", "vgpu_slot_unknown_ioctls_total"}) {
    EXPECT_TRUE(p->types.count(family)) << family;
  }

  // Deleting a slot removes its series.
  json del = manager_->Control({{"op", "delete"}, {"id", slots[1]["id"]}});
  ASSERT_TRUE(del.value("ok", false)) << del.dump();
  p = ScrapeUntil(port_, [](const ParsedExposition& e) {
    return e.Find("vgpu_slot_memory_quota_bytes").size() == 2;
  });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Value("vgpu_gpu_slots", {{"gpu_uuid", kGpu0}}), 1);
}

TEST_F(RealManagerMetricsTest, CriticalXidFromNvmlMarksTheGpuUnhealthy) {
  if (!MetricsUp()) {
    GTEST_SKIP() << "vgpu-manager does not serve /metrics on --query-port (not wired yet?)";
  }
  std::ofstream(dir_ / "xids", std::ios::app) << "1 13\n";  // application XID: ignored
  std::ofstream(dir_ / "xids", std::ios::app) << "1 79\n";  // fallen off the bus
  auto p = ScrapeUntil(port_, [](const ParsedExposition& e) {
    return e.Value("vgpu_gpu_healthy", {{"gpu_uuid", kGpu1}}) == 0;
  });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->Value("vgpu_gpu_healthy", {{"gpu_uuid", kGpu1}}), 0)
      << "health path did not reach the exporter; see " << manager_->LogFile();
  EXPECT_EQ(p->Value("vgpu_gpu_healthy", {{"gpu_uuid", kGpu0}}), 1);
}

// In-process: HealthMonitor -> SlotManagerHealthSink -> SlotManager, both directions.
class OneXidThenRecovers : public health::XidEventSource {
 public:
  Result<std::vector<std::string>> Start() override {
    return std::vector<std::string>{"GPU-int-0", "GPU-int-1"};
  }
  Result<std::optional<health::XidEvent>> Wait(std::chrono::milliseconds) override {
    if (sent_) return std::optional<health::XidEvent>();
    sent_ = true;
    return std::optional<health::XidEvent>(health::XidEvent{"GPU-int-1", 79});
  }
  Status Probe(const std::string&) override { return OkStatus(); }

 private:
  bool sent_ = false;
};

TEST(HealthToSlotManagerTest, BothDirectionsReachListAndWatch) {
  char tmpl[] = "/tmp/vgpu-ops-health-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  slots::FakeSlotBackend backend;
  checkpoint::CheckpointStore store(dir / "cp");
  std::vector<alloc::GpuInfo> gpus = {
      {0, "GPU-int-0", 16ull << 30, 0, "0000:17:00.0", "", {}, {}, ""},
      {1, "GPU-int-1", 16ull << 30, 0, "0000:18:00.0", "", {}, {}, ""}};
  auto placer = alloc::MakePlacer("firstfit", gpus);
  ASSERT_TRUE(placer.ok());
  auto now = std::chrono::steady_clock::now();
  manager::SlotManager slots({}, gpus, backend, store, nullptr, std::move(*placer),
                             [&] { return now; });
  ASSERT_TRUE(slots.Reconcile().ok());
  OneXidThenRecovers xids;
  health::SlotManagerHealthSink sink(slots);
  health::HealthOptions options;
  options.reprobe_after = 60s;
  options.wait_timeout = 1ms;
  options.clock = [&] { return now; };
  health::HealthMonitor monitor(xids, sink, options);
  ASSERT_TRUE(monitor.StartWithoutThread().ok());
  auto unhealthy_ids = [&] {
    int n = 0;
    for (const auto& d : slots.Devices(alloc::ResourceKind::kMemory)) n += !d.healthy;
    return n;
  };
  uint64_t gen = slots.Generation();
  monitor.Step();
  EXPECT_NE(slots.Generation(), gen);  // every ListAndWatch stream re-sends its list
  EXPECT_EQ(unhealthy_ids(), static_cast<int>(slots.MemoryUnitsPerGpu(1)));
  gen = slots.Generation();
  now += 61s;
  monitor.Step();  // quiet period over, probe succeeds
  EXPECT_NE(slots.Generation(), gen);
  EXPECT_EQ(unhealthy_ids(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu

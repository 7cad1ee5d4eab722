// A shim-mode slot's usage, from the shim's writer to a scrape: the slot is made by the
// manager (SlotManager over the shim backend), a process of it charges memory and publishes
// its compute controller's counters through the shim's own SharedLedger (shim/preload/ledger.h,
// what libvgpu-shim.so's vshim_publish_compute calls), and the manager's metrics path
// (SlotManagerStatsSource, RenderNodeMetrics) reads them through the ledger's published format
// (uapi/vgpu_ledger.h). A change of layout, path or reader on either side breaks it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <sstream>

#include "shim/preload/ledger.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/manager/stats_source.h"
#include "vgpu/metrics/prometheus_text.h"
#include "vgpu/slots/shim_backend.h"

namespace vgpu::manager {
namespace {

namespace fs = std::filesystem;

class ShimMetricsTest : public ::testing::Test {
 protected:
  ShimMetricsTest() {
    char tmpl[] = "/tmp/vgpu-shim-metrics-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    backend_ = std::make_unique<slots::ShimSlotBackend>(
        slots::ShimBackendOptions{dir_ / "slots", "", "/usr/local/vgpu/libvgpu-shim.so"});
    store_ = std::make_unique<checkpoint::CheckpointStore>(dir_ / "cp");
    gpus_ = {{0, "GPU-a", 4ull << 30, 0, "0000:01:00.0", "", {}, {}, ""}};
    ManagerOptions o;
    o.cdi_kind = "vgpu.io/slot";
    o.cdi_spec_dir = (dir_ / "cdi").string();
    auto placer = alloc::MakePlacer("firstfit", gpus_);
    EXPECT_TRUE(placer.ok());
    manager_ =
        std::make_unique<SlotManager>(o, gpus_, *backend_, *store_, nullptr, std::move(*placer),
                                      [] { return std::chrono::steady_clock::now(); });
    auto r = manager_->Reconcile();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  ~ShimMetricsTest() override {
    manager_.reset();
    fs::remove_all(dir_);
  }

  // The scrape's samples of one slot: family name -> value text.
  std::map<std::string, std::string> Scrape(uint32_t slot) {
    SlotManagerStatsSource source(*manager_, registrations_);
    auto snap = source.Snapshot();
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    std::map<std::string, std::string> out;
    if (!snap.ok()) {
      return out;
    }
    const std::string text = metrics::RenderNodeMetrics("node-1", *snap, {});
    const std::string label = "slot=\"" + std::to_string(slot) + "\"";
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("vgpu_slot_", 0) == 0 && line.find(label) != std::string::npos) {
        out[line.substr(0, line.find('{'))] = line.substr(line.rfind(' ') + 1);
      }
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<slots::ShimSlotBackend> backend_;
  std::unique_ptr<checkpoint::CheckpointStore> store_;
  std::vector<alloc::GpuInfo> gpus_;
  std::unique_ptr<SlotManager> manager_;
  std::atomic<uint64_t> registrations_{0};
};

TEST_F(ShimMetricsTest, TheControllersCountersReachTheScrape) {
  auto slot = manager_->CreateManual(0, 1ull << 30, 30, ComputeMode::kCap, "tenant");
  ASSERT_TRUE(slot.ok()) << slot.status().ToString();
  const uint32_t id = slot->config.id;
  // Before any process of the slot ran: the slot is exported, its usage is zero.
  auto before = Scrape(id);
  EXPECT_EQ(before["vgpu_slot_busy_seconds_total"], "0");
  EXPECT_EQ(before["vgpu_slot_memory_charged_bytes"], "0");

  // A process of the slot, as libvgpu-shim.so runs it: the ledger where the slot keeps it.
  std::string err;
  auto ledger = shim::SharedLedger::Open(backend_->LedgerPath(id).string(), &err);
  ASSERT_NE(ledger, nullptr) << err;
  ASSERT_TRUE(ledger->Attach());
  ASSERT_EQ(ledger->TryCharge(96ull << 20, 1ull << 30), 0);
  // One second of its compute controller under a 30 % cap: what ComputeHost publishes.
  const shim::LedgerBusySample unattributed[] = {{5000, 50'000'000}};
  ledger->PublishCompute(250'000'000, 700'000'000, 300, 296, unattributed, 1);

  auto running = Scrape(id);
  EXPECT_EQ(running["vgpu_slot_memory_charged_bytes"], std::to_string(96ull << 20));
  EXPECT_EQ(running["vgpu_slot_busy_seconds_total"], "0.3") << "own 250 ms + unattributed 50 ms";
  EXPECT_EQ(running["vgpu_slot_throttled_seconds_total"], "0.7");
  EXPECT_EQ(running["vgpu_slot_core_achieved_ratio"], "0.3");
  EXPECT_EQ(running["vgpu_slot_core_achieved_10s_ratio"], "0.296");
  EXPECT_EQ(running["vgpu_slot_core_share_ratio"], "0.3");

  // The process exits: its charge leaves, its counters stay (Prometheus counters), and nobody
  // measures the share any more.
  ledger->PublishCompute(400'000'000, 1'100'000'000, 310, 300, nullptr, 0);
  ledger->Detach();
  auto after = Scrape(id);
  EXPECT_EQ(after["vgpu_slot_memory_charged_bytes"], "0");
  EXPECT_EQ(after["vgpu_slot_memory_peak_bytes"], std::to_string(96ull << 20));
  EXPECT_EQ(after["vgpu_slot_busy_seconds_total"], "0.45");
  EXPECT_EQ(after["vgpu_slot_throttled_seconds_total"], "1.1");
  EXPECT_EQ(after["vgpu_slot_core_achieved_ratio"], "0");
}

}  // namespace
}  // namespace vgpu::manager

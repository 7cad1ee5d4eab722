// Shim mode's slot directories against a hostile tenant (security review F8): the privileged
// manager never writes through a link planted where it writes, the container gets its config
// read-only and only the ledger's own directory read-write, and a config that no longer parses
// is restored from the checkpoint at start instead of stopping the manager.
//
// On the tree before these fixes (c2d5471): WriteFileAtomically opened "<config>.tmp" with
// O_TRUNC and no O_NOFOLLOW, so PlantedLinksAreNeverWrittenThrough found the victim file
// overwritten with the slot config; ShimSlotBackend::List() failed on a garbage config, so
// Reconcile() failed and vgpu-manager exited at every start (node-wide outage).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "vgpu/alloc/placement.h"
#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/slots/shim_backend.h"
#include "vgpu/slots/slot_config_file.h"

namespace vgpu {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class ShimSlotDirTest : public ::testing::Test {
 protected:
  ShimSlotDirTest() {
    char tmpl[] = "/tmp/vgpu-slotdir-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~ShimSlotDirTest() override { fs::remove_all(dir_); }
  slots::SlotConfig Config() const {
    slots::SlotConfig c;
    c.name = "g0-m0-n4";
    c.mem_quota = 1ull << 30;
    c.compute_share = 30;
    return c;
  }
  fs::path dir_;
};

TEST_F(ShimSlotDirTest, PlantedLinksAreNeverWrittenThrough) {
  slots::ShimSlotBackend backend({.root = dir_ / "slots", .ledger_root = dir_ / "ledgers"});
  auto id = backend.Create(Config());
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const fs::path slot = backend.SlotDir(*id);
  const fs::path victim = dir_ / "victim";
  std::ofstream(victim) << "precious";
  // What a tenant with a writable slot directory could plant: the old temp name, and the config
  // itself replaced by a link.
  fs::create_symlink(victim, slot / "config.tmp");
  fs::remove(slot / "config");
  fs::create_symlink(victim, slot / "config");
  slots::SlotConfig c = Config();
  c.id = *id;
  c.mem_quota = 2ull << 30;
  ASSERT_TRUE(backend.Update(c).ok());
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(slot / "config")) << "the link is replaced, not followed";
  auto parsed = slots::ParseSlotConfigFile(Slurp(slot / "config"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->mem_quota, 2ull << 30);
}

TEST_F(ShimSlotDirTest, ContainerGetsTheConfigReadOnlyAndOnlyTheLedgerWritable) {
  slots::ShimSlotBackend backend({.root = dir_ / "slots",
                                  .shim_library_host = "/opt/libvgpu-shim.so",
                                  .ledger_root = dir_ / "ledgers"});
  auto id = backend.Create(Config());
  ASSERT_TRUE(id.ok());
  slots::SlotConfig c = Config();
  c.id = *id;
  slots::ContainerEdits e = backend.Edits(c);
  int writable = 0;
  for (const auto& m : e.mounts) {
    if (m.container_path == "/etc/vgpu") {
      EXPECT_EQ(m.host_path, backend.SlotDir(*id).string());
      EXPECT_TRUE(m.read_only);
    }
    if (!m.read_only) {
      ++writable;
      EXPECT_EQ(m.host_path, backend.LedgerDir(*id).string());
      EXPECT_EQ(m.container_path, "/run/vgpu");
    }
  }
  EXPECT_EQ(writable, 1);
  EXPECT_TRUE(fs::is_directory(backend.LedgerDir(*id)));
  EXPECT_EQ(backend.LedgerPath(*id), backend.LedgerDir(*id) / "ledger");
  // The shim is told where the ledger is, as the container sees it.
  EXPECT_NE(Slurp(backend.SlotDir(*id) / "config").find("\nledger=/run/vgpu/ledger\n"),
            std::string::npos);
  ASSERT_TRUE(backend.Destroy(*id).ok());
  EXPECT_FALSE(fs::exists(backend.LedgerDir(*id)));
}

TEST_F(ShimSlotDirTest, AGarbageConfigIsReportedNotFatal) {
  slots::ShimSlotBackend backend({.root = dir_ / "slots", .ledger_root = dir_ / "ledgers"});
  ASSERT_TRUE(backend.Create(Config()).ok());
  ASSERT_TRUE(backend.Create(Config()).ok());
  std::ofstream(backend.SlotDir(1) / "config") << "garbage\n";
  auto list = backend.List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, 0u);
  EXPECT_EQ(backend.DamagedSlots(), std::vector<uint32_t>{1});
}

// After a reboot the slot path (a tmpfs) is empty: Restore puts a slot back at the id the
// checkpoint recorded, so mounts handed out before still name it, and takes the lowest free id
// only when that one is taken. Create still fills the lowest hole.
TEST_F(ShimSlotDirTest, RestoreTakesTheRecordedIdWhileItIsFree) {
  slots::SlotConfig c = Config();
  {
    slots::ShimSlotBackend before({.root = dir_ / "slots", .ledger_root = dir_ / "ledgers"});
    for (uint32_t want = 0; want < 3; ++want) {
      auto id = before.Create(c);
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ASSERT_EQ(*id, want);
    }
  }
  fs::remove_all(dir_ / "slots");
  fs::remove_all(dir_ / "ledgers");
  slots::ShimSlotBackend backend({.root = dir_ / "slots", .ledger_root = dir_ / "ledgers"});
  c.id = 2;
  auto two = backend.Restore(c);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(*two, 2u);
  auto parsed = slots::ParseSlotConfigFile(Slurp(backend.SlotDir(2) / "config"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, c);
  EXPECT_TRUE(fs::is_directory(backend.LedgerDir(2)));
  c.name = "g0-m2-n4";
  auto taken = backend.Restore(c);  // id 2 is taken now: the lowest free one
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(*taken, 0u);
  auto hole = backend.Create(Config());
  ASSERT_TRUE(hole.ok());
  EXPECT_EQ(*hole, 1u);
  // A directory made behind the backend's back is skipped, not written into.
  fs::create_directory(dir_ / "slots" / "3");
  auto next = backend.Create(Config());
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 4u);
  EXPECT_FALSE(fs::exists(dir_ / "slots" / "3" / "config"));
}

// The manager restarts over a slot whose config a tenant edited into garbage: it starts, and the
// config is the checkpoint's again.
TEST_F(ShimSlotDirTest, ReconcileRestoresAGarbageConfigFromTheCheckpoint) {
  slots::ShimSlotBackend backend({.root = dir_ / "slots", .ledger_root = dir_ / "ledgers"});
  checkpoint::CheckpointStore store(dir_ / "cp");
  std::vector<alloc::GpuInfo> gpus = {{0, "GPU-a", 4ull << 30, 0, "0000:01:00.0", "", {}, {}, ""}};
  auto make = [&] {
    auto placer = alloc::MakePlacer("firstfit", gpus);
    EXPECT_TRUE(placer.ok());
    return std::make_unique<manager::SlotManager>(
        manager::ManagerOptions{}, gpus, backend, store, nullptr, std::move(*placer),
        [] { return std::chrono::steady_clock::time_point{}; });
  };
  {
    auto m = make();
    ASSERT_TRUE(m->Reconcile().ok());
    ASSERT_TRUE(
        m->Allocate(alloc::ResourceKind::kMemory, {"vcuda-memory-gpu0-0", "vcuda-memory-gpu0-1"})
            .ok());
  }
  const fs::path config = backend.SlotDir(0) / "config";
  const std::string good = Slurp(config);
  ASSERT_NE(good.find("mem_quota="), std::string::npos) << good;
  std::ofstream(config, std::ios::trunc) << "mem_quota=0\ngarbage\n";
  auto m = make();
  auto report = m->Reconcile();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->restored, 1);
  EXPECT_EQ(Slurp(config), good);
}

}  // namespace
}  // namespace vgpu

// The manager's kmod enforcement backend (daemon/slots/kmod_backend.cc) against the real vgpu.ko
// in front of nvsim.ko: the same SlotManager the daemon runs, with a scripted pod-resources
// source, creating module slots for allocations, reattaching to live slots after a restart
// (a new backend instance and a new manager over the same checkpoint), reclaiming orphans once
// their processes exit, and reading the module's per-slot counters.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "tests/vm/guest/vgpu/vgpu_rm.h"
#include "vgpu/kmodclient.h"
#include "vgpu/manager/log.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/slots/kmod_backend.h"

namespace vgpu::manager {
namespace {

namespace fs = std::filesystem;
using alloc::FormatDeviceId;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kUnit = 64 * kMiB;  // nvsim GPUs have 1 GiB: 16 memory IDs each
constexpr const char* kCore = "tencent.com/vcuda-core";
constexpr const char* kMem = "tencent.com/vcuda-memory";

class ScriptedPods final : public podresources::PodResourcesSource {
 public:
  Result<std::vector<podresources::ContainerAssignment>> List() override {
    std::lock_guard lock(mu_);
    return containers_;
  }
  void Add(std::string pod, std::vector<std::string> mem, std::vector<std::string> core) {
    std::lock_guard lock(mu_);
    podresources::ContainerAssignment a{"default", std::move(pod), "main", {}};
    a.device_ids[kMem] = std::move(mem);
    a.device_ids[kCore] = std::move(core);
    containers_.push_back(std::move(a));
  }
  void Remove(const std::string& pod) {
    std::lock_guard lock(mu_);
    std::erase_if(containers_, [&](const auto& a) { return a.pod_name == pod; });
  }

 private:
  std::mutex mu_;
  std::vector<podresources::ContainerAssignment> containers_;
};

std::vector<std::string> Ids(ResourceKind kind, uint32_t gpu, uint32_t first, uint32_t n) {
  std::vector<std::string> out;
  for (uint32_t u = first; u < first + n; ++u) {
    out.push_back(FormatDeviceId({kind, gpu, u}));
  }
  return out;
}

// What vgpu.ko itself reports, through a client of our own (not the backend under test).
std::vector<kmod::SlotInfo> ModuleSlots() {
  auto c = kmod::Client::Open();
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) {
    return {};
  }
  auto list = (*c)->ListSlots();
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  return list.ok() ? *list : std::vector<kmod::SlotInfo>{};
}

std::optional<kmod::SlotInfo> ModuleSlot(const std::string& name) {
  for (const auto& s : ModuleSlots()) {
    if (s.name == name && s.state == VGPU_SLOT_STATE_ACTIVE) {
      return s;
    }
  }
  return std::nullopt;
}

std::string HostPath(const Grant& g, const std::string& container_path) {
  for (const auto& d : g.edits.devices) {
    if (d.container_path == container_path) {
      return d.host_path;
    }
  }
  return "";
}

class KmodManagerTest : public ::testing::Test {
 protected:
  KmodManagerTest() {
    SetQuietInfo(true);  // warnings (adoption, reclaim failures) still print
    char tmpl[] = "/tmp/vgpu-mgr-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (uint32_t g = 0; g < 2; ++g) {
      alloc::GpuInfo info;
      info.index = g;
      info.uuid = "GPU-nvsim-" + std::to_string(g);
      info.memory_bytes = 1024 * kMiB;
      info.pci_bus_id = "0000:0" + std::to_string(g + 1) + ":00.0";
      gpus_.push_back(info);
    }
  }
  ~KmodManagerTest() override {
    manager_.reset();
    // Leave the module as the next test expects it: no slots.
    if (auto c = kmod::Client::Open(); c.ok()) {
      if (auto list = (*c)->ListSlots(); list.ok()) {
        for (const auto& s : *list) {
          (void)(*c)->DestroySlot(s.id, VGPU_DEL_F_DEFER);
        }
      }
    }
    fs::remove_all(dir_);
  }

  // A manager start: a fresh backend (its own netlink socket) and SlotManager over the same
  // checkpoint file, reconciled like the daemon's start-up step.
  ReconcileReport Start(std::chrono::seconds orphan_grace = std::chrono::seconds(30)) {
    manager_.reset();
    backend_.reset();
    store_.reset();
    auto backend = slots::KmodSlotBackend::Open();
    EXPECT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(*backend);
    store_ = std::make_unique<checkpoint::CheckpointStore>(dir_ / "checkpoint");
    ManagerOptions options;
    options.memory_unit_bytes = kUnit;
    options.orphan_grace = orphan_grace;
    auto placer = alloc::MakePlacer("firstfit", gpus_);
    EXPECT_TRUE(placer.ok());
    manager_ = std::make_unique<SlotManager>(options, gpus_, *backend_, *store_, &pods_,
                                             std::move(*placer),
                                             [] { return std::chrono::steady_clock::now(); });
    auto report = manager_->Reconcile();
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : ReconcileReport{};
  }

  // Allocate + PreStart as the kubelet does for one container; returns the memory grant.
  Grant Admit(const std::string& pod, uint32_t gpu, uint32_t first_unit, uint32_t units,
              uint32_t core) {
    auto mem = Ids(ResourceKind::kMemory, gpu, first_unit, units);
    auto cores = Ids(ResourceKind::kCore, gpu, 0, core);
    EXPECT_TRUE(manager_->Allocate(ResourceKind::kCore, cores).ok());
    auto grant = manager_->Allocate(ResourceKind::kMemory, mem);
    EXPECT_TRUE(grant.ok()) << grant.status().ToString();
    pods_.Add(pod, mem, cores);
    Status linked = manager_->PreStart(ResourceKind::kMemory, mem);
    EXPECT_TRUE(linked.ok()) << linked.ToString();
    return grant.ok() ? *grant : Grant{};
  }

  fs::path dir_;
  std::vector<alloc::GpuInfo> gpus_;
  ScriptedPods pods_;
  std::unique_ptr<slots::KmodSlotBackend> backend_;
  std::unique_ptr<checkpoint::CheckpointStore> store_;
  std::unique_ptr<SlotManager> manager_;
};

TEST_F(KmodManagerTest, AllocationsCreateConfiguredModuleSlots) {
  Start();
  Grant a = Admit("pod-a", 0, 0, 4, 30);  // 256 MiB, 30 % of gpu0
  Grant b = Admit("pod-b", 1, 2, 2, 50);  // 128 MiB, 50 % of gpu1
  auto sa = ModuleSlot("g0-m0-n4");
  auto sb = ModuleSlot("g1-m2-n2");
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(sa->gpu, 0u);
  EXPECT_EQ(sa->mem_quota, 4 * kUnit);
  EXPECT_EQ(sa->compute_share, 30u);  // linked at PreStart, pushed to the module
  EXPECT_EQ(sb->gpu, 1u);
  EXPECT_EQ(sb->mem_quota, 2 * kUnit);
  EXPECT_EQ(sb->compute_share, 50u);
  // The container's nodes are the module's nodes of that slot, and they exist.
  EXPECT_EQ(HostPath(a, "/dev/nvidiactl"), "/dev/vgpuctl" + std::to_string(sa->id));
  EXPECT_EQ(HostPath(b, "/dev/nvidia0"), "/dev/vgpu" + std::to_string(sb->id));
  unsigned major = 0;
  EXPECT_TRUE(vgpu_test::IsChar(HostPath(a, "/dev/nvidiactl"), &major));
  EXPECT_TRUE(vgpu_test::IsChar(HostPath(b, "/dev/nvidia0"), &major));
  // The same IDs again (a kubelet retry) reuse the slot: no second module slot.
  ASSERT_TRUE(manager_->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 4)).ok());
  EXPECT_EQ(ModuleSlots().size(), 2u);
}

TEST_F(KmodManagerTest, RestartReattachesToLiveSlotsWithoutDisturbingThem) {
  Start();
  Grant g = Admit("pod-a", 0, 0, 4, 40);
  auto before = ModuleSlot("g0-m0-n4");
  ASSERT_TRUE(before);
  // A running container: an RM session on the slot's nodes with 64 MiB charged.
  vgpu_test::Session s;
  ASSERT_EQ(s.Open(HostPath(g, "/dev/nvidiactl"), HostPath(g, "/dev/nvidia0")), "");
  ASSERT_EQ(s.Vidmem(0xa0000001, 64 * kMiB), NV_OK);
  ASSERT_TRUE(manager_->FlushCheckpoint(std::chrono::seconds(10)));
  auto records = manager_->Snapshot();

  ReconcileReport r = Start();  // new backend instance, new manager, same checkpoint
  EXPECT_EQ(r.restored, 1) << r.ToString();
  EXPECT_EQ(r.recreated + r.adopted + r.destroyed, 0) << r.ToString();
  EXPECT_EQ(manager_->Snapshot(), records);
  auto after = ModuleSlot("g0-m0-n4");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->id, before->id);
  EXPECT_EQ(after->stats[VGPU_STAT_MEM_CHARGED], 64 * kMiB);  // the container's charge kept
  // The container keeps working through the same slot, under the same quota.
  EXPECT_EQ(s.Vidmem(0xa0000002, 64 * kMiB), NV_OK);
  EXPECT_EQ(s.Vidmem(0xa0000003, 192 * kMiB), NV_ERR_NO_MEMORY);  // 128 + 192 > 256 MiB

  // A crash that lost the checkpoint: the live slot is adopted and relinked from the kubelet.
  fs::remove(dir_ / "checkpoint");
  r = Start();
  EXPECT_EQ(r.adopted, 1) << r.ToString();
  EXPECT_EQ(r.relinked, 1) << r.ToString();
  auto adopted = manager_->Snapshot();
  ASSERT_EQ(adopted.size(), 1u);
  EXPECT_EQ(adopted[0].config.id, before->id);
  EXPECT_EQ(adopted[0].pod_name, "pod-a");
  EXPECT_EQ(adopted[0].config.compute_share, 40u);
  EXPECT_EQ(adopted[0].memory_ids, records[0].memory_ids);
}

TEST_F(KmodManagerTest, OrphansAreReclaimedOnceTheirProcessesExit) {
  Start(/*orphan_grace=*/std::chrono::seconds(0));
  Grant g = Admit("pod-gone", 0, 0, 2, 10);
  auto slot = ModuleSlot("g0-m0-n2");
  ASSERT_TRUE(slot);
  std::string ctl = HostPath(g, "/dev/nvidiactl");
  auto held = std::make_unique<vgpu_test::Session>();
  ASSERT_EQ(held->Open(ctl, HostPath(g, "/dev/nvidia0")), "");
  pods_.Remove("pod-gone");  // the kubelet forgot the pod; one of its processes lives on
  auto n = manager_->ReclaimOrphans();
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 0);  // the module refuses (EBUSY) while a file is open: nothing is torn away
  EXPECT_TRUE(ModuleSlot("g0-m0-n2"));
  EXPECT_EQ(manager_->Snapshot().size(), 1u);
  held.reset();  // the last process exits
  n = manager_->ReclaimOrphans();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_FALSE(ModuleSlot("g0-m0-n2"));
  EXPECT_TRUE(manager_->Snapshot().empty());
  struct stat st;
  EXPECT_NE(::stat(ctl.c_str(), &st), 0) << ctl << " still exists";
  // The reclaim is in the checkpoint: a restart does not bring the slot back.
  ASSERT_TRUE(manager_->FlushCheckpoint(std::chrono::seconds(10)));
  ReconcileReport r = Start();
  EXPECT_EQ(r.recreated, 0) << r.ToString();
  EXPECT_TRUE(ModuleSlots().empty());
}

TEST_F(KmodManagerTest, UsageReadsTheModuleCounters) {
  Start();
  Grant g = Admit("pod-a", 0, 0, 4, 100);  // 256 MiB
  uint32_t id = static_cast<uint32_t>(std::stoul(g.edits.envs.at("VGPU_SLOT_ID")));
  auto idle = manager_->SlotUsage(id);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_EQ(*idle, slots::SlotUsage{});
  {
    vgpu_test::Session s;
    ASSERT_EQ(s.Open(HostPath(g, "/dev/nvidiactl"), HostPath(g, "/dev/nvidia0")), "");
    ASSERT_EQ(s.Vidmem(0xb0000001, 128 * kMiB), NV_OK);
    ASSERT_EQ(s.Vidmem(0xb0000002, 192 * kMiB), NV_ERR_NO_MEMORY);
    auto u = manager_->SlotUsage(id);
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_EQ(u->memory_charged_bytes, 128 * kMiB);
    EXPECT_EQ(u->memory_peak_bytes, 128 * kMiB);
    EXPECT_EQ(u->memory_denials, 1u);
    ASSERT_EQ(s.FreeObj(0xb0000001), NV_OK);
  }
  auto u = manager_->SlotUsage(id);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->memory_charged_bytes, 0u);
  EXPECT_EQ(u->memory_peak_bytes, 128 * kMiB);
  // A slot the module does not have reads as an error, not as zero.
  EXPECT_FALSE(manager_->SlotUsage(id + 1000).ok());
}

}  // namespace
}  // namespace vgpu::manager

// SlotManager with the fake backend, a scripted pod-resources source and an injected clock.
#include "vgpu/manager/slot_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "vgpu/manager/control_api.h"
#include "vgpu/manager/stats_source.h"
#include "vgpu/metrics/prometheus_text.h"
#include "vgpu/slots/fake_backend.h"
#include "vgpu/slots/slot_config_file.h"

namespace vgpu::manager {
namespace {

namespace fs = std::filesystem;
using alloc::FormatDeviceId;

constexpr uint64_t kUnit = 256ull << 20;
constexpr const char* kCore = "tencent.com/vcuda-core";
constexpr const char* kMem = "tencent.com/vcuda-memory";
constexpr const char* kGpu = "tencent.com/vcuda-gpu";

class FakePodResources final : public podresources::PodResourcesSource {
 public:
  Result<std::vector<podresources::ContainerAssignment>> List() override {
    if (!available) {
      return UnavailableError("fake pod-resources down");
    }
    return containers;
  }
  void Add(std::string pod, std::string ctr, std::vector<std::string> mem,
           std::vector<std::string> core = {}) {
    podresources::ContainerAssignment a{"default", std::move(pod), std::move(ctr), {}};
    if (!mem.empty()) {
      a.device_ids[kMem] = std::move(mem);
    }
    if (!core.empty()) {
      a.device_ids[kCore] = std::move(core);
    }
    containers.push_back(std::move(a));
  }
  std::vector<podresources::ContainerAssignment> containers;
  bool available = true;
};

// The Kubernetes API's view of pods' annotations, scripted.
class FakePodAnnotations final : public podresources::PodAnnotationSource {
 public:
  Result<podresources::Annotations> Get(const std::string& ns, const std::string& pod) override {
    ++calls;
    if (!available) {
      return UnavailableError("fake API server down");
    }
    auto it = pods.find(ns + "/" + pod);
    if (it == pods.end()) {
      return NotFoundError("pods \"" + pod + "\" not found");
    }
    return it->second;
  }
  std::map<std::string, podresources::Annotations> pods;
  bool available = true;
  int calls = 0;
};

std::vector<std::string> Ids(ResourceKind kind, uint32_t gpu, uint32_t first, uint32_t n) {
  std::vector<std::string> out;
  for (uint32_t u = first; u < first + n; ++u) {
    out.push_back(FormatDeviceId({kind, gpu, u}));
  }
  return out;
}

// A DRA claim of one memory unit and 20 % of GPU `gpu`'s cores.
ClaimSlotRequest OneUnitClaim(std::string name, uint32_t gpu) {
  ClaimSlotRequest claim;
  claim.name = std::move(name);
  claim.gpu = gpu;
  claim.memory_bytes = kUnit;
  claim.core_percent = 20;
  return claim;
}

class SlotManagerTest : public ::testing::Test {
 protected:
  SlotManagerTest() {
    char tmpl[] = "/tmp/vgpu-slotmgr-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    store_ = std::make_unique<checkpoint::CheckpointStore>(dir_ / "cp");
    gpus_ = {{0, "GPU-a", 4ull << 30, 0, "0000:01:00.0", "", {}, {}, ""},
             {1, "GPU-b", 4ull << 30, 1, "0000:02:00.0", "", {}, {}, ""}};
  }
  ~SlotManagerTest() override { fs::remove_all(dir_); }

  std::unique_ptr<SlotManager> Make(std::string placement = "firstfit") {
    ManagerOptions o;
    o.orphan_grace = std::chrono::seconds(30);
    o.cdi_kind = "vgpu.io/slot";
    o.cdi_spec_dir = (dir_ / "cdi").string();
    o.reference_clock_mhz = [this](std::string_view uuid) {
      auto it = refs_.find(std::string(uuid));
      return it == refs_.end() ? 0u : it->second;
    };
    auto placer = alloc::MakePlacer(placement, gpus_);
    EXPECT_TRUE(placer.ok());
    auto m = std::make_unique<SlotManager>(o, gpus_, backend_, *store_, &pods_, std::move(*placer),
                                           [this] { return now_; });
    auto r = m->Reconcile();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return m;
  }

  // A manager's life before a restart: it allocates `mem`, the kubelet lists container p/c with
  // `mem` and `core`, PreStart links them, and the manager goes away. `*held` is what it held.
  void LinkOneSlotThenExit(const std::vector<std::string>& mem,
                           const std::vector<std::string>& core,
                           std::vector<slots::SlotRecord>* held) {
    auto m = Make();
    ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
    pods_.Add("p", "c", mem, core);
    ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, mem).ok());
    *held = m->Snapshot();
  }

  fs::path dir_;
  slots::FakeSlotBackend backend_;
  std::unique_ptr<checkpoint::CheckpointStore> store_;
  FakePodResources pods_;
  std::vector<alloc::GpuInfo> gpus_;
  std::chrono::steady_clock::time_point now_{std::chrono::seconds(1000)};
  std::map<std::string, uint32_t> refs_;  // the GPUs' measured reference clocks, by UUID
};

// The reference clock the manager measured on a GPU (daemon/reference_clock) goes into every slot
// on it: at creation, by each path; into the live slots when it is learned or lowered; never onto
// the other GPU. A DRA claim retried after it changed is the same claim, not a conflict.
TEST_F(SlotManagerTest, SlotsCarryTheirGpusReferenceClock) {
  auto m = Make();
  auto backend_ref = [&](uint32_t id) {
    auto live = backend_.List();
    EXPECT_TRUE(live.ok());
    for (const auto& c : *live) {
      if (c.id == id) return c.compute_ref_clock_mhz;
    }
    return 99999u;
  };
  // A pod's slot, linked to 20 % before anything was measured.
  const auto mem = Ids(ResourceKind::kMemory, 0, 0, 2);
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
  pods_.Add("p", "c", mem, Ids(ResourceKind::kCore, 0, 0, 20));
  ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, mem).ok());
  const uint32_t early = m->Snapshot()[0].config.id;
  EXPECT_EQ(m->Snapshot()[0].config.compute_ref_clock_mhz, 0u) << "nothing measured yet";
  refs_["GPU-a"] = 1483;
  EXPECT_EQ(m->ApplyReferenceClock("GPU-a"), 1);
  EXPECT_EQ(m->Snapshot()[0].config.compute_ref_clock_mhz, 1483u);
  EXPECT_EQ(backend_ref(early), 1483u) << "the slot's config rewritten for new processes";
  EXPECT_EQ(m->ApplyReferenceClock("GPU-a"), 0) << "nothing left to rewrite";
  auto manual = m->CreateManual(0, kUnit, 30, ComputeMode::kCap, "by-hand");
  ASSERT_TRUE(manual.ok()) << manual.status().ToString();
  EXPECT_EQ(manual->config.compute_ref_clock_mhz, 1483u) << "the control API's slot";
  const ClaimSlotRequest claim = OneUnitClaim("claim-1", 0);
  auto claimed = m->CreateForClaim(claim);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  EXPECT_EQ(claimed->config.compute_ref_clock_mhz, 1483u) << "the DRA claim's slot";
  refs_["GPU-a"] = 1470;  // lowered, the slots not yet told
  auto again = m->CreateForClaim(claim);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->config.id, claimed->config.id) << "a retried claim is the same claim";
  EXPECT_EQ(m->ApplyReferenceClock("GPU-a"), 3);
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 8, 2)).ok());
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 1, 0, 2)).ok());
  ASSERT_EQ(m->Snapshot().size(), 5u);
  for (const auto& r : m->Snapshot()) {
    EXPECT_EQ(r.config.compute_ref_clock_mhz, r.config.gpu == 0 ? 1470u : 0u) << r.config.name;
    EXPECT_EQ(backend_ref(r.config.id), r.config.compute_ref_clock_mhz) << r.config.name;
  }
}

// In shim mode the slot config's gpu_index (the minor of the GPU's /dev/nvidiaN) is what
// libvgpu-shim.so confines the slot to: it asks the driver for that GPU's id (shim/preload/shim.cc,
// FindSlotGpuId), as vgpu.ko does with the same number. Every creation path must write the GPU
// the slot was granted: device plugin memory and whole-GPU grants, the control API, DRA claims.
TEST_F(SlotManagerTest, EverySlotsConfigNamesTheGpuItWasGranted) {
  auto m = Make();
  auto claimed = m->CreateForClaim(OneUnitClaim("claim-1", 1));
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  auto manual = m->CreateManual(1, kUnit, 30, ComputeMode::kCap, "by-hand");
  ASSERT_TRUE(manual.ok()) << manual.status().ToString();
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 1, 8, 2)).ok());
  ASSERT_TRUE(m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu0"}).ok());
  auto live = backend_.List();
  ASSERT_TRUE(live.ok());
  ASSERT_EQ(live->size(), 4u);
  std::map<uint32_t, uint32_t> gpu_of;  // slot id -> the GPU its config names
  for (const auto& c : *live) {
    gpu_of[c.id] = c.gpu;
    const std::string file = slots::FormatSlotConfigFile(c);
    EXPECT_NE(file.find("\ngpu_index=" + std::to_string(c.gpu) + "\n"), std::string::npos) << file;
    EXPECT_EQ(c.gpu, c.exclusive ? 0u : 1u) << c.name;
  }
  EXPECT_EQ(gpu_of[claimed->config.id], 1u) << "the DRA claim's slot";
  EXPECT_EQ(gpu_of[manual->config.id], 1u) << "the control API's slot";
  int whole = 0;
  for (const auto& c : *live) {
    whole += c.exclusive;
  }
  EXPECT_EQ(whole, 1) << "the device plugin's whole-GPU slot";
}

TEST_F(SlotManagerTest, AdvertisesIdsPerGpu) {
  auto m = Make();
  EXPECT_EQ(m->Devices(ResourceKind::kCore).size(), 200u);
  EXPECT_EQ(m->Devices(ResourceKind::kMemory).size(), 32u);  // 4 GiB / 256 MiB x 2
  auto whole = m->Devices(ResourceKind::kWholeGpu);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[1].id, "vcuda-gpu1");
  EXPECT_EQ(whole[1].numa, 1);
}

TEST_F(SlotManagerTest, MemoryIdsDefineTheSlot) {
  auto m = Make();
  auto ids = Ids(ResourceKind::kMemory, 1, 4, 3);
  auto g = m->Allocate(ResourceKind::kMemory, ids);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].config.name, "g1-m4-n3");
  EXPECT_EQ(snap[0].config.gpu, 1u);
  EXPECT_EQ(snap[0].config.mem_quota, 3 * kUnit);
  EXPECT_EQ(snap[0].memory_ids, ids);
  EXPECT_EQ(g->edits.envs.at("VGPU_SLOT_ID"), std::to_string(snap[0].config.id));
  EXPECT_EQ(g->annotations.at(kMem), std::to_string(3 * kUnit));
  ASSERT_EQ(g->cdi_devices.size(), 1u);
  EXPECT_EQ(g->cdi_devices[0], "vgpu.io/slot=slot" + std::to_string(snap[0].config.id));
  // The CDI spec the runtime resolves that name against.
  fs::path spec =
      dir_ / "cdi" / ("vgpu.io-slot_slot" + std::to_string(snap[0].config.id) + ".json");
  {
    std::ifstream in(spec);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find("\"cdiVersion\": \"0.5.0\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"name\": \"slot" + std::to_string(snap[0].config.id) + "\""),
              std::string::npos);
    EXPECT_NE(text.find("\"hostPath\": \"/dev/fake-vgpu"), std::string::npos) << text;
  }
  // Same IDs again (init container reuse, kubelet retry): same slot, no new backend slot.
  auto again = m->Allocate(ResourceKind::kMemory, {ids[2], ids[0], ids[1]});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(backend_.creates(), 1);
  EXPECT_EQ(m->Snapshot().size(), 1u);
  // The checkpoint holds it once the writer caught up.
  ASSERT_TRUE(m->FlushCheckpoint(std::chrono::seconds(10)));
  auto loaded = store_->Load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->records.size(), 1u);
  EXPECT_EQ(loaded->records[0], snap[0]);
}

TEST_F(SlotManagerTest, RefusesUnsatisfiableRequestsWithReasons) {
  auto m = Make();
  struct Case {
    ResourceKind kind;
    std::vector<std::string> ids;
    std::string says;
  } cases[] = {
      {ResourceKind::kMemory, {"vcuda-memory-gpu0-1", "vcuda-memory-gpu1-2"}, "span GPUs"},
      {ResourceKind::kMemory, {"vcuda-memory-gpu0-16"}, "does not exist: gpu0 has 16"},
      {ResourceKind::kMemory, {"vcuda-memory-gpu7-0"}, "gpu7 does not exist"},
      {ResourceKind::kMemory, {"vcuda-core-gpu0-0"}, "is not a vcuda-memory ID"},
      {ResourceKind::kMemory, {}, "no vcuda-memory device IDs"},
      {ResourceKind::kCore, {"vcuda-core-gpu0-1", "vcuda-core-gpu1-2"}, "span GPUs"},
      {ResourceKind::kCore, {"vcuda-core-gpu0-100"}, "does not exist"},
      {ResourceKind::kWholeGpu, {"vcuda-gpu0", "vcuda-gpu0"}, "appears twice"},
      {ResourceKind::kWholeGpu, {"vcuda-gpu0", "vcuda-gpu7"}, "gpu7 does not exist"},
      {ResourceKind::kWholeGpu, {}, "no device IDs"},
  };
  for (const auto& tc : cases) {
    auto g = m->Allocate(tc.kind, tc.ids);
    ASSERT_FALSE(g.ok()) << tc.says;
    EXPECT_NE(g.status().message().find(tc.says), std::string::npos) << g.status().ToString();
  }
  EXPECT_EQ(backend_.creates(), 0);
  EXPECT_TRUE(m->Snapshot().empty());
}

TEST_F(SlotManagerTest, PreStartLinksCoreShareFromPodResources) {
  auto m = Make();
  auto mem = Ids(ResourceKind::kMemory, 0, 2, 4);
  auto core = Ids(ResourceKind::kCore, 0, 10, 30);
  ASSERT_TRUE(m->Allocate(ResourceKind::kCore, core).ok());
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
  // Before the kubelet lists the container, PreStart cannot link: it says so.
  Status early = m->PreStart(ResourceKind::kCore, core);
  EXPECT_EQ(early.code(), StatusCode::kUnavailable);
  pods_.Add("pod-a", "main", mem, core);
  ASSERT_TRUE(m->PreStart(ResourceKind::kCore, core).ok());
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].config.compute_share, 30u);
  EXPECT_EQ(snap[0].pod_name, "pod-a");
  EXPECT_EQ(snap[0].container, "main");
  EXPECT_TRUE(snap[0].linked);
  auto live = backend_.List();
  ASSERT_TRUE(live.ok());
  EXPECT_EQ((*live)[0].compute_share, 30u);                   // enforced, not just recorded
  ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, mem).ok());  // idempotent
}

// tencent.com/vcuda-core: N is a hard cap of N % unless the pod's vgpu.io/compute-mode annotation
// says weight; the mode reaches the backend before the container starts.
TEST_F(SlotManagerTest, ThePodsAnnotationChoosesTheComputeMode) {
  FakePodAnnotations api;
  auto m = Make();
  m->SetPodAnnotations(&api);
  struct Case {
    std::string pod;
    std::optional<std::string> annotation;
    ComputeMode want;
  };
  uint32_t unit = 0;
  for (const Case& c : {Case{"capped", std::nullopt, ComputeMode::kCap},
                        Case{"weighted", "weight", ComputeMode::kWeight},
                        Case{"explicit-cap", "cap", ComputeMode::kCap}}) {
    auto mem = Ids(ResourceKind::kMemory, 0, 2 * unit, 2);
    auto core = Ids(ResourceKind::kCore, 0, 30 * unit, 30);
    const std::string key = alloc::SlotKey(0, {2 * unit, 2 * unit + 1});
    ++unit;
    if (c.annotation) {
      api.pods["default/" + c.pod] = {{"vgpu.io/compute-mode", *c.annotation}, {"other", "x"}};
    } else {
      api.pods["default/" + c.pod] = {};
    }
    ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
    pods_.Add(c.pod, "main", mem, core);
    ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, mem).ok()) << c.pod;
    bool found = false;
    auto listed = backend_.List();
    ASSERT_TRUE(listed.ok());
    for (const auto& live : *listed) {
      if (live.name == key) {
        found = true;
        EXPECT_EQ(live.compute_share, 30u) << c.pod;
        EXPECT_EQ(live.compute_mode, c.want) << c.pod;  // enforced, not just recorded
      }
    }
    EXPECT_TRUE(found) << c.pod;
  }
  EXPECT_EQ(api.calls, 3);
}

TEST_F(SlotManagerTest, ABadComputeModeAnnotationFailsPreStartByName) {
  FakePodAnnotations api;
  auto m = Make();
  m->SetPodAnnotations(&api);
  auto mem = Ids(ResourceKind::kMemory, 0, 0, 2);
  api.pods["default/typo"] = {{"vgpu.io/compute-mode", "wieght"}};
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
  pods_.Add("typo", "main", mem, Ids(ResourceKind::kCore, 0, 0, 30));
  Status s = m->PreStart(ResourceKind::kMemory, mem);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vgpu.io/compute-mode"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'wieght'"), std::string::npos) << s.message();
}

// The API server down must not keep pods from starting: the share is then the cap it asked for.
TEST_F(SlotManagerTest, WithoutTheApiTheShareIsACap) {
  FakePodAnnotations api;
  api.available = false;
  auto m = Make();
  m->SetPodAnnotations(&api);
  auto mem = Ids(ResourceKind::kMemory, 0, 0, 2);
  api.pods["default/p"] = {{"vgpu.io/compute-mode", "weight"}};
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
  pods_.Add("p", "main", mem, Ids(ResourceKind::kCore, 0, 0, 40));
  ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, mem).ok());
  EXPECT_EQ(backend_.List()->at(0).compute_mode, ComputeMode::kCap);
  EXPECT_EQ(backend_.List()->at(0).compute_share, 40u);
}

TEST_F(SlotManagerTest, PreStartRefusesCoreWithoutMemoryAndCrossGpu) {
  auto m = Make();
  auto core = Ids(ResourceKind::kCore, 0, 0, 20);
  ASSERT_TRUE(m->Allocate(ResourceKind::kCore, core).ok());
  pods_.Add("pod-c", "only-core", {}, core);
  Status s = m->PreStart(ResourceKind::kCore, core);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("but no tencent.com/vcuda-memory"), std::string::npos) << s.ToString();

  auto mem = Ids(ResourceKind::kMemory, 1, 0, 2);
  auto core1 = Ids(ResourceKind::kCore, 0, 50, 10);
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, mem).ok());
  pods_.Add("pod-x", "cross", mem, core1);
  Status cross = m->PreStart(ResourceKind::kMemory, mem);
  ASSERT_FALSE(cross.ok());
  EXPECT_NE(cross.message().find("vcuda-core IDs are on gpu0 but vcuda-memory IDs on gpu1"),
            std::string::npos)
      << cross.ToString();
}

TEST_F(SlotManagerTest, StaleSlotHoldingReassignedIdsIsReplaced) {
  auto m = Make();
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 4)).ok());
  // The kubelet hands unit 2 to someone else: the old holder must be gone.
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 2, 2)).ok());
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].config.name, "g0-m2-n2");
  EXPECT_EQ(backend_.destroys(), 1);
}

TEST_F(SlotManagerTest, OrphansAreReclaimedAfterTheGraceOnly) {
  auto m = Make();
  auto a = Ids(ResourceKind::kMemory, 0, 0, 2);
  auto b = Ids(ResourceKind::kMemory, 0, 2, 2);
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, a).ok());
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, b).ok());
  pods_.Add("alive", "c", a);
  auto n = m->ReclaimOrphans();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  now_ += std::chrono::seconds(29);
  EXPECT_EQ(*m->ReclaimOrphans(), 0);
  now_ += std::chrono::seconds(1);
  EXPECT_EQ(*m->ReclaimOrphans(), 1);
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].memory_ids, a);
  // pod-resources down: nothing is reclaimed, the failure is reported.
  pods_.available = false;
  now_ += std::chrono::hours(1);
  EXPECT_FALSE(m->ReclaimOrphans().ok());
  EXPECT_EQ(m->Snapshot().size(), 1u);
}

TEST_F(SlotManagerTest, ListedAgainResetsTheOrphanClock) {
  auto m = Make();
  auto a = Ids(ResourceKind::kMemory, 0, 0, 2);
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, a).ok());
  now_ += std::chrono::seconds(20);
  EXPECT_EQ(*m->ReclaimOrphans(), 0);  // unlisted since t+20
  pods_.Add("late", "c", a);
  now_ += std::chrono::seconds(20);
  EXPECT_EQ(*m->ReclaimOrphans(), 0);  // listed: clock reset
  pods_.containers.clear();
  now_ += std::chrono::seconds(20);
  EXPECT_EQ(*m->ReclaimOrphans(), 0);  // unlisted since t+60, grace not over
  now_ += std::chrono::seconds(30);
  EXPECT_EQ(*m->ReclaimOrphans(), 1);
}

TEST_F(SlotManagerTest, RestartRestoresExactlyAndAdoptsCrashLeftovers) {
  auto mem = Ids(ResourceKind::kMemory, 1, 0, 4);
  auto core = Ids(ResourceKind::kCore, 1, 0, 25);
  std::vector<slots::SlotRecord> before;
  ASSERT_NO_FATAL_FAILURE(LinkOneSlotThenExit(mem, core, &before));
  {
    auto m = Make();  // same backend, same checkpoint: a manager restart
    EXPECT_EQ(m->Snapshot(), before);
    EXPECT_EQ(backend_.creates(), 1);
  }
  // A slot the backend has but the checkpoint lost (killed between create and save).
  slots::SlotConfig leftover;
  leftover.name = "g0-m8-n2";
  leftover.gpu = 0;
  leftover.mem_quota = 2 * kUnit;
  ASSERT_TRUE(backend_.Create(leftover).ok());
  auto m = Make();
  EXPECT_EQ(m->Snapshot().size(), 2u);
  // The kubelet retries Allocate with the same IDs: the adopted slot, not a duplicate.
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 8, 2)).ok());
  EXPECT_EQ(m->Snapshot().size(), 2u);
  EXPECT_EQ(backend_.List()->size(), 2u);
}

TEST_F(SlotManagerTest, CorruptCheckpointIsRebuiltFromPodResources) {
  auto mem = Ids(ResourceKind::kMemory, 0, 4, 4);
  auto core = Ids(ResourceKind::kCore, 0, 0, 40);
  std::vector<slots::SlotRecord> before;
  ASSERT_NO_FATAL_FAILURE(LinkOneSlotThenExit(mem, core, &before));
  std::ofstream(dir_ / "cp") << "{ garbage";
  ManagerOptions o;
  o.cdi_kind = "vgpu.io/slot";
  auto placer = alloc::MakePlacer("firstfit", gpus_);
  SlotManager m(o, gpus_, backend_, *store_, &pods_, std::move(*placer), [this] { return now_; });
  auto report = m.Reconcile();
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->checkpoint_corrupt.empty());
  EXPECT_TRUE(fs::exists(report->kept_aside));
  EXPECT_EQ(report->adopted, 1);
  EXPECT_EQ(m.Snapshot(), before);
  // And the rebuilt state was saved.
  auto loaded = store_->Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->records, before);
}

TEST_F(SlotManagerTest, CheckpointLostSlotIsRecreated) {
  {
    auto m = Make();
    ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 2)).ok());
  }
  ASSERT_TRUE(backend_.Destroy(0).ok());  // e.g. the module was reloaded
  auto m = Make();
  EXPECT_EQ(m->Snapshot().size(), 1u);
  EXPECT_EQ(backend_.List()->size(), 1u);
}

TEST_F(SlotManagerTest, BackendFailureLeavesNothingBehind) {
  auto m = Make();
  backend_.FailNextCreate(UnavailableError("module says no"));
  auto g = m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 2));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("module says no"), std::string::npos);
  EXPECT_TRUE(m->Snapshot().empty());
  EXPECT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 2)).ok());
}

TEST_F(SlotManagerTest, PreferredKeepsBothResourcesOnOneGpu) {
  auto m = Make();
  // GPU 0 already has 14 of 16 memory units taken.
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 14)).ok());
  std::vector<std::string> avail_mem = Ids(ResourceKind::kMemory, 0, 14, 2);
  auto gpu1_mem = Ids(ResourceKind::kMemory, 1, 0, 16);
  avail_mem.insert(avail_mem.end(), gpu1_mem.begin(), gpu1_mem.end());
  auto picked = m->Preferred(ResourceKind::kMemory, avail_mem, {}, 4);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(*picked, Ids(ResourceKind::kMemory, 1, 0, 4));  // gpu0 has only 2 left
  // The core request of the same container follows to gpu1 although gpu0 has more cores free.
  std::vector<std::string> avail_core = Ids(ResourceKind::kCore, 0, 0, 100);
  auto gpu1_core = Ids(ResourceKind::kCore, 1, 0, 100);
  avail_core.insert(avail_core.end(), gpu1_core.begin(), gpu1_core.end());
  auto cores = m->Preferred(ResourceKind::kCore, avail_core, {}, 10);
  ASSERT_TRUE(cores.ok());
  EXPECT_EQ(*cores, Ids(ResourceKind::kCore, 1, 0, 10));
  // must_include pins the GPU.
  auto pinned = m->Preferred(ResourceKind::kMemory, avail_mem, {"vcuda-memory-gpu0-14"}, 2);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(*pinned, Ids(ResourceKind::kMemory, 0, 14, 2));
}

TEST_F(SlotManagerTest, WholeGpuAndSharedExcludeEachOther) {
  auto m = Make();
  uint64_t gen = m->Generation();
  ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 2)).ok());
  EXPECT_NE(m->Generation(), gen);  // ListAndWatch must re-send: vcuda-gpu0 went unhealthy
  auto whole = m->Devices(ResourceKind::kWholeGpu);
  EXPECT_FALSE(whole[0].healthy);
  EXPECT_TRUE(whole[1].healthy);
  auto refused = m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu0"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("shared by slot"), std::string::npos);
  ASSERT_TRUE(m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu1"}).ok());
  for (const auto& d : m->Devices(ResourceKind::kMemory)) {
    EXPECT_EQ(d.healthy, d.id.find("gpu1") == std::string::npos) << d.id;
  }
  auto frac = m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 1, 0, 1));
  ASSERT_FALSE(frac.ok());
  EXPECT_NE(frac.status().message().find("held whole"), std::string::npos);
}

TEST_F(SlotManagerTest, HealthChangesWakeWatchers) {
  auto m = Make();
  uint64_t gen = m->Generation();
  m->SetGpuHealth(1, false);
  EXPECT_NE(m->WaitForChange(gen, std::chrono::milliseconds(1)), gen);
  for (const auto& d : m->Devices(ResourceKind::kCore)) {
    EXPECT_EQ(d.healthy, d.id.find("gpu1") == std::string::npos) << d.id;
  }
  gen = m->Generation();
  m->SetGpuHealth(1, false);  // no change, no wake-up
  EXPECT_EQ(m->Generation(), gen);
}

TEST_F(SlotManagerTest, ControlApiCreatesListsDeletesInStandaloneOnly) {
  auto m = Make();
  std::string denied =
      HandleControlRequest(*m, false, R"({"op":"create","mem_quota":1,"compute_share":5})");
  EXPECT_NE(denied.find("only in --standalone"), std::string::npos) << denied;
  std::string created = HandleControlRequest(
      *m, true,
      R"({"op":"create","mem_quota":1073741824,"compute_share":25,"compute_mode":"weight",)"
      R"("gpu":1,"label":"dbg"})");
  EXPECT_NE(created.find(R"("ok":true)"), std::string::npos) << created;
  auto snap = m->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].config.gpu, 1u);
  EXPECT_EQ(snap[0].config.compute_share, 25u);
  EXPECT_EQ(snap[0].config.compute_mode, ComputeMode::kWeight);
  EXPECT_EQ(backend_.List()->at(0).compute_mode, ComputeMode::kWeight) << "enforced, not recorded";
  EXPECT_EQ(snap[0].memory_ids.size(), 4u);
  EXPECT_TRUE(snap[0].manual);
  // Manual slots are never reclaimed as orphans.
  now_ += std::chrono::hours(1);
  EXPECT_EQ(*m->ReclaimOrphans(), 0);
  std::string listed = HandleControlRequest(*m, false, R"({"op":"list"})");
  EXPECT_NE(listed.find(R"("pod_name":"dbg")"), std::string::npos) << listed;
  for (const char* bad :
       {"not json", R"({"op":"explode"})", R"({"op":"delete"})",
        R"({"op":"create","mem_quota":1,"compute_share":0})",
        R"({"op":"create","mem_quota":1,"compute_share":5,"compute_mode":"fair"})",
        R"({"op":"create","memory_bytes":1,"core_percent":5})",
        R"({"op":"create","mem_quota":1,"compute_share":5,"gpu":9})"}) {
    std::string reply = HandleControlRequest(*m, true, bad);
    EXPECT_NE(reply.find(R"("ok":false)"), std::string::npos) << bad << " -> " << reply;
  }
  std::string del = HandleControlRequest(
      *m, true, R"({"op":"delete","id":)" + std::to_string(snap[0].config.id) + "}");
  EXPECT_NE(del.find(R"("ok":true)"), std::string::npos) << del;
  EXPECT_TRUE(m->Snapshot().empty());
}

// The exporter's per-slot usage comes from the backend: what the backend reports is what a
// scrape shows, and one slot's failing read leaves that slot at zero without failing the rest.
TEST_F(SlotManagerTest, StatsCarryTheBackendsUsage) {
  auto m = Make();
  auto a = m->CreateManual(0, 1ull << 30, 25, ComputeMode::kCap, "a");
  auto b = m->CreateManual(1, 1ull << 30, 25, ComputeMode::kCap, "b");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  backend_.SetUsage(a->config.id, {123456789, 234567890, 7, 0, 2500000000, 750000000, 250});
  backend_.SetUsage(b->config.id, {5, 6, 1, 0});
  backend_.FailUsage(b->config.id, InternalError("counters unreadable"));
  std::atomic<uint64_t> registrations{0};
  SlotManagerStatsSource source(*m, registrations);
  auto snap = source.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ASSERT_EQ(snap->slots.size(), 2u);
  for (const auto& s : snap->slots) {
    if (s.slot == std::to_string(a->config.id)) {
      EXPECT_EQ(s.memory_charged_bytes, 123456789u);
      EXPECT_EQ(s.memory_peak_bytes, 234567890u);
      EXPECT_EQ(s.memory_denials, 7u);
      EXPECT_DOUBLE_EQ(s.busy_seconds, 2.5);
      EXPECT_DOUBLE_EQ(s.throttled_seconds, 0.75);
      EXPECT_DOUBLE_EQ(s.core_achieved_ratio, 0.25);
    } else {
      EXPECT_EQ(s.memory_charged_bytes, 0u);
      EXPECT_EQ(s.memory_denials, 0u);
    }
  }
  std::string text = metrics::RenderNodeMetrics("node-1", *snap, {});
  const std::string slot_a = "slot=\"" + std::to_string(a->config.id) + "\"";
  bool charged_seen = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("vgpu_slot_memory_charged_bytes{", 0) == 0 &&
        line.find(slot_a) != std::string::npos) {
      charged_seen = true;
      EXPECT_EQ(line.substr(line.rfind(' ') + 1), "123456789") << line;
    }
  }
  EXPECT_TRUE(charged_seen) << text;

  backend_.FailUsage(b->config.id, OkStatus());  // recovered: its real usage shows again
  snap = source.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  for (const auto& s : snap->slots) {
    if (s.slot == std::to_string(b->config.id)) {
      EXPECT_EQ(s.memory_charged_bytes, 5u);
    }
  }
}

}  // namespace
}  // namespace vgpu::manager

namespace vgpu::manager {
namespace {

// Each change reaches the checkpoint as journal entries for the changed slots only (no rewrite
// of the others), and a restart replays them to the same state.
TEST_F(SlotManagerTest, ChangesAreJournaledPerSlotAndReplayed) {
  std::vector<slots::SlotRecord> before;
  {
    auto m = Make();
    for (uint32_t i = 0; i < 6; ++i) {
      ASSERT_TRUE(m->Allocate(ResourceKind::kMemory, Ids(ResourceKind::kMemory, i % 2, i, 1)).ok());
    }
    pods_.Add("pod-a", "main", Ids(ResourceKind::kMemory, 0, 0, 1),
              Ids(ResourceKind::kCore, 0, 0, 25));
    ASSERT_TRUE(m->PreStart(ResourceKind::kMemory, Ids(ResourceKind::kMemory, 0, 0, 1)).ok());
    ASSERT_TRUE(m->FlushCheckpoint(std::chrono::seconds(10)));
    std::ifstream in(store_->path());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    // The start-up snapshot, 6 creations, 1 link: 8 lines, each slot written once per change.
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8) << text;
    auto w = m->CheckpointCounters();
    EXPECT_EQ(w.entries, 7u);
    EXPECT_EQ(w.failures, 0u);
    before = m->Snapshot();
  }
  auto m = Make();  // same backend and checkpoint: a restart
  EXPECT_EQ(m->Snapshot(), before);
  EXPECT_EQ(m->Snapshot()[0].config.compute_share, 25u);
}

}  // namespace
}  // namespace vgpu::manager

namespace vgpu::manager {
namespace {

// A multi-GPU whole-GPU container: one exclusive slot per GPU, the container sees them as
// /dev/nvidia0..N-1 (kmod-style edits map each slot's node to /dev/nvidia0), PreStart links
// every one, and a failed creation leaves nothing behind.
TEST_F(SlotManagerTest, WholeGpuRequestSpansSeveralGpus) {
  auto m = Make();
  backend_.FailNextCreate(InternalError("module said no"));
  auto failed = m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu0", "vcuda-gpu1"});
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(m->Snapshot().empty());

  auto g = m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu1", "vcuda-gpu0"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto slots = m->Snapshot();
  ASSERT_EQ(slots.size(), 2u);
  std::map<std::string, std::string> paths;  // container path -> host path
  for (const auto& d : g->edits.devices) {
    paths[d.container_path] = d.host_path;
  }
  EXPECT_EQ(paths["/dev/nvidia0"], "/dev/fake-vgpu" + std::to_string(slots[0].config.id));
  EXPECT_EQ(paths["/dev/nvidia1"], "/dev/fake-vgpu" + std::to_string(slots[1].config.id));
  EXPECT_EQ(g->edits.envs.at("VGPU_SLOT_ID"),
            std::to_string(slots[0].config.id) + "," + std::to_string(slots[1].config.id));
  for (const auto& s : slots) {
    EXPECT_TRUE(s.config.exclusive);
    EXPECT_EQ(s.gpu_ids, (std::vector<std::string>{"vcuda-gpu0", "vcuda-gpu1"}));
  }
  // Neither GPU serves shared IDs now.
  for (const auto& d : m->Devices(ResourceKind::kMemory)) {
    EXPECT_FALSE(d.healthy) << d.id;
  }
  podresources::ContainerAssignment a{"default", "train", "main", {}};
  a.device_ids[kGpu] = {"vcuda-gpu0", "vcuda-gpu1"};
  pods_.containers.push_back(a);
  ASSERT_TRUE(m->PreStart(ResourceKind::kWholeGpu, {"vcuda-gpu0", "vcuda-gpu1"}).ok());
  for (const auto& s : m->Snapshot()) {
    EXPECT_EQ(s.pod_name, "train");
  }
  // The same request again (a kubelet retry) reuses both slots.
  int creates = backend_.creates();
  ASSERT_TRUE(m->Allocate(ResourceKind::kWholeGpu, {"vcuda-gpu0", "vcuda-gpu1"}).ok());
  EXPECT_EQ(backend_.creates(), creates);
}

}  // namespace
}  // namespace vgpu::manager

// vgpu-manager against a fake kubelet on real unix sockets.
// Every test gets its own directory; the manager runs as a real process so it can be killed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "manager_fixture.h"
#include "vgpu/checkpoint/checkpoint.h"

namespace vgpu::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class ManagerScenario : public ManagerFixture {
 protected:
  ManagerScenario() : ManagerFixture("/tmp/vgpu-it-XXXXXX") {}

  // Waits until the manager's checkpoint (written asynchronously) lists `n` slots.
  bool WaitCheckpointSlots(size_t n) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(manager_->CheckpointFile());
      std::string text((std::istreambuf_iterator<char>(in)), {});
      auto records = checkpoint::Deserialize(text);  // snapshot + journal, replayed
      if (records.ok() && records->size() == n) {
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // Slot files on disk: what libvgpu-shim.so would read, by slot id.
  std::map<std::string, std::string> SlotFiles() {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(manager_->SlotRoot(), ec)) {
      std::ifstream in(e.path() / "config");
      out[e.path().filename().string()].assign(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  }
};

std::string Env(const v1beta1::ContainerAllocateResponse& r, const std::string& key) {
  auto it = r.envs().find(key);
  return it == r.envs().end() ? "" : it->second;
}

TEST_F(ManagerScenario, RegistersAllResourcesWithCorrectCapacity) {
  StartBoth();
  EXPECT_EQ(kubelet_->Devices(kCore).size(), 200u);  // 100 per GPU
  EXPECT_EQ(kubelet_->Devices(kMem).size(), 128u);   // 16 GiB / 256 MiB per GPU
  EXPECT_EQ(kubelet_->Devices(kGpu).size(), 2u);
  for (const auto& d : kubelet_->Devices(kMem)) {
    EXPECT_EQ(d.health(), "Healthy");
    EXPECT_LE(d.id().size(), 63u);
  }
}

TEST_F(ManagerScenario, TwoPodsTwoContainersGetDisjointCorrectSlots) {
  StartBoth();
  struct Want {
    std::string pod, ctr;
    int cores, mem_units;
  } wants[] = {{"pod-a", "app", 30, 8},
               {"pod-a", "sidecar", 10, 2},
               {"pod-b", "app", 50, 16},
               {"pod-b", "sidecar", 20, 4}};
  std::map<std::string, Admission> got;
  bool mem_first = true;
  for (const auto& w : wants) {
    // The kubelet iterates a Go map: either resource may come first (§2.5).
    std::vector<std::pair<std::string, int>> order = {{kMem, w.mem_units}, {kCore, w.cores}};
    if (!mem_first) {
      std::swap(order[0], order[1]);
    }
    mem_first = !mem_first;
    Admission a = kubelet_->Admit(w.pod, w.ctr, order);
    ASSERT_TRUE(a.ok) << w.pod << "/" << w.ctr << ": " << a.error;
    got[w.pod + "/" + w.ctr] = a;
  }
  json slots = manager_->Slots();
  ASSERT_EQ(slots.size(), 4u) << slots.dump();
  std::set<std::string> all_mem;
  std::set<uint32_t> slot_ids;
  for (const auto& w : wants) {
    const Admission& a = got[w.pod + "/" + w.ctr];
    const auto& resp = a.responses.at(kMem);
    std::string slot_id = Env(resp, "VGPU_SLOT_ID");
    ASSERT_FALSE(slot_id.empty());
    EXPECT_TRUE(slot_ids.insert(std::stoul(slot_id)).second) << "slot shared";
    json slot;
    for (const auto& s : slots) {
      if (std::to_string(s["id"].get<uint32_t>()) == slot_id) {
        slot = s;
      }
    }
    ASSERT_FALSE(slot.is_null()) << slot_id;
    EXPECT_EQ(slot["pod_name"], w.pod);
    EXPECT_EQ(slot["container"], w.ctr);
    EXPECT_EQ(slot["compute_share"], w.cores);
    EXPECT_EQ(slot["mem_quota"], uint64_t(w.mem_units) * (256ull << 20));
    EXPECT_EQ(slot["memory_ids"].size(), size_t(w.mem_units));
    EXPECT_TRUE(slot["linked"].get<bool>());
    // Core IDs landed on the memory's GPU (GetPreferredAllocation pairing).
    std::string gpu = "gpu" + std::to_string(slot["gpu"].get<uint32_t>()) + "-";
    for (const auto& id : a.ids.at(kCore)) {
      EXPECT_NE(id.find(gpu), std::string::npos) << id;
    }
    for (const auto& id : a.ids.at(kMem)) {
      EXPECT_TRUE(all_mem.insert(id).second) << id << " in two slots";
    }
    // What the container gets: the shim's config dir and the real nodes.
    EXPECT_EQ(Env(resp, "VGPU_CONFIG"), "/etc/vgpu/config");
    bool has_dev = false;
    for (const auto& d : resp.devices()) {
      has_dev |= d.container_path() == "/dev/nvidia" + std::to_string(slot["gpu"].get<uint32_t>());
    }
    EXPECT_TRUE(has_dev);
    ASSERT_GE(resp.mounts_size(), 1);
    EXPECT_EQ(resp.mounts(0).container_path(), "/etc/vgpu");
    EXPECT_EQ(resp.mounts(0).host_path(), manager_->SlotRoot() + "/" + slot_id);
    // The slot config the shim reads carries the linked share.
    std::ifstream in(manager_->SlotRoot() + "/" + slot_id + "/config");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find("compute_share=" + std::to_string(w.cores) + "\n"), std::string::npos)
        << text;
  }
}

TEST_F(ManagerScenario, KubeletRestartReRegistersWithinOneSecond) {
  StartBoth();
  ASSERT_TRUE(kubelet_->Admit("pod-a", "app", {{kMem, 4}, {kCore, 20}}).ok);
  SteadyTime restarted = kubelet_->Restart();
  for (const char* r : {kCore, kMem, kGpu}) {
    SteadyTime when;
    ASSERT_TRUE(kubelet_->WaitForRegistration(r, restarted, 5s, &when)) << r;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when - restarted).count();
    EXPECT_LE(ms, 1000) << r << " re-registered after " << ms << " ms";
    ASSERT_TRUE(kubelet_->WaitForDevices(r, 5s));
  }
  // Running containers are untouched and new ones are admitted.
  EXPECT_EQ(manager_->Slots().size(), 1u);
  Admission b = kubelet_->Admit("pod-b", "app", {{kMem, 4}, {kCore, 20}});
  EXPECT_TRUE(b.ok) << b.error;
  EXPECT_EQ(manager_->Slots().size(), 2u);
}

TEST_F(ManagerScenario, PlainRestartKeepsStateIdentical) {
  StartBoth();
  ASSERT_TRUE(kubelet_->Admit("pod-a", "app", {{kMem, 4}, {kCore, 20}}).ok);
  ASSERT_TRUE(kubelet_->Admit("pod-b", "app", {{kCore, 40}, {kMem, 8}}).ok);
  json before = manager_->Slots();
  auto files_before = SlotFiles();
  manager_->Kill(SIGKILL);
  auto since = std::chrono::steady_clock::now();
  ASSERT_TRUE(manager_->Start());
  ASSERT_TRUE(kubelet_->WaitForRegistration(kMem, since, 10s));
  EXPECT_EQ(manager_->Slots(), before);
  EXPECT_EQ(SlotFiles(), files_before);  // nothing a running container reads changed
}

// SIGKILL at each step of Allocate, restart, kubelet retries: no slot lost or duplicated.
class CrashPointScenario : public ManagerScenario,
                           public ::testing::WithParamInterface<const char*> {};

TEST_P(CrashPointScenario, KilledMidAllocationRecoversExactly) {
  StartBoth({}, {std::string("VGPU_MANAGER_CRASH_AT=") + GetParam()});
  std::vector<std::string> mem = {"vcuda-memory-gpu0-0", "vcuda-memory-gpu0-1",
                                  "vcuda-memory-gpu0-2"};
  v1beta1::AllocateResponse resp;
  grpc::Status s = kubelet_->Allocate(kMem, mem, &resp);
  EXPECT_FALSE(s.ok()) << "the manager should have died at " << GetParam();
  int status = 0;
  ASSERT_TRUE(manager_->WaitExit(5000, &status));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_EQ(SlotFiles().size(), 1u);  // the slot existed when it died

  auto since = std::chrono::steady_clock::now();
  ASSERT_TRUE(manager_->Start());
  ASSERT_TRUE(kubelet_->WaitForRegistration(kMem, since, 10s));
  ASSERT_TRUE(kubelet_->WaitForDevices(kMem, 10s));
  // The kubelet retries admission with the same IDs.
  v1beta1::AllocateResponse again;
  ASSERT_TRUE(kubelet_->Allocate(kMem, mem, &again).ok());
  std::vector<std::string> core = {"vcuda-core-gpu0-0", "vcuda-core-gpu0-1"};
  ASSERT_TRUE(kubelet_->Allocate(kCore, core, &again).ok());
  kubelet_->Assign("pod-a", "app", kMem, mem);
  kubelet_->Assign("pod-a", "app", kCore, core);
  ASSERT_TRUE(kubelet_->PreStart(kMem, mem).ok());
  json slots = manager_->Slots();
  ASSERT_EQ(slots.size(), 1u) << slots.dump();
  EXPECT_EQ(slots[0]["memory_ids"], json(mem));
  EXPECT_EQ(slots[0]["compute_share"], 2);
  EXPECT_EQ(slots[0]["pod_name"], "pod-a");
  EXPECT_EQ(SlotFiles().size(), 1u);  // not duplicated
  // And a further restart changes nothing.
  json before = manager_->Slots();
  manager_->Kill(SIGKILL);
  ASSERT_TRUE(manager_->Start());
  EXPECT_EQ(manager_->Slots(), before);
}

INSTANTIATE_TEST_SUITE_P(AllocateSteps, CrashPointScenario,
                         ::testing::Values("after-slot-create", "after-checkpoint"));

TEST_F(ManagerScenario, CorruptCheckpointIsRebuiltFromPodResources) {
  StartBoth();
  ASSERT_TRUE(kubelet_->Admit("pod-a", "app", {{kMem, 4}, {kCore, 20}}).ok);
  ASSERT_TRUE(kubelet_->Admit("pod-b", "app", {{kMem, 6}, {kCore, 35}}).ok);
  json before = manager_->Slots();
  manager_->Kill(SIGKILL);
  {
    std::fstream f(manager_->CheckpointFile(), std::ios::in | std::ios::out);
    f.seekp(40);
    f << "XXXX";  // flip bytes in the middle
  }
  ASSERT_TRUE(manager_->Start());
  EXPECT_EQ(manager_->Slots(), before);
  bool kept = false;
  for (const auto& e : fs::directory_iterator(dir_ + "/cp")) {
    kept |= e.path().filename().string().starts_with("vgpu-manager.checkpoint.corrupt-");
  }
  EXPECT_TRUE(kept) << "the corrupt checkpoint must be kept aside";
  std::ifstream log(manager_->LogFile());
  std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("event=checkpoint_corrupt"), std::string::npos);
}

TEST_F(ManagerScenario, FiftyConcurrentAllocatesAreConsistent) {
  StartBoth();
  // 40 distinct containers plus 10 repeats of earlier ID sets (kubelet retries), all at once.
  std::vector<std::vector<std::string>> sets;
  for (int i = 0; i < 40; ++i) {
    int gpu = i % 2, first = (i / 2) * 3;
    std::vector<std::string> ids;
    for (int u = first; u < first + 3; ++u) {
      ids.push_back("vcuda-memory-gpu" + std::to_string(gpu) + "-" + std::to_string(u));
    }
    sets.push_back(ids);
  }
  for (int i = 0; i < 10; ++i) {
    sets.push_back(sets[i * 3]);
  }
  std::vector<std::string> slot_of(sets.size());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < sets.size(); ++i) {
    threads.emplace_back([&, i] {
      v1beta1::AllocateResponse resp;
      grpc::Status s = kubelet_->Allocate(kMem, sets[i], &resp);
      if (!s.ok() || resp.container_responses_size() != 1) {
        ++failures;
        return;
      }
      slot_of[i] = Env(resp.container_responses(0), "VGPU_SLOT_ID");
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
  json slots = manager_->Slots();
  ASSERT_EQ(slots.size(), 40u);
  std::set<std::string> distinct(slot_of.begin(), slot_of.begin() + 40);
  EXPECT_EQ(distinct.size(), 40u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(slot_of[40 + i], slot_of[i * 3]) << "a repeat got another slot";
  }
  EXPECT_EQ(SlotFiles().size(), 40u);
  // The checkpoint agrees: a restart shows the same 40.
  ASSERT_TRUE(WaitCheckpointSlots(40));
  manager_->Kill(SIGKILL);
  ASSERT_TRUE(manager_->Start());
  EXPECT_EQ(manager_->Slots(), slots);
}

TEST_F(ManagerScenario, InvalidRequestsGetClearErrors) {
  StartBoth();
  v1beta1::AllocateResponse resp;
  struct Case {
    std::string resource;
    std::vector<std::string> ids;
    std::string says;
  } cases[] = {
      {kMem, {"vcuda-memory-gpu0-1", "vcuda-memory-gpu1-1"}, "span GPUs"},
      {kMem, {"vcuda-memory-gpu0-999"}, "does not exist: gpu0 has 64"},
      {kMem, {"nvidia.com/gpu-0"}, "is not a vcuda-memory ID"},
      {kCore, {"vcuda-core-gpu0-1", "vcuda-core-gpu1-1"}, "span GPUs"},
      {kGpu, {"vcuda-gpu0", "vcuda-gpu0"}, "appears twice"},
      {kGpu, {"vcuda-gpu0", "vcuda-gpu9"}, "gpu9 does not exist"},
  };
  for (const auto& tc : cases) {
    grpc::Status s = kubelet_->Allocate(tc.resource, tc.ids, &resp);
    ASSERT_FALSE(s.ok()) << tc.says;
    EXPECT_NE(s.error_message().find(tc.says), std::string::npos) << s.error_message();
    EXPECT_NE(s.error_message().find(tc.resource), std::string::npos) << s.error_message();
  }
  // Core without memory: admitted (the kubelet allocates each resource alone) but refused at
  // container start, with the reason.
  Admission a = kubelet_->Admit("pod-c", "app", {{kCore, 20}});
  ASSERT_FALSE(a.ok);
  EXPECT_NE(a.error.find("but no tencent.com/vcuda-memory"), std::string::npos) << a.error;
  // More memory than any GPU has (two GPUs' worth): the kubelet must spread the IDs, refused.
  Admission big = kubelet_->Admit("pod-d", "app", {{kMem, 100}});
  ASSERT_FALSE(big.ok);
  EXPECT_NE(big.error.find("span GPUs"), std::string::npos) << big.error;
  EXPECT_TRUE(manager_->Slots().empty());
}

TEST_F(ManagerScenario, OrphanedSlotIsReclaimedAfterTheCheckPeriod) {
  StartBoth({"--allocation-check-period=1"});
  ASSERT_TRUE(kubelet_->Admit("keep", "app", {{kMem, 2}, {kCore, 10}}).ok);
  ASSERT_TRUE(kubelet_->Admit("gone", "app", {{kMem, 2}, {kCore, 10}}).ok);
  ASSERT_EQ(manager_->Slots().size(), 2u);
  kubelet_->RemovePod("gone");
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (manager_->Slots().size() != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  json slots = manager_->Slots();
  ASSERT_EQ(slots.size(), 1u);
  EXPECT_EQ(slots[0]["pod_name"], "keep");
  EXPECT_EQ(SlotFiles().size(), 1u);
}

TEST_F(ManagerScenario, SigtermStopsCleanlyAndLeavesSlots) {
  StartBoth();
  ASSERT_TRUE(kubelet_->Admit("pod-a", "app", {{kMem, 2}, {kCore, 10}}).ok);
  int status = manager_->Kill(SIGTERM);
  // Exit 0 (under ASan this also means no leak report at exit).
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (const char* sock :
       {"vgpu-vcuda-core.sock", "vgpu-vcuda-memory.sock", "vgpu-vcuda-gpu.sock"}) {
    EXPECT_FALSE(fs::exists(dir_ + "/" + sock)) << sock;
  }
  EXPECT_EQ(SlotFiles().size(), 1u);  // stopping the manager never touches a running container
}

TEST_F(ManagerScenario, StandaloneControlApiCreatesSlotsByHand) {
  ASSERT_TRUE(manager_->Start({"--standalone"}));
  json created = manager_->Control(
      {{"op", "create"}, {"mem_quota", 1ull << 30}, {"compute_share", 25}, {"label", "debug"}});
  ASSERT_TRUE(created["ok"].get<bool>()) << created.dump();
  EXPECT_EQ(created["slot"]["mem_quota"], 1ull << 30);
  EXPECT_EQ(SlotFiles().size(), 1u);
  json refused = manager_->Control({{"op", "create"}, {"mem_quota", 1}, {"compute_share", 101}});
  EXPECT_FALSE(refused["ok"].get<bool>());
  EXPECT_NE(refused["error"].get<std::string>().find("compute_share"), std::string::npos);
  json del = manager_->Control({{"op", "delete"}, {"id", created["slot"]["id"]}});
  EXPECT_TRUE(del["ok"].get<bool>()) << del.dump();
  EXPECT_TRUE(manager_->Slots().empty());
  EXPECT_TRUE(SlotFiles().empty());
}

}  // namespace
}  // namespace vgpu::testing

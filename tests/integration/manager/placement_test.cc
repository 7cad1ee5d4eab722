// Placement through the real manager on a recorded 8-GPU machine with NVLink islands and two
// NUMA nodes (data/eight-gpu-islands.json): GPUs 0-3 on NUMA 0, NV12 between 0-1 and 2-3, NV4
// across those pairs; GPUs 4-7 on NUMA 1, NV6 between 4 and 5, 6 and 7 PCIe only.
//
// Each expectation here fails with the old placer, which dropped PCI paths and NVLinks (every
// pair PHB) and placed one GPU only: a topology-policy slot went to gpu0, and a two-GPU request
// got the lowest indexes from the kubelet's fill-up, then was refused by Allocate.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "manager_fixture.h"

namespace vgpu::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class PlacementScenario : public ManagerFixture {
 protected:
  PlacementScenario() : ManagerFixture("/tmp/vgpu-place-XXXXXX") {
    manager_->set_fixture(VGPU_TEST_DATA "/eight-gpu-islands.json");
  }

  void Start(const std::string& policy) { StartBoth({"--placement=" + policy}); }

  // The GPUs a whole-GPU admission got, from its IDs ("vcuda-gpu<N>").
  static std::set<int> WholeGpus(const Admission& a) {
    std::set<int> out;
    for (const auto& id : a.ids.at(kGpu)) {
      out.insert(std::stoi(id.substr(std::string("vcuda-gpu").size())));
    }
    return out;
  }

  // Waits until ListAndWatch shows the whole-GPU IDs of `gpus` unhealthy (a shared slot holds
  // the GPU; IDs the kubelet assigned it tracks itself).
  bool WaitWholeUnavailable(const std::set<int>& gpus) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      int held = 0;
      for (const auto& d : kubelet_->Devices(kGpu)) {
        int g = std::stoi(d.id().substr(std::string("vcuda-gpu").size()));
        held += gpus.count(g) != 0 && d.health() != "Healthy";
      }
      if (held == static_cast<int>(gpus.size())) {
        return true;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
};

TEST_F(PlacementScenario, TopologyPolicyOpensTheLeastConnectedGpu) {
  Start("topology");
  // With every GPU free, the topology evaluator keeps the NVLink islands intact: the first
  // shared slot goes to a PCIe-only GPU (6; 7 ties and loses on index). All-PHB gave gpu0.
  Admission a = kubelet_->Admit("pod-a", "app", {{kMem, 4}, {kCore, 20}});
  ASSERT_TRUE(a.ok) << a.error;
  for (const auto& id : a.ids.at(kMem)) {
    EXPECT_TRUE(id.starts_with("vcuda-memory-gpu6-")) << id;
  }
  for (const auto& id : a.ids.at(kCore)) {
    EXPECT_TRUE(id.starts_with("vcuda-core-gpu6-")) << id;
  }
}

TEST_F(PlacementScenario, MultiGpuRequestsGetTheBestLinkedFreeSets) {
  Start("binpack");
  // A shared slot takes gpu0 (binpack, all empty: lowest index), so its whole-GPU ID goes away.
  Admission shared = kubelet_->Admit("pod-s", "app", {{kMem, 4}, {kCore, 10}});
  ASSERT_TRUE(shared.ok) << shared.error;
  ASSERT_TRUE(shared.ids.at(kMem).front().starts_with("vcuda-memory-gpu0-"));
  ASSERT_TRUE(WaitWholeUnavailable({0}));

  // Two GPUs: the only free NV12 pair is 2-3 (0-1 lost gpu0). All-PHB would take 1 and 2.
  Admission nv12 = kubelet_->Admit("pod-a", "train", {{kGpu, 2}});
  ASSERT_TRUE(nv12.ok) << nv12.error;
  EXPECT_EQ(WholeGpus(nv12), (std::set<int>{2, 3}));
  // The container sees both GPUs, as /dev/nvidia2 and /dev/nvidia3 (shim backend: real nodes).
  std::set<std::string> paths;
  for (const auto& d : nv12.responses.at(kGpu).devices()) {
    paths.insert(d.container_path());
  }
  EXPECT_TRUE(paths.count("/dev/nvidia2") && paths.count("/dev/nvidia3") &&
              paths.count("/dev/nvidiactl"))
      << nv12.responses.at(kGpu).DebugString();

  // Next: free are 1, 4, 5, 6, 7; the NV6 pair 4-5 beats every PCIe pair.
  Admission nv6 = kubelet_->Admit("pod-b", "train", {{kGpu, 2}});
  ASSERT_TRUE(nv6.ok) << nv6.error;
  EXPECT_EQ(WholeGpus(nv6), (std::set<int>{4, 5}));

  // Left: 1 (NUMA 0), 6 and 7 (NUMA 1), no NVLink among them: 6-7 share a NUMA node (NODE),
  // 1 with either crosses the socket interconnect (SYS).
  Admission numa = kubelet_->Admit("pod-c", "train", {{kGpu, 2}});
  ASSERT_TRUE(numa.ok) << numa.error;
  EXPECT_EQ(WholeGpus(numa), (std::set<int>{6, 7}));

  // Each GPU is its own exclusive slot, linked to its container at PreStart.
  auto slots = manager_->Slots();
  int exclusive = 0;
  for (const auto& s : slots) {
    if (s.value("exclusive", false)) {
      ++exclusive;
      EXPECT_TRUE(s.value("linked", false)) << s.dump();
      EXPECT_EQ(s.value("gpu_ids", json::array()).size(), 2u) << s.dump();
    }
  }
  EXPECT_EQ(exclusive, 6) << slots.dump();

  // A restart keeps all of it (one container, several slots, reattached and relinked).
  manager_->Kill(SIGKILL);
  ASSERT_TRUE(manager_->Start({"--placement=binpack"}));
  EXPECT_EQ(manager_->Slots(), slots);
}

}  // namespace
}  // namespace vgpu::testing

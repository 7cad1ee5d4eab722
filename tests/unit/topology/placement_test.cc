// Evaluators on the committed machine shapes. The multi-GPU acceptance check compares every
// link-aware evaluator with a naive exhaustive search over all subsets (bitmasks), under many
// random loads: the evaluators' pruned clique search must reach the same link optimum.
#include "vgpu/topology/placement.h"

#include <random>

#include <gtest/gtest.h>

#include "brute_force_oracle.h"

namespace vgpu::topology {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

std::string FixturePath(const std::string& name) {
  return std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name;
}

Topology MustLoad(const std::string& name) {
  Result<Topology> topology = LoadFixture(FixturePath(name));
  EXPECT_TRUE(topology.ok()) << topology.status().ToString();
  return std::move(topology).value();
}

std::unique_ptr<Evaluator> MustMake(std::string_view name) {
  Result<std::unique_ptr<Evaluator>> evaluator = MakeEvaluator(name);
  EXPECT_TRUE(evaluator.ok()) << evaluator.status().ToString();
  return std::move(evaluator).value();
}

// Random loads: free, partly used (cores and memory), exclusive or unhealthy GPUs.
std::vector<GpuLoad> RandomLoads(const Topology& topology, std::mt19937& rng) {
  std::vector<GpuLoad> loads(topology.size());
  for (int i = 0; i < topology.size(); ++i) {
    switch (rng() % 6) {
      case 0:
      case 1:
      case 2:
        break;  // free
      case 3:
        loads[i].cores_used = 10 + static_cast<int>(rng() % 81);
        loads[i].memory_used = (rng() % 40) * kGiB;
        break;
      case 4:
        loads[i].exclusive = true;
        loads[i].cores_used = 100;
        loads[i].memory_used = topology.gpu(i).memory_bytes;
        break;
      case 5:
        loads[i].healthy = false;
        break;
    }
  }
  return loads;
}

const char* const kFixtures[] = {"dgx-h100-8gpu-nvswitch.json",
                                 "pcie-8gpu-2socket-nvlink-pairs.json", "pcie-4gpu-2socket.json",
                                 "single-gpu.json"};

TEST(PlacementOptimalityTest, MultiGpuSetsMatchExhaustiveSearchOnLinkLevel) {
  int compared = 0;
  int placed_below_best_free_level = 0;  // sanity: loads do force worse sets sometimes
  int firstfit_below_optimum = 0;
  for (const char* name : kFixtures) {
    Topology topology = MustLoad(name);
    std::mt19937 rng(7);
    for (int round = 0; round < 60; ++round) {
      std::vector<GpuLoad> loads =
          round == 0 ? std::vector<GpuLoad>(topology.size()) : RandomLoads(topology, rng);
      for (int count = 2; count <= topology.size(); ++count) {
        for (bool whole : {true, false}) {
          PlacementRequest request{
              .gpu_count = count, .cores = 25, .memory_bytes = 8 * kGiB, .whole_gpu = whole};
          std::optional<SetLinkQuality> best = BruteForceBest(topology, loads, request);
          for (std::string_view evaluator_name : {"binpack", "spread", "topology", "memory"}) {
            SCOPED_TRACE(std::string(name) + " round " + std::to_string(round) + " count " +
                         std::to_string(count) + (whole ? " whole " : " shared ") +
                         std::string(evaluator_name));
            std::unique_ptr<Evaluator> evaluator = MustMake(evaluator_name);
            Result<Placement> placement = evaluator->Place(topology, loads, request);
            if (!best) {
              EXPECT_EQ(placement.status().code(), StatusCode::kResourceExhausted);
              continue;
            }
            ASSERT_TRUE(placement.ok()) << placement.status().ToString();
            ASSERT_EQ(placement->gpus.size(), static_cast<size_t>(count));
            for (size_t i = 0; i < placement->gpus.size(); ++i) {
              int gpu = placement->gpus[i];
              EXPECT_TRUE(Fits(topology.gpu(gpu), loads[gpu], request)) << "GPU " << gpu;
              if (i > 0) {
                EXPECT_LT(placement->gpus[i - 1], gpu);
              }
            }
            SetLinkQuality quality = LinkQuality(topology, placement->gpus);
            EXPECT_EQ(quality.worst_rank, best->worst_rank);
            EXPECT_EQ(quality.rank_sum, best->rank_sum);
            EXPECT_EQ(placement->worst_link_rank, best->worst_rank);
            ++compared;
          }
          // The oracle must be able to tell a link-blind choice apart.
          Result<Placement> first = MustMake("firstfit")->Place(topology, loads, request);
          if (best && first.ok() && LinkQuality(topology, first->gpus) < *best) {
            ++firstfit_below_optimum;
          }
          if (best && best->worst_rank < LinkRankOf(LinkLevel::kNvLink, 1)) {
            ++placed_below_best_free_level;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 3000);
  EXPECT_GT(placed_below_best_free_level, 100);
  EXPECT_GT(firstfit_below_optimum, 100);
}

TEST(PlacementOptimalityTest, WholePairTakesTheRemainingNvLinkPair) {
  Topology topology = MustLoad("pcie-8gpu-2socket-nvlink-pairs.json");
  std::vector<GpuLoad> loads(topology.size());
  loads[0].cores_used = 10;  // breaks pair 0-1
  loads[5].healthy = false;  // breaks pair 4-5
  PlacementRequest request{.gpu_count = 2, .whole_gpu = true};
  for (std::string_view name : {"binpack", "spread", "topology", "memory"}) {
    Result<Placement> placement = MustMake(name)->Place(topology, loads, request);
    ASSERT_TRUE(placement.ok()) << placement.status().ToString();
    EXPECT_EQ(placement->gpus, (std::vector<int>{2, 3})) << name;
    EXPECT_EQ(placement->worst_link, LinkLevel::kNvLink);
  }
  // The baseline takes the first two that fit, whatever joins them.
  Result<Placement> first = MustMake("firstfit")->Place(topology, loads, request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->gpus, (std::vector<int>{1, 2}));
  EXPECT_EQ(first->worst_link, LinkLevel::kPxb);
}

TEST(PlacementOptimalityTest, FourGpusStayOnOneSocketWhenTheyCan) {
  Topology topology = MustLoad("pcie-8gpu-2socket-nvlink-pairs.json");
  std::vector<GpuLoad> loads(topology.size());
  loads[1].exclusive = true;  // socket 0 is no longer whole
  Result<Placement> placement =
      MustMake("topology")->Place(topology, loads, {.gpu_count = 4, .whole_gpu = true});
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(placement->gpus, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(placement->worst_link, LinkLevel::kNode);
}

// Single-GPU choices: what distinguishes the evaluators.
TEST(EvaluatorPreferenceTest, EachPolicyPicksItsGpu) {
  Topology topology = MustLoad("pcie-4gpu-2socket.json");
  std::vector<GpuLoad> loads(4);
  loads[0].cores_used = 20;
  loads[0].memory_used = 2 * kGiB;
  loads[1].cores_used = 60;
  loads[1].memory_used = 1 * kGiB;
  loads[2].memory_used = 5 * kGiB;
  PlacementRequest request{.cores = 30, .memory_bytes = 4 * kGiB};
  auto pick = [&](std::string_view name) {
    Result<Placement> placement = MustMake(name)->Place(topology, loads, request);
    EXPECT_TRUE(placement.ok()) << placement.status().ToString();
    return placement.ok() ? placement->gpus.at(0) : -1;
  };
  EXPECT_EQ(pick("firstfit"), 0);
  EXPECT_EQ(pick("binpack"), 1);   // fullest that still fits
  EXPECT_EQ(pick("topology"), 1);  // a partly used GPU costs no free GPU
  EXPECT_EQ(pick("spread"), 3);    // emptiest (2 has memory in use)
  EXPECT_EQ(pick("memory"), 3);    // most free memory
  loads[1].cores_used = 80;        // 30 more no longer fits on GPU 1
  EXPECT_EQ(pick("binpack"), 0);
}

TEST(EvaluatorPreferenceTest, TopologyOpensTheLeastConnectedFreeGpu) {
  Topology topology = MustLoad("pcie-8gpu-2socket-nvlink-pairs.json");
  std::vector<GpuLoad> loads(topology.size());
  PlacementRequest request{.cores = 50};
  Result<Placement> topo = MustMake("topology")->Place(topology, loads, request);
  ASSERT_TRUE(topo.ok());
  // GPUs 6 and 7 have no NVLink bridge: using one keeps all three NV12 pairs whole.
  EXPECT_EQ(topo->gpus, (std::vector<int>{6}));
  Result<Placement> binpack = MustMake("binpack")->Place(topology, loads, request);
  ASSERT_TRUE(binpack.ok());
  EXPECT_EQ(binpack->gpus, (std::vector<int>{0}));
}

TEST(EvaluatorPreferenceTest, UnhealthyAndExclusiveGpusTakeNothing) {
  Topology topology = MustLoad("pcie-4gpu-2socket.json");
  std::vector<GpuLoad> loads(4);
  loads[0].healthy = false;
  loads[1].exclusive = true;
  loads[2].healthy = false;
  for (std::string_view name : EvaluatorNames()) {
    Result<Placement> placement = MustMake(name)->Place(topology, loads, {.cores = 1});
    ASSERT_TRUE(placement.ok()) << name;
    EXPECT_EQ(placement->gpus, (std::vector<int>{3})) << name;
    Result<Placement> two = MustMake(name)->Place(topology, loads, {.gpu_count = 2, .cores = 1});
    EXPECT_EQ(two.status().code(), StatusCode::kResourceExhausted) << name;
    EXPECT_NE(two.status().message().find("1 GPU(s) fit"), std::string::npos)
        << two.status().message();
  }
}

TEST(EvaluatorRequestTest, MalformedRequestsAreInvalid) {
  Topology topology = MustLoad("pcie-4gpu-2socket.json");
  std::vector<GpuLoad> loads(4);
  std::vector<GpuLoad> short_loads(3);
  std::unique_ptr<Evaluator> evaluator = MustMake("binpack");
  struct Case {
    PlacementRequest request;
    std::span<const GpuLoad> loads;
    const char* message_part;
  } cases[] = {
      {{.cores = 0}, loads, "cores 0"},         {{.cores = 101}, loads, "cores 101"},
      {{.gpu_count = 0}, loads, "gpu_count 0"}, {{.gpu_count = 5}, loads, "5 GPUs, the node has 4"},
      {{}, short_loads, "3 loads for 4 GPUs"},
  };
  for (const Case& c : cases) {
    Result<Placement> placement = evaluator->Place(topology, c.loads, c.request);
    ASSERT_FALSE(placement.ok()) << c.message_part;
    EXPECT_EQ(placement.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(placement.status().message().find(c.message_part), std::string::npos)
        << placement.status().message();
  }
  // Whole-GPU requests ignore cores.
  EXPECT_TRUE(evaluator->Place(topology, loads, {.cores = 0, .whole_gpu = true}).ok());
}

TEST(EvaluatorRequestTest, MemoryMustFitToo) {
  Topology topology = MustLoad("single-gpu.json");  // 23034 MiB
  std::vector<GpuLoad> loads(1);
  loads[0].memory_used = 20 * kGiB;
  std::unique_ptr<Evaluator> evaluator = MustMake("memory");
  EXPECT_TRUE(evaluator->Place(topology, loads, {.cores = 10, .memory_bytes = 2 * kGiB}).ok());
  EXPECT_EQ(
      evaluator->Place(topology, loads, {.cores = 10, .memory_bytes = 3 * kGiB}).status().code(),
      StatusCode::kResourceExhausted);
}

TEST(LoadBookkeepingTest, ApplyThenReleaseRestoresLoads) {
  Topology topology = MustLoad("pcie-4gpu-2socket.json");
  std::vector<GpuLoad> loads(4);
  PlacementRequest shared{.gpu_count = 2, .cores = 30, .memory_bytes = 5 * kGiB};
  PlacementRequest whole{.whole_gpu = true};
  std::vector<int> shared_gpus = {0, 1};
  std::vector<int> whole_gpus = {3};
  Apply(topology, loads, shared, shared_gpus);
  Apply(topology, loads, whole, whole_gpus);
  EXPECT_EQ(loads[0].cores_used, 30);
  EXPECT_EQ(loads[1].memory_used, 5 * kGiB);
  EXPECT_TRUE(loads[3].exclusive);
  EXPECT_FALSE(Fits(topology.gpu(3), loads[3], {.cores = 1}));
  Release(topology, loads, shared, shared_gpus);
  Release(topology, loads, whole, whole_gpus);
  for (const GpuLoad& load : loads) {
    EXPECT_EQ(load.cores_used, 0);
    EXPECT_EQ(load.memory_used, 0u);
    EXPECT_FALSE(load.exclusive);
  }
}

TEST(EvaluatorChoiceTest, EveryKnownNameBuildsAndUnknownIsNamed) {
  for (std::string_view name : EvaluatorNames()) {
    EXPECT_EQ(MustMake(name)->Name(), name);
  }
  Result<std::unique_ptr<Evaluator>> unknown = MakeEvaluator("roundrobin");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("\"roundrobin\""), std::string::npos);
  EXPECT_NE(unknown.status().message().find("binpack|spread|topology|memory|firstfit"),
            std::string::npos);
}

}  // namespace
}  // namespace vgpu::topology

// Evaluator behaviour on the committed machine-shape fixtures.
#include "vgpu/topology/placement.h"

#include <gtest/gtest.h>

namespace vgpu::topology {
namespace {

std::string FixturePath(const char* name) {
  return std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name;
}

TEST(PlacementTest, WholePairLandsOnNvLinkPair) {
  Result<Topology> topology = LoadFixture(FixturePath("pcie-8gpu-2socket-nvlink-pairs.json"));
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  std::vector<GpuLoad> loads(topology->size());
  loads[0].cores_used = 10;  // breaks pair 0-1
  auto evaluator = MakeEvaluator("binpack");
  ASSERT_TRUE(evaluator.ok());
  PlacementRequest request{.gpu_count = 2, .whole_gpu = true};
  Result<Placement> placement = (*evaluator)->Place(*topology, loads, request);
  ASSERT_TRUE(placement.ok()) << placement.status().ToString();
  EXPECT_EQ(placement->gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(placement->worst_link, LinkLevel::kNvLink);
}

TEST(PlacementTest, UnknownEvaluatorIsNamed) {
  auto evaluator = MakeEvaluator("roundrobin");
  ASSERT_FALSE(evaluator.ok());
  EXPECT_NE(evaluator.status().message().find("roundrobin"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::topology

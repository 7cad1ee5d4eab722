// The simulator's own checks and the acceptance on the standard stream: binpack rejects
// no more whole-GPU requests than firstfit, and link-aware multi-GPU placements are always at
// the optimum the free GPUs allowed.
#include "simulator.h"

#include <gtest/gtest.h>

namespace vgpu::topology::sim {
namespace {

Topology MustLoad(const std::string& name) {
  Result<Topology> topology = LoadFixture(std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name);
  EXPECT_TRUE(topology.ok()) << topology.status().ToString();
  return std::move(topology).value();
}

SimReport RunPolicy(const Topology& topology, std::string_view evaluator_name,
                    const std::vector<SimRequest>& stream) {
  Result<std::unique_ptr<Evaluator>> evaluator = MakeEvaluator(evaluator_name);
  EXPECT_TRUE(evaluator.ok());
  return Simulate(topology, **evaluator, stream);
}

TEST(SimulatorTest, StandardStreamIsDeterministicAndMixed) {
  Topology topology = MustLoad("pcie-8gpu-2socket-nvlink-pairs.json");
  std::vector<SimRequest> a = StandardStream(topology);
  std::vector<SimRequest> b = StandardStream(topology);
  ASSERT_EQ(a.size(), static_cast<size_t>(StreamSpec{}.requests));
  int kinds[kKinds] = {};
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].request.cores, b[i].request.cores);
    EXPECT_EQ(a[i].request.gpu_count, b[i].request.gpu_count);
    if (i > 0) {
      EXPECT_GE(a[i].arrival, a[i - 1].arrival);
    }
    kinds[static_cast<int>(a[i].kind)]++;
  }
  EXPECT_NEAR(kinds[0] / 3000.0, 0.65, 0.03);
  EXPECT_NEAR(kinds[1] / 3000.0, 0.25, 0.03);
  EXPECT_NEAR(kinds[2] / 3000.0, 0.10, 0.03);
}

TEST(SimulatorTest, CountsEveryArrivalOnce) {
  Topology topology = MustLoad("pcie-4gpu-2socket.json");
  std::vector<SimRequest> stream = StandardStream(topology);
  SimReport report = RunPolicy(topology, "spread", stream);
  EXPECT_EQ(report.arrived[0] + report.arrived[1] + report.arrived[2],
            static_cast<int>(stream.size()));
  EXPECT_GT(report.utilisation, 0.3);
  EXPECT_LE(report.utilisation, 1.0);
  EXPECT_GE(report.fragmentation, 0.0);
  EXPECT_LE(report.fragmentation, 1.0);
}

class StandardStreamTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StandardStreamTest, BinpackRejectsNoMoreWholeGpuRequestsThanFirstfit) {
  Topology topology = MustLoad(GetParam());
  std::vector<SimRequest> stream = StandardStream(topology);
  SimReport binpack = RunPolicy(topology, "binpack", stream);
  SimReport firstfit = RunPolicy(topology, "firstfit", stream);
  EXPECT_GT(firstfit.WholeRejected(), 0) << "the stream must contend, or the check is empty";
  EXPECT_LE(binpack.WholeRejected(), firstfit.WholeRejected());
  // The part a policy controls: rejections while the free cores would have sufficed.
  EXPECT_LE(binpack.whole_rejected_with_room, firstfit.whole_rejected_with_room);
  std::printf("%s: whole-GPU rejections binpack %d, firstfit %d (with enough free cores: %d, %d)\n",
              GetParam(), binpack.WholeRejected(), firstfit.WholeRejected(),
              binpack.whole_rejected_with_room, firstfit.whole_rejected_with_room);
}

TEST_P(StandardStreamTest, LinkAwareMultiGpuPlacementsAreAlwaysAtTheOptimum) {
  Topology topology = MustLoad(GetParam());
  std::vector<SimRequest> stream = StandardStream(topology);
  for (std::string_view name : {"binpack", "spread", "topology", "memory"}) {
    SimReport report = RunPolicy(topology, name, stream);
    EXPECT_GT(report.multi_placed, 0) << name;
    EXPECT_EQ(report.multi_at_optimum, report.multi_placed) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Machines, StandardStreamTest,
                         ::testing::Values("dgx-h100-8gpu-nvswitch.json",
                                           "pcie-8gpu-2socket-nvlink-pairs.json",
                                           "pcie-4gpu-2socket.json"));

TEST(SimulatorTest, FirstfitLosesLinkQualityOnPcieMachine) {
  Topology topology = MustLoad("pcie-8gpu-2socket-nvlink-pairs.json");
  SimReport firstfit = RunPolicy(topology, "firstfit", StandardStream(topology));
  EXPECT_LT(firstfit.multi_at_optimum, firstfit.multi_placed);
}

}  // namespace
}  // namespace vgpu::topology::sim

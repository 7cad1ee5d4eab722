// Link levels: the committed fixtures against matrices written out by hand from each machine's
// description (make_fixtures.py), not computed by the code under test.
#include "vgpu/topology/topology.h"

#include <gtest/gtest.h>

#include "vgpu/topology/fixture.h"
#include "vgpu/topology/matrix.h"

namespace vgpu::topology {
namespace {

std::string FixturePath(const std::string& name) {
  return std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name;
}

using Labels = std::vector<std::vector<std::string>>;

Labels Load(const std::string& name) {
  Result<Topology> topology = LoadFixture(FixturePath(name));
  EXPECT_TRUE(topology.ok()) << topology.status().ToString();
  return topology.ok() ? LinkLabels(*topology) : Labels{};
}

TEST(TopologyFixtureTest, DgxH100IsNv18AllToAll) {
  Labels labels = Load("dgx-h100-8gpu-nvswitch.json");
  ASSERT_EQ(labels.size(), 8u);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      EXPECT_EQ(labels[a][b], a == b ? "X" : "NV18") << a << "," << b;
    }
  }
}

TEST(TopologyFixtureTest, PcieEightGpuMatrix) {
  const Labels expected = {
      {"X", "NV12", "PXB", "PXB", "SYS", "SYS", "SYS", "SYS"},
      {"NV12", "X", "PXB", "PXB", "SYS", "SYS", "SYS", "SYS"},
      {"PXB", "PXB", "X", "NV12", "SYS", "SYS", "SYS", "SYS"},
      {"PXB", "PXB", "NV12", "X", "SYS", "SYS", "SYS", "SYS"},
      {"SYS", "SYS", "SYS", "SYS", "X", "NV12", "NODE", "NODE"},
      {"SYS", "SYS", "SYS", "SYS", "NV12", "X", "NODE", "NODE"},
      {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "X", "PIX"},
      {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PIX", "X"},
  };
  EXPECT_EQ(Load("pcie-8gpu-2socket-nvlink-pairs.json"), expected);
}

TEST(TopologyFixtureTest, PcieFourGpuMatrix) {
  const Labels expected = {
      {"X", "PHB", "SYS", "SYS"},
      {"PHB", "X", "SYS", "SYS"},
      {"SYS", "SYS", "X", "NODE"},
      {"SYS", "SYS", "NODE", "X"},
  };
  EXPECT_EQ(Load("pcie-4gpu-2socket.json"), expected);
}

TEST(TopologyFixtureTest, SingleGpu) { EXPECT_EQ(Load("single-gpu.json"), (Labels{{"X"}})); }

TEST(LinkLevelTest, OrderMatchesNvidiaSmiLegend) {
  EXPECT_TRUE(BetterThan(LinkLevel::kNvLink, LinkLevel::kPix));
  EXPECT_TRUE(BetterThan(LinkLevel::kPix, LinkLevel::kPxb));
  EXPECT_TRUE(BetterThan(LinkLevel::kPxb, LinkLevel::kPhb));
  EXPECT_TRUE(BetterThan(LinkLevel::kPhb, LinkLevel::kNode));
  EXPECT_TRUE(BetterThan(LinkLevel::kNode, LinkLevel::kSys));
  EXPECT_FALSE(BetterThan(LinkLevel::kSys, LinkLevel::kSys));
  EXPECT_GT(LinkRankOf(LinkLevel::kNvLink, 18), LinkRankOf(LinkLevel::kNvLink, 12));
  EXPECT_GT(LinkRankOf(LinkLevel::kNvLink, 1), LinkRankOf(LinkLevel::kPix, 0));
  EXPECT_GT(LinkRankOf(LinkLevel::kSelf, 0), LinkRankOf(LinkLevel::kNvLink, 18));
}

Gpu MakeGpu(int index, std::string bus, std::string root, std::vector<std::string> path,
            int numa = 0) {
  Gpu gpu;
  gpu.index = index;
  gpu.pci_bus_id = std::move(bus);
  gpu.pci_root = std::move(root);
  gpu.pci_path = std::move(path);
  gpu.numa_node = numa;
  gpu.memory_bytes = 1 << 30;
  return gpu;
}

TEST(TopologyTest, DeeperCascadeIsPxbAndSiblingsArePix) {
  // root port 00:01.0 -> switch (01:00.0 up, 02:0x.0 down) -> second switch under 02:00.0.
  std::vector<Gpu> gpus = {
      MakeGpu(0, "0000:04:00.0", "pci0000:00",
              {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}),
      MakeGpu(1, "0000:05:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:04.0"}),
      MakeGpu(2, "0000:06:00.0", "pci0000:00", {"0000:00:01.0", "0000:01:00.0", "0000:02:08.0"}),
      MakeGpu(3, "0000:41:00.0", "pci0000:00", {"0000:00:03.0"}),
      MakeGpu(4, "0000:81:00.0", "pci0000:80", {"0000:80:01.0"}, 0),
  };
  Result<Topology> topology = Topology::Create(std::move(gpus));
  ASSERT_TRUE(topology.ok()) << topology.status().ToString();
  EXPECT_EQ(topology->Link(1, 2), LinkLevel::kPix);
  EXPECT_EQ(topology->Link(0, 1), LinkLevel::kPxb);   // two switches
  EXPECT_EQ(topology->Link(0, 3), LinkLevel::kPhb);   // different root ports
  EXPECT_EQ(topology->Link(3, 4), LinkLevel::kNode);  // other host bridge, same NUMA node
  EXPECT_EQ(topology->Link(4, 4), LinkLevel::kSelf);
}

TEST(TopologyTest, NvLinkRecordedOnOneSideStillCounts) {
  std::vector<Gpu> gpus = {MakeGpu(0, "0000:01:00.0", "pci0000:00", {"0000:00:01.0"}),
                           MakeGpu(1, "0000:02:00.0", "pci0000:00", {"0000:00:02.0"})};
  gpus[0].nvlinks.push_back({"0000:02:00.0", NvLinkPeer::Kind::kGpu, 4});
  Result<Topology> topology = Topology::Create(std::move(gpus));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->LinkLabel(0, 1), "NV4");
  EXPECT_EQ(topology->LinkLabel(1, 0), "NV4");
}

TEST(TopologyTest, SwitchLinksCountOnlyWithinOneFabric) {
  std::vector<Gpu> gpus = {MakeGpu(0, "0000:01:00.0", "pci0000:00", {"0000:00:01.0"}),
                           MakeGpu(1, "0000:02:00.0", "pci0000:00", {"0000:00:02.0"}),
                           MakeGpu(2, "0000:03:00.0", "pci0000:00", {"0000:00:03.0"})};
  gpus[0].nvlinks.push_back({"0000:e0:00.0", NvLinkPeer::Kind::kSwitch, 6});
  gpus[1].nvlinks.push_back({"0000:e0:00.0", NvLinkPeer::Kind::kSwitch, 4});
  gpus[2].nvlinks.push_back({"0000:e1:00.0", NvLinkPeer::Kind::kSwitch, 6});
  Result<Topology> topology = Topology::Create(std::move(gpus));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->LinkLabel(0, 1), "NV4");  // bounded by the GPU with fewer links
  EXPECT_EQ(topology->LinkLabel(0, 2), "PHB");  // different switch fabric
}

TEST(TopologyTest, CreateRefusesInconsistentGpuLists) {
  std::vector<Gpu> out_of_order = {MakeGpu(1, "0000:01:00.0", "pci0000:00", {})};
  Result<Topology> a = Topology::Create(out_of_order);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("index 1"), std::string::npos);

  std::vector<Gpu> repeated = {MakeGpu(0, "0000:01:00.0", "pci0000:00", {}),
                               MakeGpu(1, "0000:01:00.0", "pci0000:00", {})};
  Result<Topology> b = Topology::Create(repeated);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("0000:01:00.0 repeated"), std::string::npos);

  std::vector<Gpu> too_many;
  for (int i = 0; i <= Topology::kMaxGpus; ++i) {
    too_many.push_back(MakeGpu(i, "0000:" + std::to_string(10 + i) + ":00.0", "pci0000:00", {}));
  }
  EXPECT_EQ(Topology::Create(too_many).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vgpu::topology

#include "vgpu/dra/slice_builder.h"

#include <gtest/gtest.h>

#include "vgpu/alloc/inventory.h"

namespace vgpu::dra {
namespace {

using nlohmann::json;

std::vector<alloc::GpuInfo> Fixture(const std::string& name) {
  auto inv = alloc::LoadGpuFixture(std::string(VGPU_TOPOLOGY_DATA) + "/" + name);
  EXPECT_TRUE(inv.ok()) << inv.status().ToString();
  return inv.ok() ? inv->gpus : std::vector<alloc::GpuInfo>{};
}

TEST(SliceBuilder, EightGpuNvSwitchMachine) {
  auto gpus = Fixture("dgx-h100-8gpu-nvswitch.json");
  ASSERT_EQ(gpus.size(), 8u);
  auto slices = BuildSlices(gpus, {}, {"gpu.vgpu.io", "n1", "", 256ull << 20}, 3);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["sharedCounters"].size(), 8u);
  const json& devices = slices[1]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 16u);
  for (const json& s : slices) {
    EXPECT_EQ(s["spec"]["pool"]["generation"], 3);
    EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_FALSE(s["metadata"].contains("ownerReferences"));
  }
  // Every GPU of an NVSwitch machine is one hop from every other.
  EXPECT_EQ(devices[0]["attributes"]["nvlinkPeers"]["string"], "1,2,3,4,5,6,7");
  EXPECT_EQ(devices[15]["attributes"]["nvlinkPeers"]["string"], "0,1,2,3,4,5,6");
  EXPECT_EQ(devices[0]["attributes"]["productName"]["string"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(devices[0]["attributes"]["resource.kubernetes.io/pcieRoot"]["string"], "pci0000:18");
  // 85520809984 is not a whole number of 256 MiB granules: max is the largest multiple below.
  const json& range = devices[0]["capacity"]["memory"]["requestPolicy"]["validRange"];
  EXPECT_EQ(range["max"], "85362475008");  // 318 granules
  EXPECT_EQ(devices[0]["capacity"]["memory"]["value"], "85520809984");
}

TEST(SliceBuilder, PairsOfNvLinkedGpusAndUnhealthyGpusLeftOut) {
  auto gpus = Fixture("pcie-8gpu-2socket-nvlink-pairs.json");
  ASSERT_EQ(gpus.size(), 8u);
  auto slices = BuildSlices(gpus, {{2, false}}, {"gpu.vgpu.io", "n1", "uid", 1ull << 30}, 1);
  const json& devices = slices[1]["spec"]["devices"];
  ASSERT_EQ(devices.size(), 14u);
  for (const json& d : devices) {
    EXPECT_NE(d["name"], "gpu-2");
    EXPECT_NE(d["name"], "gpu-2-share");
  }
  EXPECT_EQ(devices[0]["attributes"]["nvlinkPeers"]["string"], "1");
  // The counter set of the unhealthy GPU stays, so allocated claims still add up.
  EXPECT_EQ(slices[0]["spec"]["sharedCounters"].size(), 8u);
}

TEST(SliceBuilder, ComputeCapabilityAndDriverVersionAreSemanticVersions) {
  struct Case {
    std::string written, published;  // "" published: the attribute is left out
  } cases[] = {{"9.0", "9.0.0"},
               {"535.104.05", "535.104.5"},
               {"570.86.10", "570.86.10"},
               {"12", "12.0.0"},
               {"", ""},
               {"9.", ""},
               {"550.54.15.1", ""},
               {"r535", ""},
               {"9..0", ""}};
  for (const Case& c : cases) {
    alloc::GpuInfo g{0, "GPU-0", 1ull << 34, -1, "0000:17:00.0", "", {}, {}, "Test"};
    g.compute_capability = c.written;
    g.driver_version = c.written;
    auto slices = BuildSlices({g}, {}, {"d.example", "n", "", 1ull << 30}, 1);
    const json& a = slices[1]["spec"]["devices"][0]["attributes"];
    for (const char* key : {"cudaComputeCapability", "driverVersion"}) {
      if (c.published.empty()) {
        EXPECT_FALSE(a.contains(key)) << c.written;
      } else {
        EXPECT_EQ(a[key], (json{{"version", c.published}})) << c.written;
      }
    }
  }
}

TEST(SliceBuilder, SplitsLargeNodesWithinTheApiLimits) {
  std::vector<alloc::GpuInfo> gpus;
  for (uint32_t i = 0; i < 40; ++i) {
    gpus.push_back({i, "GPU-" + std::to_string(i), 1ull << 34, -1, "", "", {}, {}, ""});
  }
  auto slices = BuildSlices(gpus, {}, {"d.example", "n", "", 1ull << 30}, 1);
  ASSERT_EQ(slices.size(), 5u + 2u);  // 40/8 counter slices, 40/32 rounded up device slices
  for (const json& s : slices) {
    EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 7);
    if (s["spec"].contains("sharedCounters")) {
      EXPECT_LE(s["spec"]["sharedCounters"].size(), kCounterSetsPerSlice);
    } else {
      EXPECT_LE(s["spec"]["devices"].size(), 64u);
      EXPECT_FALSE(
          s["spec"]["devices"][0]["attributes"].contains("resource.kubernetes.io/numaNode"));
    }
  }
}

}  // namespace
}  // namespace vgpu::dra

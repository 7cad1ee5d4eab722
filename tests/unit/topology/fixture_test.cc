// Fixture files: parsing, errors that name the field, and a writer that loses nothing.
#include "vgpu/topology/fixture.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace vgpu::topology {
namespace {

std::string FixturePath(const std::string& name) {
  return std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> CommittedFixtures() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(VGPU_TOPOLOGY_FIXTURES)) {
    if (entry.path().extension() == ".json") {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FixtureTest, EveryCommittedFixtureLoadsAndRewritesByteForByte) {
  std::vector<std::string> names = CommittedFixtures();
  ASSERT_GE(names.size(), 4u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::string text = ReadAll(FixturePath(name));
    Result<Fixture> fixture = ParseFixture(text);
    ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
    EXPECT_FALSE(fixture->gpus.empty());
    EXPECT_EQ(FixtureToJson(*fixture), text);
    Result<Topology> topology = LoadFixture(FixturePath(name));
    ASSERT_TRUE(topology.ok()) << topology.status().ToString();
    EXPECT_EQ(topology->size(), static_cast<int>(fixture->gpus.size()));
  }
}

TEST(FixtureTest, WriterEscapesAndKeepsEveryField) {
  Fixture fixture;
  fixture.machine = "lab \"b\"\\rack\t7";
  fixture.source = "unit test";
  fixture.nvidia_smi_topo = "\tGPU0\nGPU0\t X \n\x1b[0m";
  Gpu gpu;
  gpu.uuid = "GPU-1";
  gpu.name = "NVIDIA H200";
  gpu.compute_capability = "9.0";
  gpu.driver_version = "570.124.06";
  gpu.memory_bytes = 150754820096ull;
  gpu.numa_node = 1;
  gpu.pci_bus_id = "0000:18:00.0";
  gpu.cpu_affinity = "0-47";
  gpu.pci_root = "pci0000:15";
  gpu.pci_path = {"0000:15:01.0", "0000:16:00.0"};
  gpu.nvlinks = {{"0000:e0:00.0", NvLinkPeer::Kind::kSwitch, 5},
                 {"0000:19:00.0", NvLinkPeer::Kind::kGpu, 2}};
  fixture.gpus.push_back(gpu);
  Result<Fixture> back = ParseFixture(FixtureToJson(fixture));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->machine, fixture.machine);
  EXPECT_EQ(back->nvidia_smi_topo, fixture.nvidia_smi_topo);
  ASSERT_EQ(back->gpus.size(), 1u);
  const Gpu& got = back->gpus[0];
  EXPECT_EQ(got.memory_bytes, gpu.memory_bytes);
  EXPECT_EQ(got.numa_node, 1);
  EXPECT_EQ(got.compute_capability, "9.0");
  EXPECT_EQ(got.driver_version, "570.124.06");
  EXPECT_EQ(got.pci_path, gpu.pci_path);
  ASSERT_EQ(got.nvlinks.size(), 2u);
  EXPECT_EQ(got.nvlinks[0].kind, NvLinkPeer::Kind::kSwitch);
  EXPECT_EQ(got.nvlinks[1].remote_pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(got.nvlinks[1].links, 2);
}

struct BadFixture {
  const char* what;
  const char* json;
  const char* message_part;
};

TEST(FixtureTest, BadInputIsRefusedNamingTheField) {
  const BadFixture cases[] = {
      {"not json", "{", "not valid JSON"},
      {"wrong format", R"({"format": "other/2", "gpus": []})", "other/2"},
      {"no gpus", R"({"format": "vgpu-topology/1"})", "'gpus'"},
      {"missing bus id",
       R"({"format": "vgpu-topology/1", "gpus": [{"index": 0, "memory_bytes": 1}]})",
       "gpus[0]: field 'pci_bus_id' is missing"},
      {"wrong type",
       R"({"format": "vgpu-topology/1", "gpus": [{"index": "zero", "memory_bytes": 1,
           "pci_bus_id": "0000:01:00.0"}]})",
       "gpus[0]: field 'index' has the wrong type"},
      {"negative memory",
       R"({"format": "vgpu-topology/1", "gpus": [{"index": 0, "memory_bytes": -1,
           "pci_bus_id": "0000:01:00.0"}]})",
       "'memory_bytes' must not be negative"},
      {"bad link kind",
       R"({"format": "vgpu-topology/1", "gpus": [{"index": 0, "memory_bytes": 1,
           "pci_bus_id": "0000:01:00.0", "nvlinks": [{"remote": "x", "kind": "nic", "links": 1}]}]})",
       "\"nic\""},
      {"zero links",
       R"({"format": "vgpu-topology/1", "gpus": [{"index": 0, "memory_bytes": 1,
           "pci_bus_id": "0000:01:00.0", "nvlinks": [{"remote": "x", "links": 0}]}]})",
       "'links' must be positive"},
  };
  for (const BadFixture& bad : cases) {
    SCOPED_TRACE(bad.what);
    Result<Fixture> fixture = ParseFixture(bad.json);
    ASSERT_FALSE(fixture.ok());
    EXPECT_EQ(fixture.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(fixture.status().message().find(bad.message_part), std::string::npos)
        << fixture.status().message();
  }
}

TEST(FixtureTest, LoadNamesTheFileThatFailed) {
  Result<Topology> missing = LoadFixture("/nonexistent/machine.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/machine.json"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::topology

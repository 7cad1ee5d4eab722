// The nvidia-smi style matrix, its reader, and the topo command built on them.
#include "vgpu/topology/matrix.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "fake_sysfs.h"
#include "topo_command.h"
#include "vgpu/topology/fixture.h"

namespace vgpu::topology {
namespace {

std::string FixturePath(const std::string& name) {
  return std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + name;
}

// `nvidia-smi topo -m` as a DGX H100 prints it (driver 535): underlined header, NIC columns and
// rows, the NUMA ID column, then legends.
constexpr const char* kDgxH100NvidiaSmi =
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tNIC1\tCPU Affinity\t"
    "NUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tPXB\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU1\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU2\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tNV18\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU3\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tNV18\tSYS\tSYS\t0-55,112-167\t0\t\tN/A\n"
    "GPU4\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tNV18\tSYS\tPXB\t56-111,168-223\t1\t\tN/A\n"
    "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tNV18\tSYS\tSYS\t56-111,168-223\t1\t\tN/A\n"
    "GPU6\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18\tSYS\tSYS\t56-111,168-223\t1\t\tN/A\n"
    "GPU7\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tSYS\tSYS\t56-111,168-223\t1\t\tN/A\n"
    "NIC0\tPXB\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\tSYS\t X \tSYS\t\t\t\t\n"
    "NIC1\tSYS\tSYS\tSYS\tSYS\tPXB\tSYS\tSYS\tSYS\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n"
    "  NIC1: mlx5_1\n";

TEST(MatrixTest, ReadsNvidiaSmiOutputAndAgreesWithTheDgxFixture) {
  Result<std::vector<std::vector<std::string>>> smi = ParseNvidiaSmiTopo(kDgxH100NvidiaSmi);
  ASSERT_TRUE(smi.ok()) << smi.status().ToString();
  Result<Topology> topology = LoadFixture(FixturePath("dgx-h100-8gpu-nvswitch.json"));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(*smi, LinkLabels(*topology));
}

TEST(MatrixTest, OurOutputReadsBackAsNvidiaSmiWould) {
  for (const char* name : {"dgx-h100-8gpu-nvswitch.json", "pcie-8gpu-2socket-nvlink-pairs.json",
                           "pcie-4gpu-2socket.json", "single-gpu.json"}) {
    SCOPED_TRACE(name);
    Result<Topology> topology = LoadFixture(FixturePath(name));
    ASSERT_TRUE(topology.ok());
    Result<std::vector<std::vector<std::string>>> back =
        ParseNvidiaSmiTopo(FormatTopoMatrix(*topology));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, LinkLabels(*topology));
  }
}

// Recorded machines carry what nvidia-smi printed when they were recorded (tests/gpu/extra.d/
// topology.sh): our levels, computed from the recorded PCI tree and NVLinks, must agree.
TEST(MatrixTest, RecordedMachinesAgreeWithTheirNvidiaSmiOutput) {
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VGPU_TOPOLOGY_FIXTURES)) {
    if (entry.path().extension() != ".json") {
      continue;
    }
    Result<Fixture> fixture = ReadFixture(entry.path().string());
    ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
    if (fixture->nvidia_smi_topo.empty()) {
      continue;
    }
    SCOPED_TRACE(entry.path().filename().string());
    Result<std::vector<std::vector<std::string>>> smi =
        ParseNvidiaSmiTopo(fixture->nvidia_smi_topo);
    ASSERT_TRUE(smi.ok()) << smi.status().ToString();
    Result<Topology> topology = Topology::Create(fixture->gpus);
    ASSERT_TRUE(topology.ok());
    EXPECT_EQ(*smi, LinkLabels(*topology));
    ++compared;
  }
  if (compared == 0) {
    GTEST_SKIP() << "no recorded fixture with nvidia-smi output in " << VGPU_TOPOLOGY_FIXTURES;
  }
}

TEST(MatrixTest, RowsCarryCpuAndNumaAffinity) {
  Result<Topology> topology = LoadFixture(FixturePath("pcie-4gpu-2socket.json"));
  ASSERT_TRUE(topology.ok());
  std::string text = FormatTopoMatrix(*topology);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tPHB\tSYS\tSYS\t0-63,128-191\t0\n"
            "GPU1\tPHB\t X \tSYS\tSYS\t0-63,128-191\t0\n"
            "GPU2\tSYS\tSYS\t X \tNODE\t64-127,192-255\t1\n"
            "GPU3\tSYS\tSYS\tNODE\t X \t64-127,192-255\t1");
  EXPECT_NE(text.find("Legend:"), std::string::npos);
}

TEST(MatrixTest, ReaderRefusesTextWithoutMatrix) {
  EXPECT_FALSE(ParseNvidiaSmiTopo("NVIDIA-SMI has failed because it couldn't communicate\n").ok());
  EXPECT_FALSE(ParseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \tNV4\n").ok());  // a row missing
}

int RunTopo(std::vector<std::string> args, std::string* out = nullptr, bool json = false) {
  std::ostringstream captured;
  std::ostringstream errors;
  int rc = RunTopoCommand(args, json, captured, errors);
  if (out != nullptr) {
    *out = captured.str();
  }
  return rc;
}

TEST(TopoCommandTest, PrintsARecordedMachine) {
  std::string out;
  ASSERT_EQ(
      RunTopo({"--fixture", FixturePath("pcie-8gpu-2socket-nvlink-pairs.json"), "--gpus"}, &out),
      0);
  EXPECT_NE(out.find("GPU6\tSYS\tSYS\tSYS\tSYS\tNODE\tNODE\t X \tPIX\t32-63,96-127\t1\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("GPU7\t0000:c4:00.0\t95830 MiB\t"), std::string::npos) << out;
}

TEST(TopoCommandTest, BadUsageAndBadFilesFailDistinctly) {
  EXPECT_EQ(RunTopo({"--frobnicate"}), 2);
  EXPECT_EQ(RunTopo({"--fixture"}), 2);
  EXPECT_EQ(RunTopo({"--fixture", "a.json", "--record", "b.json"}), 2);
  EXPECT_EQ(RunTopo({"--fixture", "/nonexistent.json"}), 1);
}

TEST(TopoCommandTest, JsonPrintsTheMachineAsAFixture) {
  std::string out;
  ASSERT_EQ(RunTopo({"--fixture", FixturePath("pcie-4gpu-2socket.json")}, &out, /*json=*/true), 0);
  Result<Fixture> fixture = ParseFixture(out);
  ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
  EXPECT_EQ(fixture->gpus.size(), 4u);
}

TEST(TopoCommandTest, RecordsThisMachineAsALoadableFixture) {
  testing::FakeSysfs sysfs;
  sysfs.AddBridge("pci0000:00/0000:00:01.0");
  sysfs.AddBridge("pci0000:00/0000:00:01.0/0000:01:00.0");
  sysfs.AddGpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0, "0-7");
  sysfs.AddGpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:04.0/0000:04:00.0", 0, "0-7");
  std::string out_path = sysfs.root() + "/recorded.json";
  std::string out;
  ASSERT_EQ(RunTopo({"--sysfs", sysfs.root(), "--nvml", "/nonexistent/libnvidia-ml.so.1",
                     "--record", out_path, "--machine", "unit"},
                    &out),
            0);
  EXPECT_NE(out.find("GPU0\t X \tPIX"), std::string::npos) << out;
  Result<Fixture> fixture = ReadFixture(out_path);
  ASSERT_TRUE(fixture.ok()) << fixture.status().ToString();
  EXPECT_EQ(fixture->machine, "unit");
  EXPECT_NE(fixture->source.find("recorded by vgpu topo --record"), std::string::npos);
  Result<Topology> topology = LoadFixture(out_path);
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->Link(0, 1), LinkLevel::kPix);
}

}  // namespace
}  // namespace vgpu::topology

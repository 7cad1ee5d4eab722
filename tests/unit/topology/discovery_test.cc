// Discovery on fakes: a fake sysfs tree in a temp dir and a fake libnvidia-ml.so.1 (fake_nvml.cc)
// loaded through the same dlopen path as the real one.
#include "vgpu/topology/discovery.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include "fake_sysfs.h"

namespace vgpu::topology {
namespace {

using testing::FakeSysfs;

// Two switches, each with two GPUs, on two sockets; the bus ids match fake_nvml.cc's GPUs.
void AddTwoSwitchMachine(FakeSysfs& sysfs) {
  sysfs.AddBridge("pci0000:17/0000:17:01.0");
  sysfs.AddBridge("pci0000:17/0000:17:01.0/0000:18:00.0");
  sysfs.AddBridge("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0");
  sysfs.AddBridge("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0");
  sysfs.AddGpu("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0", 0, "0-3");
  sysfs.AddGpu("pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:04.0/0000:1b:00.0", 0, "0-3");
  sysfs.AddGpu("pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0", 1, "4-7");
  sysfs.AddGpu("pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:04.0/0000:9b:00.0", 1, "4-7");
}

class ShapeEnv {  // sets FAKE_NVML_SHAPE for one test
 public:
  explicit ShapeEnv(const char* shape) { setenv("FAKE_NVML_SHAPE", shape, 1); }
  ~ShapeEnv() { unsetenv("FAKE_NVML_SHAPE"); }
};

TEST(SysfsSourceTest, FindsNvidiaDisplayFunctionsWithTheirTreePosition) {
  FakeSysfs sysfs;
  AddTwoSwitchMachine(sysfs);
  // Not GPUs: an NVSwitch (bridge class 0x0680), a GPU's HDMI audio, another vendor's VGA.
  sysfs.AddFunction("pci0000:00/0000:00:02.0", "0x10de", "0x068000");
  sysfs.AddFunction("pci0000:00/0000:00:03.1", "0x10de", "0x040300");
  sysfs.AddFunction("pci0000:00/0000:00:04.0", "0x8086", "0x030000");
  Result<std::vector<Gpu>> gpus = MakeSysfsSource(sysfs.root())->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 4u);
  const Gpu& first = (*gpus)[0];
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.pci_bus_id, "0000:1a:00.0");
  EXPECT_EQ(first.pci_root, "pci0000:17");
  EXPECT_EQ(first.pci_path,
            (std::vector<std::string>{"0000:17:01.0", "0000:18:00.0", "0000:19:00.0"}));
  EXPECT_EQ(first.numa_node, 0);
  EXPECT_EQ(first.cpu_affinity, "0-3");
  EXPECT_EQ((*gpus)[3].pci_bus_id, "0000:9b:00.0");
  EXPECT_EQ((*gpus)[3].index, 3);
  EXPECT_EQ((*gpus)[3].numa_node, 1);

  Result<Topology> topology = Topology::Create(std::move(*gpus));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->Link(0, 1), LinkLevel::kPix);  // one switch
  EXPECT_EQ(topology->Link(0, 2), LinkLevel::kSys);  // other socket
}

TEST(SysfsSourceTest, IgnoresNodesAboveTheHostBridge) {
  // Hyper-V style: the PCI root hangs under VMBus nodes; the GPU sits right on it.
  FakeSysfs sysfs;
  sysfs.AddGpu("LNXSYSTM:00/VMBUS:01/47505500-0001-0000-3130-444531334632/pci0001:00/0001:00:00.0",
               -1, "0-95");
  Result<std::vector<Gpu>> gpus = MakeSysfsSource(sysfs.root())->Discover();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].pci_root, "pci0001:00");
  EXPECT_TRUE((*gpus)[0].pci_path.empty());
  EXPECT_EQ((*gpus)[0].numa_node, -1);
}

TEST(SysfsSourceTest, MissingTreeIsUnavailable) {
  Result<std::vector<Gpu>> gpus = MakeSysfsSource("/nonexistent-sysfs")->Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpus.status().message().find("/nonexistent-sysfs"), std::string::npos);
}

// Holds the fake library open so its session counter survives NvmlSource's dlclose.
class FakeNvml {
 public:
  explicit FakeNvml(const char* path) : handle_(dlopen(path, RTLD_NOW)) {}
  ~FakeNvml() {
    if (handle_) dlclose(handle_);
  }
  int Sessions() const {
    auto fn = reinterpret_cast<int (*)()>(dlsym(handle_, "fake_nvml_sessions"));
    return fn ? fn() : -100;
  }

 private:
  void* handle_;
};

TEST(NvmlSourceTest, ReadsDevicesAndAggregatesNvLinksPerPeer) {
  ShapeEnv shape("pairs");
  FakeNvml held(FAKE_NVML_PATH);
  Result<std::vector<Gpu>> gpus = MakeNvmlSource(FAKE_NVML_PATH)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ(held.Sessions(), 0) << "nvmlInit_v2 not paired with nvmlShutdown";
  ASSERT_EQ(gpus->size(), 4u);
  const Gpu& gpu = (*gpus)[1];
  EXPECT_EQ(gpu.uuid, "GPU-fake-1");
  EXPECT_EQ(gpu.name, "NVIDIA Fake H200");
  EXPECT_EQ(gpu.compute_capability, "9.0");
  EXPECT_EQ(gpu.driver_version, "535.104.05");
  EXPECT_EQ(gpu.memory_bytes, (140ull << 30) + 1);
  EXPECT_EQ(gpu.pci_bus_id, "0000:1b:00.0");  // from NVML's "00000000:1B:00.0"
  EXPECT_EQ(gpu.cpu_affinity, "0-3,64");
  ASSERT_EQ(gpu.nvlinks.size(), 1u);
  EXPECT_EQ(gpu.nvlinks[0].remote_pci_bus_id, "0000:1a:00.0");
  EXPECT_EQ(gpu.nvlinks[0].kind, NvLinkPeer::Kind::kGpu);
  EXPECT_EQ(gpu.nvlinks[0].links, 4);  // links 4-5 are down
  EXPECT_EQ((*gpus)[2].cpu_affinity, "4-7,64");
}

TEST(NvmlSourceTest, SwitchLinksMakeEveryPairNvLinked) {
  ShapeEnv shape("switch");
  Result<std::vector<Gpu>> gpus = MakeNvmlSource(FAKE_NVML_PATH)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ((*gpus)[0].nvlinks.size(), 2u);
  EXPECT_EQ((*gpus)[0].nvlinks[0].kind, NvLinkPeer::Kind::kSwitch);
  EXPECT_EQ((*gpus)[0].nvlinks[0].links, 3);
  Result<Topology> topology = Topology::Create(std::move(*gpus));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->LinkLabel(0, 3), "NV6");
  EXPECT_EQ(topology->LinkLabel(2, 1), "NV6");
}

TEST(NvmlSourceTest, OlderDriverWithoutRemoteTypeClassifiesRemotesByBusId) {
  {
    ShapeEnv shape("pairs");
    Result<std::vector<Gpu>> gpus = MakeNvmlSource(FAKE_NVML_OLD_PATH)->Discover();
    ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
    EXPECT_EQ((*gpus)[0].nvlinks.at(0).kind, NvLinkPeer::Kind::kGpu);
    EXPECT_EQ((*gpus)[0].compute_capability, "");  // entry points missing: unknown, no error
    EXPECT_EQ((*gpus)[0].driver_version, "");
  }
  {
    ShapeEnv shape("switch");
    Result<std::vector<Gpu>> gpus = MakeNvmlSource(FAKE_NVML_OLD_PATH)->Discover();
    ASSERT_TRUE(gpus.ok());
    EXPECT_EQ((*gpus)[0].nvlinks.at(0).kind, NvLinkPeer::Kind::kSwitch);
  }
}

TEST(NvmlSourceTest, MissingLibraryIsUnavailable) {
  Result<std::vector<Gpu>> gpus = MakeNvmlSource("/nonexistent/libnvidia-ml.so.1")->Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.status().code(), StatusCode::kUnavailable);
}

TEST(NvmlSourceTest, InitFailureCarriesNvmlsErrorText) {
  ShapeEnv shape("noinit");
  Result<std::vector<Gpu>> gpus = MakeNvmlSource(FAKE_NVML_PATH)->Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("Driver Not Loaded"), std::string::npos)
      << gpus.status().message();
}

TEST(DiscoverGpusTest, NvmlIdentityWithSysfsTreePosition) {
  ShapeEnv shape("pairs");
  FakeSysfs sysfs;
  AddTwoSwitchMachine(sysfs);
  sysfs.AddGpu("pci0000:c0/0000:c0:01.0/0000:c1:00.0", 1, "4-7");  // e.g. bound to vfio-pci
  auto nvml = MakeNvmlSource(FAKE_NVML_PATH);
  auto pci = MakeSysfsSource(sysfs.root());
  Result<Discovered> found = DiscoverGpus(*nvml, *pci);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->gpus.size(), 4u);
  EXPECT_EQ(found->gpus[2].uuid, "GPU-fake-2");
  EXPECT_EQ(found->gpus[2].pci_root, "pci0000:97");
  EXPECT_EQ(found->gpus[2].numa_node, 1);
  EXPECT_EQ(found->gpus[2].cpu_affinity, "4-7");  // sysfs wins over NVML's mask
  ASSERT_EQ(found->notes.size(), 1u);
  EXPECT_NE(found->notes[0].find("0000:c1:00.0"), std::string::npos);
  Result<Topology> topology = Topology::Create(std::move(found->gpus));
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->LinkLabel(0, 1), "NV4");
  EXPECT_EQ(topology->LinkLabel(1, 2), "SYS");
}

TEST(DiscoverGpusTest, SysfsAloneWhenNvmlIsMissingAndSaysSo) {
  FakeSysfs sysfs;
  AddTwoSwitchMachine(sysfs);
  auto nvml = MakeNvmlSource("/nonexistent/libnvidia-ml.so.1");
  auto pci = MakeSysfsSource(sysfs.root());
  Result<Discovered> found = DiscoverGpus(*nvml, *pci);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->gpus.size(), 4u);
  ASSERT_EQ(found->notes.size(), 1u);
  EXPECT_NE(found->notes[0].find("degraded=sysfs-only"), std::string::npos);
}

TEST(DiscoverGpusTest, FailsWhenNoSourceWorks) {
  auto nvml = MakeNvmlSource("/nonexistent/libnvidia-ml.so.1");
  auto pci = MakeSysfsSource("/nonexistent-sysfs");
  Result<Discovered> found = DiscoverGpus(*nvml, *pci);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kUnavailable);
}

TEST(DiscoveryHelpersTest, CanonicalBusId) {
  EXPECT_EQ(CanonicalBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(CanonicalBusId("0000:1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(CanonicalBusId("00010000:01:00.0"), "10000:01:00.0");
  EXPECT_EQ(CanonicalBusId("00000001:01:00.0"), "0001:01:00.0");
}

TEST(DiscoveryHelpersTest, CpuListFromMask) {
  EXPECT_EQ(CpuListFromMask({0}), "");
  EXPECT_EQ(CpuListFromMask({0b1011}), "0-1,3");
  EXPECT_EQ(CpuListFromMask({~0ull, 1}), "0-64");
  EXPECT_EQ(CpuListFromMask({1ull << 63, 0, 0b110}), "63,129-130");
}

}  // namespace
}  // namespace vgpu::topology

// Discovery: where a Topology's GPUs come from. Like the device plugin's `rm` package, the source
// of devices sits behind one interface (GpuSource) so everything above it runs on fakes:
//
//   sysfs    always: the PCI tree under /sys (vendor 0x10de, class 0x03xxxx), host bridge ->
//            bridges -> GPU, numa_node, local_cpulist. No UUID, memory or NVLink.
//   nvml     when libnvidia-ml.so.1 loads (dlopen, no NVML headers or link-time dependency):
//            UUID, name, memory, PCI bus id, NVLink peers, CPU affinity.
//   fixture  a recorded machine (fixture.h), for tests and the simulator.
//
// DiscoverGpus merges NVML over sysfs by PCI bus id: NVML's view of the devices and their order
// wins, sysfs adds the PCI path and NUMA node. Without NVML the sysfs view is used alone (a
// degraded mode: no UUIDs, memory 0, no NVLink) and a note says so.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/nvidia_libraries.h"
#include "vgpu/status.h"
#include "vgpu/topology/fixture.h"
#include "vgpu/topology/topology.h"

namespace vgpu::topology {

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual std::string_view Name() const = 0;
  // The GPUs this source sees, indexed 0..n-1 in PCI bus id order. Unavailable when the source
  // does not exist on this machine (no NVML library, no /sys/bus/pci).
  virtual Result<std::vector<Gpu>> Discover() const = 0;
};

// sysfs_root is "/sys" on a real machine; tests pass a fake tree in a temp dir.
std::unique_ptr<GpuSource> MakeSysfsSource(std::string sysfs_root = "/sys");
// library is what dlopen is given; tests pass the path of a fake NVML.
std::unique_ptr<GpuSource> MakeNvmlSource(std::string library = kNvmlLibrary);
// Replays the GPUs of a recorded fixture file.
std::unique_ptr<GpuSource> MakeFixtureSource(std::string path);

struct Discovered {
  std::vector<Gpu> gpus;
  std::vector<std::string> notes;  // degraded modes and mismatches, one line each, for the log
};

// NVML merged over sysfs (see the top of this file). Fails only when neither source works.
Result<Discovered> DiscoverGpus(const GpuSource& nvml, const GpuSource& sysfs);

// "0000:18:00.0" from NVML's "00000000:18:00.0" or any case: lower-case, 4-digit domain.
std::string CanonicalBusId(std::string_view bus_id);
// "0-3,8,10-11" from a CPU bitmap (bit i of words[i / 64] = CPU i).
std::string CpuListFromMask(const std::vector<uint64_t>& words);

}  // namespace vgpu::topology

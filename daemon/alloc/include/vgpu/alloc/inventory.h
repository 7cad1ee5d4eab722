// The GPUs the manager shares, as the allocator needs them. They come from topology/: NVML over
// sysfs discovery on a real node, or a recorded machine (topology fixture, "vgpu-topology/1")
// for tests and the demo.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/status.h"
#include "vgpu/topology/topology.h"

namespace vgpu::alloc {

struct GpuInfo {
  uint32_t index = 0;  // topology index; also the minor of /dev/nvidiaN on the node
  std::string uuid;
  uint64_t memory_bytes = 0;
  int numa = -1;  // -1: unknown / no NUMA preference
  std::string pci_bus_id;
  // Where the GPU sits (topology/topology.h): the placer's link levels come from these, so a
  // multi-GPU request gets NVLink peers and PCIe neighbours rather than any two GPUs.
  std::string pci_root;
  std::vector<std::string> pci_path;
  std::vector<topology::NvLinkPeer> nvlinks;
  std::string name;  // product name ("NVIDIA H100 80GB HBM3"), informational
  // Default-initialized ({}) so that the positional initializers of older code and tests,
  // which end at `name`, stay complete (-Wmissing-field-initializers).
  std::string compute_capability{};  // "9.0"; empty: unknown (topology::Gpu)
  std::string driver_version{};      // "550.54.15"; empty: unknown
};

struct Inventory {
  std::vector<GpuInfo> gpus;
  std::vector<std::string> notes;  // discovery's degraded modes, one log line each
  std::string source;              // "fixture <path>" | "nvml+sysfs"
};

// A recorded machine (topology/include/vgpu/topology/fixture.h format).
Result<Inventory> LoadGpuFixture(const std::string& path);
// NVML merged over sysfs (topology/include/vgpu/topology/discovery.h).
Result<Inventory> DiscoverNodeGpus();

}  // namespace vgpu::alloc

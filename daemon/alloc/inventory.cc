#include "vgpu/alloc/inventory.h"

#include "vgpu/nvidia_libraries.h"
#include "vgpu/topology/discovery.h"
#include "vgpu/topology/fixture.h"

namespace vgpu::alloc {
namespace {

Result<Inventory> FromTopology(const std::vector<topology::Gpu>& gpus, std::string source) {
  Inventory inv;
  inv.source = std::move(source);
  for (const topology::Gpu& g : gpus) {
    if (g.memory_bytes == 0) {
      return FailedPreconditionError(
          "gpu" + std::to_string(g.index) + " (" + g.pci_bus_id +
          ") has unknown memory size; vcuda-memory cannot be advertised without it (is " +
          kNvmlLibrary + " visible to the manager?)");
    }
    inv.gpus.push_back({static_cast<uint32_t>(g.index), g.uuid, g.memory_bytes, g.numa_node,
                        g.pci_bus_id, g.pci_root, g.pci_path, g.nvlinks, g.name,
                        g.compute_capability, g.driver_version});
  }
  if (inv.gpus.empty()) {
    return NotFoundError("no NVIDIA GPUs found (" + inv.source + ")");
  }
  return inv;
}

}  // namespace

Result<Inventory> LoadGpuFixture(const std::string& path) {
  auto fixture = topology::ReadFixture(path);
  if (!fixture.ok()) {
    return fixture.status().Annotate("--gpu-fixture " + path);
  }
  return FromTopology(fixture->gpus, "fixture " + path);
}

Result<Inventory> DiscoverNodeGpus() {
  auto nvml = topology::MakeNvmlSource();
  auto sysfs = topology::MakeSysfsSource();
  auto found = topology::DiscoverGpus(*nvml, *sysfs);
  if (!found.ok()) {
    return found.status().Annotate("GPU discovery");
  }
  auto inv = FromTopology(found->gpus, "nvml+sysfs");
  if (inv.ok()) {
    inv->notes = found->notes;
  }
  return inv;
}

}  // namespace vgpu::alloc

// Merging NVML over sysfs (see discovery.h).
#include "vgpu/topology/discovery.h"

#include <map>

namespace vgpu::topology {

Result<Discovered> DiscoverGpus(const GpuSource& nvml, const GpuSource& sysfs) {
  Discovered found;
  Result<std::vector<Gpu>> from_sysfs = sysfs.Discover();
  Result<std::vector<Gpu>> from_nvml = nvml.Discover();
  if (!from_nvml.ok() && !from_sysfs.ok()) {
    return UnavailableError("discovery: no source works: " + from_nvml.status().message() + "; " +
                            from_sysfs.status().message());
  }
  if (!from_nvml.ok()) {
    // Degraded: PCI tree only. Placement still works on cores; memory requests will not fit.
    found.notes.push_back("degraded=sysfs-only reason=\"" + from_nvml.status().message() +
                          "\" missing=uuid,memory,nvlink");
    found.gpus = std::move(*from_sysfs);
    return found;
  }
  std::map<std::string, const Gpu*> by_bus_id;
  if (from_sysfs.ok()) {
    for (const Gpu& gpu : *from_sysfs) {
      by_bus_id[gpu.pci_bus_id] = &gpu;
    }
  } else {
    found.notes.push_back("degraded=nvml-only reason=\"" + from_sysfs.status().message() +
                          "\" missing=pci_path,numa_node");
  }
  found.gpus = std::move(*from_nvml);
  for (Gpu& gpu : found.gpus) {
    auto it = by_bus_id.find(gpu.pci_bus_id);
    if (it == by_bus_id.end()) {
      if (from_sysfs.ok()) {
        found.notes.push_back("gpu=" + std::to_string(gpu.index) + " bus_id=" + gpu.pci_bus_id +
                              " note=\"seen by NVML, not in sysfs\"");
      }
      continue;
    }
    const Gpu& pci = *it->second;
    gpu.pci_root = pci.pci_root;
    gpu.pci_path = pci.pci_path;
    gpu.numa_node = pci.numa_node;
    // sysfs local_cpulist is what the kernel schedules by; NVML's mask is the fallback.
    if (!pci.cpu_affinity.empty()) {
      gpu.cpu_affinity = pci.cpu_affinity;
    }
    by_bus_id.erase(it);
  }
  for (const auto& [bus_id, gpu] : by_bus_id) {
    // E.g. a GPU bound to vfio-pci: sysfs lists it, NVML does not manage it. Not placeable.
    found.notes.push_back("bus_id=" + bus_id + " note=\"in sysfs, not managed by NVML\"");
  }
  return found;
}

}  // namespace vgpu::topology

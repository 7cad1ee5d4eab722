// GPU discovery through NVML (nvml_api.h: the declarations and the dlopen handle).

#include <array>
#include <cstring>
#include <map>
#include <utility>

#include "nvml_api.h"
#include "vgpu/topology/discovery.h"

namespace vgpu::topology {
namespace {

using namespace nvml;  // NOLINT: the NVML declarations of nvml_api.h

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {}
  std::string_view Name() const override { return "nvml"; }

  Result<std::vector<Gpu>> Discover() const override {
    Library lib(library_);
    VGPU_RETURN_IF_ERROR(nvml::Opened(lib, library_));
    NvmlApi api;
    VGPU_RETURN_IF_ERROR(nvml::Bound(BindDeviceWalk(lib, api) &&
                                         lib.Bind("nvmlDeviceGetName", api.GetName) &&
                                         lib.Bind("nvmlDeviceGetMemoryInfo", api.GetMemoryInfo) &&
                                         lib.Bind("nvmlDeviceGetPciInfo_v3", api.GetPciInfo),
                                     library_));
    lib.Bind("nvmlDeviceGetCpuAffinity", api.GetCpuAffinity);
    lib.Bind("nvmlDeviceGetNvLinkState", api.GetNvLinkState);
    lib.Bind("nvmlDeviceGetNvLinkRemotePciInfo_v2", api.GetNvLinkRemotePciInfo);
    lib.Bind("nvmlDeviceGetNvLinkRemoteDeviceType", api.GetNvLinkRemoteDeviceType);
    lib.Bind("nvmlDeviceGetCudaComputeCapability", api.GetComputeCapability);
    lib.Bind("nvmlSystemGetDriverVersion", api.GetDriverVersion);

    Session session(api);
    if (nvmlReturn_t rc = session.Start(); rc != NVML_SUCCESS) {
      return UnavailableError("nvml: nvmlInit_v2: " + Describe(api, rc));
    }
    unsigned count = 0;
    if (nvmlReturn_t rc = api.GetCount(&count); rc != NVML_SUCCESS) {
      return UnavailableError("nvml: nvmlDeviceGetCount_v2: " + Describe(api, rc));
    }
    const std::string driver_version = DriverVersion(api);  // one per node
    std::vector<Gpu> gpus;
    std::vector<std::vector<std::pair<std::string, unsigned>>> remotes(count);  // bus id, type
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t device = nullptr;
      if (nvmlReturn_t rc = api.GetHandleByIndex(i, &device); rc != NVML_SUCCESS) {
        return UnavailableError("nvml: GPU " + std::to_string(i) +
                                ": nvmlDeviceGetHandleByIndex_v2: " + Describe(api, rc));
      }
      Result<Gpu> gpu = ReadGpu(api, device, i, remotes[i]);
      if (!gpu.ok()) {
        return gpu.status();
      }
      gpu->driver_version = driver_version;
      gpus.push_back(std::move(*gpu));
    }
    ClassifyPeers(gpus, remotes);
    return gpus;
  }

 private:
  static Result<Gpu> ReadGpu(const NvmlApi& api, nvmlDevice_t device, unsigned index,
                             std::vector<std::pair<std::string, unsigned>>& remotes) {
    std::string where = "nvml: GPU " + std::to_string(index) + ": ";
    Gpu gpu;
    gpu.index = static_cast<int>(index);
    std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid{};
    if (nvmlReturn_t rc = api.GetUuid(device, uuid.data(), uuid.size()); rc != NVML_SUCCESS) {
      return UnavailableError(where + "nvmlDeviceGetUUID: " + Describe(api, rc));
    }
    gpu.uuid = uuid.data();
    std::array<char, NVML_DEVICE_NAME_V2_BUFFER_SIZE> name{};
    if (api.GetName(device, name.data(), name.size()) == NVML_SUCCESS) {
      gpu.name = name.data();
    }
    nvmlMemory_t memory{};
    if (nvmlReturn_t rc = api.GetMemoryInfo(device, &memory); rc != NVML_SUCCESS) {
      return UnavailableError(where + "nvmlDeviceGetMemoryInfo: " + Describe(api, rc));
    }
    gpu.memory_bytes = memory.total;
    int major = 0, minor = 0;
    if (api.GetComputeCapability != nullptr &&
        api.GetComputeCapability(device, &major, &minor) == NVML_SUCCESS) {
      gpu.compute_capability = std::to_string(major) + "." + std::to_string(minor);
    }
    nvmlPciInfo_t pci{};
    if (nvmlReturn_t rc = api.GetPciInfo(device, &pci); rc != NVML_SUCCESS) {
      return UnavailableError(where + "nvmlDeviceGetPciInfo_v3: " + Describe(api, rc));
    }
    pci.busId[sizeof(pci.busId) - 1] = '\0';
    gpu.pci_bus_id = CanonicalBusId(pci.busId);
    if (api.GetCpuAffinity != nullptr) {
      // nvmlDeviceGetCpuAffinity fills an array of unsigned long, bit i = CPU i.
      std::array<unsigned long, 16> mask{};  // 1024 CPUs
      if (api.GetCpuAffinity(device, mask.size(), mask.data()) == NVML_SUCCESS) {
        gpu.cpu_affinity = CpuListFromMask(std::vector<uint64_t>(mask.begin(), mask.end()));
      }
    }
    if (api.GetNvLinkState == nullptr || api.GetNvLinkRemotePciInfo == nullptr) {
      return gpu;
    }
    // Per link: active? then where it ends. Links past the GPU's count answer INVALID_ARGUMENT,
    // GPUs without NVLink NOT_SUPPORTED (nvmlDeviceGetNvLinkState docs).
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = 0;
      nvmlReturn_t rc = api.GetNvLinkState(device, link, &active);
      if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) {
        break;
      }
      if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) {
        continue;
      }
      nvmlPciInfo_t remote{};
      if (api.GetNvLinkRemotePciInfo(device, link, &remote) != NVML_SUCCESS) {
        continue;
      }
      remote.busId[sizeof(remote.busId) - 1] = '\0';
      unsigned type = 0xFF;  // NVML_NVLINK_DEVICE_TYPE_UNKNOWN
      if (api.GetNvLinkRemoteDeviceType != nullptr &&
          api.GetNvLinkRemoteDeviceType(device, link, &type) != NVML_SUCCESS) {
        type = 0xFF;
      }
      remotes.emplace_back(CanonicalBusId(remote.busId), type);
    }
    return gpu;
  }

  // Aggregates links per remote. A remote is a GPU when NVML says so or when it is one of ours;
  // a switch when NVML says so or (older drivers) when it is not one of our GPUs.
  static void ClassifyPeers(
      std::vector<Gpu>& gpus,
      const std::vector<std::vector<std::pair<std::string, unsigned>>>& remotes) {
    std::map<std::string, int> ours;
    for (const Gpu& gpu : gpus) {
      ours[gpu.pci_bus_id] = gpu.index;
    }
    for (size_t i = 0; i < gpus.size(); ++i) {
      std::map<std::pair<std::string, NvLinkPeer::Kind>, int> counts;
      for (const auto& [bus_id, type] : remotes[i]) {
        bool is_gpu = type == NVML_NVLINK_DEVICE_TYPE_GPU ||
                      (type != NVML_NVLINK_DEVICE_TYPE_SWITCH && ours.contains(bus_id));
        counts[{bus_id, is_gpu ? NvLinkPeer::Kind::kGpu : NvLinkPeer::Kind::kSwitch}]++;
      }
      for (const auto& [key, links] : counts) {
        gpus[i].nvlinks.push_back(NvLinkPeer{key.first, key.second, links});
      }
    }
  }

  std::string library_;
};

}  // namespace

std::unique_ptr<GpuSource> MakeNvmlSource(std::string library) {
  return std::make_unique<NvmlSource>(std::move(library));
}

}  // namespace vgpu::topology

// NVML through dlopen. The few prototypes and structs used are declared here from the NVML API
// reference (docs.nvidia.com/deploy/nvml-api, nvml.h), so vgpu builds without the CUDA toolkit
// and runs on nodes without a driver (dlopen fails, the source reports Unavailable).
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <map>
#include <utility>

#include "vgpu/topology/discovery.h"

namespace vgpu::topology {
namespace {

// --- from nvml.h --------------------------------------------------------------------------
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;          // nvml.h of r535..r580
constexpr unsigned NVML_NVLINK_DEVICE_TYPE_GPU = 0x00;  // nvmlIntNvLinkDeviceType_t
constexpr unsigned NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02;
constexpr int NVML_FEATURE_ENABLED = 1;  // nvmlEnableState_t

struct nvmlPciInfo_t {   // nvmlPciInfo_st, the v3 layout (nvmlDeviceGetPciInfo_v3)
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
static_assert(sizeof(nvmlPciInfo_t) == 68);

struct nvmlMemory_t {  // nvmlMemory_st (v1: nvmlDeviceGetMemoryInfo)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// ------------------------------------------------------------------------------------------

// The entry points used; `required` ones must resolve, the rest degrade (older drivers lack
// nvmlDeviceGetNvLinkRemoteDeviceType: a remote that is not one of our GPUs is then a switch).
struct NvmlApi {
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*GetCount)(unsigned*) = nullptr;
  nvmlReturn_t (*GetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetUuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*GetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*GetCpuAffinity)(nvmlDevice_t, unsigned, unsigned long*) = nullptr;
  nvmlReturn_t (*GetNvLinkState)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*GetNvLinkRemotePciInfo)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*GetNvLinkRemoteDeviceType)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*GetComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*GetDriverVersion)(char*, unsigned) = nullptr;
};

// Owns the dlopen handle; closes it on every path.
class Library {
 public:
  explicit Library(const std::string& path)
      : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle_ != nullptr) {
      dlclose(handle_);
    }
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* handle() const { return handle_; }
  template <typename Fn>
  bool Bind(const char* symbol, Fn& out) const {
    out = reinterpret_cast<Fn>(dlsym(handle_, symbol));
    return out != nullptr;
  }

 private:
  void* handle_;
};

// Pairs nvmlInit_v2 with nvmlShutdown.
class Session {
 public:
  explicit Session(const NvmlApi& api) : api_(api) {}
  ~Session() {
    if (active_) {
      api_.Shutdown();
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  nvmlReturn_t Start() {
    nvmlReturn_t rc = api_.Init();
    active_ = rc == NVML_SUCCESS;
    return rc;
  }

 private:
  const NvmlApi& api_;
  bool active_ = false;
};

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {}
  std::string_view Name() const override { return "nvml"; }

  Result<std::vector<Gpu>> Discover() const override {
    Library lib(library_);
    if (lib.handle() == nullptr) {
      const char* why = dlerror();
      return UnavailableError("nvml: dlopen " + library_ + ": " + (why ? why : "failed"));
    }
    NvmlApi api;
    bool bound = lib.Bind("nvmlInit_v2", api.Init) && lib.Bind("nvmlShutdown", api.Shutdown) &&
                 lib.Bind("nvmlErrorString", api.ErrorString) &&
                 lib.Bind("nvmlDeviceGetCount_v2", api.GetCount) &&
                 lib.Bind("nvmlDeviceGetHandleByIndex_v2", api.GetHandleByIndex) &&
                 lib.Bind("nvmlDeviceGetUUID", api.GetUuid) &&
                 lib.Bind("nvmlDeviceGetName", api.GetName) &&
                 lib.Bind("nvmlDeviceGetMemoryInfo", api.GetMemoryInfo) &&
                 lib.Bind("nvmlDeviceGetPciInfo_v3", api.GetPciInfo);
    if (!bound) {
      return UnavailableError("nvml: " + library_ + " lacks a required entry point");
    }
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
    std::string driver_version;  // one per node; informational, so a failure leaves it empty
    std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> version{};
    if (api.GetDriverVersion != nullptr &&
        api.GetDriverVersion(version.data(), version.size()) == NVML_SUCCESS) {
      driver_version = version.data();
    }
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
  static std::string Describe(const NvmlApi& api, nvmlReturn_t rc) {
    const char* text = api.ErrorString(rc);
    return std::string(text ? text : "unknown") + " (" + std::to_string(rc) + ")";
  }

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

// NVML through dlopen, shared by the topology's sources (nvml_source.cc: discovery once;
// nvml_load_source.cc: utilization and clocks once a second). The few prototypes and structs
// used are declared here from the NVML API reference (docs.nvidia.com/deploy/nvml-api, nvml.h),
// so vgpu builds without the CUDA toolkit and runs on nodes without a driver (dlopen fails, the
// source reports Unavailable).
#pragma once

#include <dlfcn.h>

#include <array>
#include <string>

#include "vgpu/status.h"

namespace vgpu::topology::nvml {

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

struct nvmlUtilization_t {  // nvmlUtilization_st (nvmlDeviceGetUtilizationRates)
  unsigned int gpu;         // percent of the last sample period a kernel ran
  unsigned int memory;      // percent of it device memory was read or written
};
constexpr int NVML_CLOCK_SM = 1;  // nvmlClockType_t

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
  nvmlReturn_t (*GetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*GetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*GetEnforcedPowerLimit)(nvmlDevice_t, unsigned*) = nullptr;  // mW
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

// Unavailable, with dlerror()'s reason, when `lib` (opened from `library`) did not open.
inline Status Opened(const Library& lib, const std::string& library) {
  if (lib.handle() != nullptr) {
    return OkStatus();
  }
  const char* why = dlerror();
  return UnavailableError("nvml: dlopen " + library + ": " + (why ? why : "failed"));
}

// Unavailable when a source's required entry points did not all resolve (`bound` false).
inline Status Bound(bool bound, const std::string& library) {
  return bound ? OkStatus()
               : UnavailableError("nvml: " + library + " lacks a required entry point");
}

// Binds what every NVML source needs: the session and the walk over the GPUs by UUID. False
// when one is missing (not an NVML library).
inline bool BindDeviceWalk(const Library& lib, NvmlApi& api) {
  return lib.Bind("nvmlInit_v2", api.Init) && lib.Bind("nvmlShutdown", api.Shutdown) &&
         lib.Bind("nvmlErrorString", api.ErrorString) &&
         lib.Bind("nvmlDeviceGetCount_v2", api.GetCount) &&
         lib.Bind("nvmlDeviceGetHandleByIndex_v2", api.GetHandleByIndex) &&
         lib.Bind("nvmlDeviceGetUUID", api.GetUuid);
}

// "<nvmlErrorString> (<code>)" for an error message.
inline std::string Describe(const NvmlApi& api, nvmlReturn_t rc) {
  const char* text = api.ErrorString(rc);
  return std::string(text ? text : "unknown") + " (" + std::to_string(rc) + ")";
}

// The node's driver version, "" when the entry point is missing or fails (informational).
inline std::string DriverVersion(const NvmlApi& api) {
  std::array<char, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE> version{};
  if (api.GetDriverVersion == nullptr ||
      api.GetDriverVersion(version.data(), version.size()) != NVML_SUCCESS) {
    return "";
  }
  return version.data();
}

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

}  // namespace vgpu::topology::nvml

#include "vgpu/health/nvml_xid_source.h"

#include <dlfcn.h>

#include <cstdio>

namespace vgpu::health {

// The few NVML declarations we need, as documented in the NVML API Reference (nvml.h of the
// CUDA toolkit / driver; "Device Queries", "Event Handling Methods"). Opaque handles are
// pointers; nvmlReturn_t is an int-sized enum.
namespace nvml {
using Return = int;
using Device = struct nvmlDevice_st*;
using EventSet = struct nvmlEventSet_st*;
struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
constexpr Return kSuccess = 0;                                     // NVML_SUCCESS
constexpr Return kNotSupported = 3;                                // NVML_ERROR_NOT_SUPPORTED
constexpr Return kTimeout = 10;                                    // NVML_ERROR_TIMEOUT
constexpr unsigned long long kEventTypeXidCriticalError = 0x8ULL;  // nvmlEventTypeXidCriticalError
constexpr unsigned kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
}  // namespace nvml

struct NvmlXidSource::Api {
  nvml::Return (*Init)();                                           // nvmlInit_v2
  nvml::Return (*Shutdown)();                                       // nvmlShutdown
  const char* (*ErrorString)(nvml::Return);                         // nvmlErrorString
  nvml::Return (*DeviceGetCount)(unsigned*);                        // nvmlDeviceGetCount_v2
  nvml::Return (*DeviceGetHandleByIndex)(unsigned, nvml::Device*);  // nvmlDeviceGetHandleByIndex_v2
  nvml::Return (*DeviceGetHandleByUUID)(const char*, nvml::Device*);
  nvml::Return (*DeviceGetUUID)(nvml::Device, char*, unsigned);
  nvml::Return (*DeviceGetMemoryInfo)(nvml::Device, nvml::Memory*);
  nvml::Return (*EventSetCreate)(nvml::EventSet*);
  nvml::Return (*DeviceRegisterEvents)(nvml::Device, unsigned long long, nvml::EventSet);
  nvml::Return (*EventSetWait)(nvml::EventSet, nvml::EventData*, unsigned);  // nvmlEventSetWait_v2
  nvml::Return (*EventSetFree)(nvml::EventSet);
};

namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  return *out != nullptr;
}

}  // namespace

NvmlXidSource::NvmlXidSource(std::string library)
    : library_(std::move(library)), api_(std::make_unique<Api>()) {}

NvmlXidSource::~NvmlXidSource() {
  if (event_set_ != nullptr) api_->EventSetFree(static_cast<nvml::EventSet>(event_set_));
  if (initialized_) api_->Shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

Result<std::vector<std::string>> NvmlXidSource::Start() {
  handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    return UnavailableError("cannot load " + library_ + " (" + dlerror() +
                            "); GPU health checks are off");
  }
  Api& a = *api_;
  const bool ok = Resolve(handle_, "nvmlInit_v2", &a.Init) &&
                  Resolve(handle_, "nvmlShutdown", &a.Shutdown) &&
                  Resolve(handle_, "nvmlErrorString", &a.ErrorString) &&
                  Resolve(handle_, "nvmlDeviceGetCount_v2", &a.DeviceGetCount) &&
                  Resolve(handle_, "nvmlDeviceGetHandleByIndex_v2", &a.DeviceGetHandleByIndex) &&
                  Resolve(handle_, "nvmlDeviceGetHandleByUUID", &a.DeviceGetHandleByUUID) &&
                  Resolve(handle_, "nvmlDeviceGetUUID", &a.DeviceGetUUID) &&
                  Resolve(handle_, "nvmlDeviceGetMemoryInfo", &a.DeviceGetMemoryInfo) &&
                  Resolve(handle_, "nvmlEventSetCreate", &a.EventSetCreate) &&
                  Resolve(handle_, "nvmlDeviceRegisterEvents", &a.DeviceRegisterEvents) &&
                  Resolve(handle_, "nvmlEventSetWait_v2", &a.EventSetWait) &&
                  Resolve(handle_, "nvmlEventSetFree", &a.EventSetFree);
  if (!ok) return UnavailableError(library_ + ": missing NVML entry point " + dlerror());
  nvml::Return rc = a.Init();
  if (rc != nvml::kSuccess)
    return UnavailableError(std::string("nvmlInit_v2: ") + a.ErrorString(rc));
  initialized_ = true;
  nvml::EventSet set = nullptr;
  rc = a.EventSetCreate(&set);
  if (rc != nvml::kSuccess) {
    return UnavailableError(std::string("nvmlEventSetCreate: ") + a.ErrorString(rc));
  }
  event_set_ = set;
  unsigned count = 0;
  rc = a.DeviceGetCount(&count);
  if (rc != nvml::kSuccess) {
    return UnavailableError(std::string("nvmlDeviceGetCount_v2: ") + a.ErrorString(rc));
  }
  std::vector<std::string> uuids;
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device dev = nullptr;
    char uuid[nvml::kUuidBufferSize] = {};
    rc = a.DeviceGetHandleByIndex(i, &dev);
    if (rc == nvml::kSuccess) rc = a.DeviceGetUUID(dev, uuid, sizeof(uuid));
    if (rc != nvml::kSuccess) {
      return UnavailableError("GPU " + std::to_string(i) + ": " + a.ErrorString(rc));
    }
    rc = a.DeviceRegisterEvents(dev, nvml::kEventTypeXidCriticalError, set);
    if (rc == nvml::kNotSupported) {
      // As NVIDIA's plugin does: a GPU that cannot report XIDs is not health-checked.
      std::fprintf(stderr, "vgpu-health: level=warn msg=\"xid events not supported\" gpu=%s\n",
                   uuid);
      continue;
    }
    if (rc != nvml::kSuccess) {
      return UnavailableError(std::string("nvmlDeviceRegisterEvents ") + uuid + ": " +
                              a.ErrorString(rc));
    }
    uuids.emplace_back(uuid);
  }
  return uuids;
}

Result<std::optional<XidEvent>> NvmlXidSource::Wait(std::chrono::milliseconds timeout) {
  if (event_set_ == nullptr) return FailedPreconditionError("NVML xid source not started");
  nvml::EventData data{};
  nvml::Return rc = api_->EventSetWait(static_cast<nvml::EventSet>(event_set_), &data,
                                       static_cast<unsigned>(timeout.count()));
  if (rc == nvml::kTimeout) return std::optional<XidEvent>();
  if (rc != nvml::kSuccess) {
    return UnavailableError(std::string("nvmlEventSetWait_v2: ") + api_->ErrorString(rc));
  }
  if (data.eventType != nvml::kEventTypeXidCriticalError) return std::optional<XidEvent>();
  char uuid[nvml::kUuidBufferSize] = {};
  rc = api_->DeviceGetUUID(data.device, uuid, sizeof(uuid));
  // An event whose device cannot be named is treated like a failed wait: all GPUs suspect.
  XidEvent event{rc == nvml::kSuccess ? uuid : "", data.eventData};
  return std::optional<XidEvent>(event);
}

Status NvmlXidSource::Probe(const std::string& gpu_uuid) {
  if (!initialized_) return FailedPreconditionError("NVML not initialised");
  nvml::Device dev = nullptr;
  nvml::Return rc = api_->DeviceGetHandleByUUID(gpu_uuid.c_str(), &dev);
  nvml::Memory mem{};
  if (rc == nvml::kSuccess) rc = api_->DeviceGetMemoryInfo(dev, &mem);
  if (rc != nvml::kSuccess) {
    return UnavailableError("probe " + gpu_uuid + ": " + api_->ErrorString(rc));
  }
  return OkStatus();
}

}  // namespace vgpu::health

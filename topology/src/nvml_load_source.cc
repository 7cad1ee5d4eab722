// GpuLoadSource through NVML (gpu_load.h; nvml_api.h: the declarations and the dlopen handle).
#include <array>
#include <utility>

#include "nvml_api.h"
#include "vgpu/topology/gpu_load.h"

namespace vgpu::topology {
namespace {

using namespace nvml;  // NOLINT: the NVML declarations of nvml_api.h

class NvmlLoadSource final : public GpuLoadSource {
 public:
  explicit NvmlLoadSource(const std::string& library)
      : lib_(library), session_(api_), library_(library) {}

  Status Open() {
    VGPU_RETURN_IF_ERROR(nvml::Opened(lib_, library_));
    VGPU_RETURN_IF_ERROR(
        nvml::Bound(BindDeviceWalk(lib_, api_) &&
                        lib_.Bind("nvmlDeviceGetUtilizationRates", api_.GetUtilizationRates) &&
                        lib_.Bind("nvmlDeviceGetClockInfo", api_.GetClockInfo),
                    library_));
    lib_.Bind("nvmlDeviceGetEnforcedPowerLimit", api_.GetEnforcedPowerLimit);
    lib_.Bind("nvmlSystemGetDriverVersion", api_.GetDriverVersion);
    if (nvmlReturn_t rc = session_.Start(); rc != NVML_SUCCESS) {
      return UnavailableError("nvml: nvmlInit_v2: " + Describe(api_, rc));
    }
    driver_version_ = nvml::DriverVersion(api_);
    return OkStatus();
  }

  Result<std::vector<GpuLoadSample>> Sample() override {
    unsigned count = 0;
    if (nvmlReturn_t rc = api_.GetCount(&count); rc != NVML_SUCCESS) {
      return UnavailableError("nvml: nvmlDeviceGetCount_v2: " + Describe(api_, rc));
    }
    std::vector<GpuLoadSample> out;
    nvmlReturn_t last = NVML_SUCCESS;
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t device = nullptr;
      std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> uuid{};
      nvmlUtilization_t util{};
      unsigned mhz = 0;
      nvmlReturn_t rc = api_.GetHandleByIndex(i, &device);
      if (rc == NVML_SUCCESS) rc = api_.GetUuid(device, uuid.data(), uuid.size());
      if (rc == NVML_SUCCESS) rc = api_.GetUtilizationRates(device, &util);
      if (rc == NVML_SUCCESS) rc = api_.GetClockInfo(device, NVML_CLOCK_SM, &mhz);
      if (rc != NVML_SUCCESS) {
        last = rc;
        continue;
      }
      GpuLoadSample s{uuid.data(), util.gpu, mhz, 0};
      unsigned limit = 0;
      if (api_.GetEnforcedPowerLimit != nullptr &&
          api_.GetEnforcedPowerLimit(device, &limit) == NVML_SUCCESS) {
        s.power_limit_mw = limit;
      }
      out.push_back(std::move(s));
    }
    if (out.empty() && last != NVML_SUCCESS) {
      return UnavailableError("nvml: no GPU could be read: " + Describe(api_, last));
    }
    return out;
  }

  std::string DriverVersion() const override { return driver_version_; }

 private:
  // Declared in this order: the session (nvmlShutdown) ends before the library is closed.
  Library lib_;
  NvmlApi api_;
  Session session_;
  std::string library_;
  std::string driver_version_;
};

}  // namespace

Result<std::unique_ptr<GpuLoadSource>> OpenNvmlLoadSource(const std::string& library) {
  auto source = std::make_unique<NvmlLoadSource>(library);
  VGPU_RETURN_IF_ERROR(source->Open());
  return std::unique_ptr<GpuLoadSource>(std::move(source));
}

}  // namespace vgpu::topology

#include "shim/compute/sm_clock.h"

#include <dlfcn.h>

#include "vgpu/nvidia_libraries.h"

namespace vgpu::shim::compute {
namespace {

// nvml.h: NVML_SUCCESS = 0; nvmlClockType_t NVML_CLOCK_SM = 1.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;

template <typename Fn>
Fn Sym(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

NvmlClock::~NvmlClock() {
  if (lib_ != nullptr) {
    if (shutdown_ != nullptr) {
      shutdown_();
    }
    dlclose(lib_);
  }
}

bool NvmlClock::Bind(const char* uuid) {
  if (lib_ != nullptr) {
    return dev_ != nullptr;
  }
  lib_ = dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    return false;
  }
  auto init = Sym<InitFn>(lib_, "nvmlInit_v2");
  auto by_uuid = Sym<ByUuidFn>(lib_, "nvmlDeviceGetHandleByUUID");
  auto by_index = Sym<ByIndexFn>(lib_, "nvmlDeviceGetHandleByIndex_v2");
  auto count = Sym<CountFn>(lib_, "nvmlDeviceGetCount_v2");
  clock_info_ = Sym<ClockInfoFn>(lib_, "nvmlDeviceGetClockInfo");
  if (init == nullptr || clock_info_ == nullptr || init() != kNvmlSuccess) {
    return false;
  }
  shutdown_ = Sym<ShutdownFn>(lib_, "nvmlShutdown");
  if (uuid != nullptr && by_uuid != nullptr && by_uuid(uuid, &dev_) == kNvmlSuccess) {
    return true;
  }
  dev_ = nullptr;
  unsigned n = 0;
  if (count != nullptr && by_index != nullptr && count(&n) == kNvmlSuccess && n == 1 &&
      by_index(0, &dev_) == kNvmlSuccess) {
    return true;
  }
  dev_ = nullptr;
  return false;
}

uint32_t NvmlClock::SmMhz() {
  unsigned mhz = 0;
  if (dev_ == nullptr || clock_info_(dev_, kNvmlClockSm, &mhz) != kNvmlSuccess) {
    return 0;
  }
  return mhz;
}

}  // namespace vgpu::shim::compute

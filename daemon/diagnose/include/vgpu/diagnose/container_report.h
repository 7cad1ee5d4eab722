// `vgpuctl diagnose --container`, run inside a container with the container's environment: the
// enforcement actually in force for processes started here — host (module: /dev/nvidia* are
// vgpu.ko's proxy nodes; shim: LD_PRELOAD names libvgpu-shim.so and VGPU_CONFIG is set; or
// none), the memory quota, the compute share and mode, and whether the compute controller runs
// and if not why. Shim settings are read with the shim's own parser (shim/preload/config.h).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>

#include "vgpu/diagnose/report.h"

namespace vgpu::diagnose {

struct DeviceNode {
  bool is_char = false;
  unsigned major = 0;
  unsigned minor = 0;
};
// Stat of a device node; injectable because fixtures cannot mknod.
using StatDeviceFn = std::optional<DeviceNode> (*)(const std::filesystem::path& p);
std::optional<DeviceNode> StatDevice(const std::filesystem::path& p);

using GetEnvFn = const char* (*)(const char*);

struct ContainerInputs {
  std::filesystem::path root = "/";  // dev/, proc/devices, sys/class/vgpu under it
  GetEnvFn getenv_fn = nullptr;      // the container's environment (nullptr: ::getenv)
  StatDeviceFn stat_fn = StatDevice;
};

Report ContainerReport(const ContainerInputs& in);

}  // namespace vgpu::diagnose

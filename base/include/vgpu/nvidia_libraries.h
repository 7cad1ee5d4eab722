// The NVIDIA driver's user-space libraries vgpu opens by name (dlopen, found through the ld
// cache): the one spelling of each name, for every part that opens one (the manager's NVML
// sources, the shim's SM clock, the topology tool) or names it in a message.
#pragma once

namespace vgpu {

// NVML, the driver's management library, by its soname (the name the driver installs for
// programs to load; libnvidia-ml.so without the version is only a development link).
inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

}  // namespace vgpu

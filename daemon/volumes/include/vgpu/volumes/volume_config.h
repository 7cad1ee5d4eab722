// --volume-config: which driver libraries and binaries go into which vdriver volume.
// The format is tkestack/gpu-manager's build/volume.conf, plus two optional keys:
//
// {"volume": [{"name": "nvidia", "base": "/etc/vgpu/vdriver", "mode": "ro",
//              "mount_path": "/usr/local/nvidia",             (optional; container path)
//              "components": {"binaries": ["nvidia-smi"], "libraries": ["libcuda.so"]},
//              "blacklist": ["libnvidia-gtk*"],               (optional; fnmatch(3) globs)
//              "cuda_shim": true}]}                            (optional; default true)
//
// A library item matches ld cache names equal to it or extending it after a dot ("libcuda.so"
// matches libcuda.so and libcuda.so.1, not libcudart.so). The blacklist is matched against the
// ld cache name and the real file name of each library, and against binary names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::volumes {

struct VolumeSpec {
  std::string name;
  std::string base;  // host directory holding <base>/<name>/{bin,lib,lib64}
  std::string mode = "ro";
  std::string mount_path;  // where the device plugin mounts it in containers
  std::vector<std::string> binaries;
  std::vector<std::string> libraries;
  std::vector<std::string> blacklist;
  bool cuda_shim = true;  // in shim mode, libcuda.so* of this volume resolves to the shim
};

struct VolumeConfig {
  std::vector<VolumeSpec> volumes;
};

// Errors name the key path, e.g. "--volume-config: volume[1].components.libraries[0]: not a
// string".
Result<VolumeConfig> ParseVolumeConfig(std::string_view json_text);
Result<VolumeConfig> LoadVolumeConfig(const std::string& path);

bool LibraryItemMatches(std::string_view item, std::string_view cache_name);
bool Blacklisted(const VolumeSpec& spec, std::string_view name);

}  // namespace vgpu::volumes

// Mirrors the driver's libraries and binaries into the vdriver tree the device plugin mounts
// into containers: <base>/<name>/{bin,lib,lib64}, 32-bit libraries in lib/, 64-bit in lib64/
// (decided from each file's ELF class), each real file under its own name plus its DT_SONAME
// and ld cache name as relative symlinks.
//
// Shim mode: every libcuda.so* name in lib64/ is a symlink to libvgpu-shim.so (a copy of
// --shim-library), and the real libcuda (the one whose soname is libcuda.so.1) is installed as
// lib64/libcuda.so.orig. The shim finds the original next to itself: dirname(dladdr(shim)) +
// "/libcuda.so.orig" (kShimOriginalName). 32-bit libcuda stays the original (the shim is 64-bit).
//
// Idempotent and safe while containers use the tree: directories are never replaced (bind
// mounts keep pointing at them); each entry is written under a temporary name and rename(2)d
// over the old one, so a process sees the old or the new file, never a partial one, and a
// running process keeps its mapped old inode. Files are written first, then links, then stale
// entries are removed, so no link ever points at a missing file. Unchanged files (same size and
// mtime as the source) and links are left alone. A lock file serialises concurrent runs.
#pragma once

#include <string>
#include <vector>

#include "vgpu/status.h"
#include "vgpu/volumes/ld_cache.h"
#include "vgpu/volumes/volume_config.h"

namespace vgpu::volumes {

inline constexpr char kShimFileName[] = "libvgpu-shim.so";
inline constexpr char kShimOriginalName[] = "libcuda.so.orig";

struct MirrorOptions {
  // Root of the host's driver installation as seen by the manager ("/" or e.g. /host); ld cache
  // paths, symlinks in it and the search path all resolve inside it.
  std::string driver_root = "/";
  std::string ld_cache_file;  // default: <driver_root>/etc/ld.so.cache
  std::string ldconfig = "ldconfig";
  std::vector<std::string> search_path = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                          "/usr/bin",        "/sbin",          "/bin"};
  bool shim_mode = false;
  std::string shim_library;  // path of libvgpu-shim.so (in the manager's filesystem)
};

struct MirrorReport {
  int files_written = 0;
  int files_unchanged = 0;
  int links_written = 0;
  int links_unchanged = 0;
  int removed = 0;
  std::vector<std::string> missing;      // configured items found nowhere (driver versions vary)
  std::vector<std::string> blacklisted;  // names skipped because of the blacklist
};

Result<MirrorReport> MirrorVolume(const VolumeSpec& spec, const std::vector<LdCacheEntry>& cache,
                                  const MirrorOptions& options);
// Reads the ld cache once and mirrors every volume; stops at the first failing volume.
Result<std::vector<MirrorReport>> MirrorVolumes(const VolumeConfig& config,
                                                const MirrorOptions& options);

}  // namespace vgpu::volumes

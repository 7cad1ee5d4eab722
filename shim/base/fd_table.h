// Which file descriptors of this process are NVIDIA device files, and of which kind.
//
// The preload libraries learn an fd's kind at open() from the path (libcuda and NVML open literal
// paths, nvidia-rm-abi.md §1.1). An fd that appeared some other way (a missed open variant,
// inherited across exec, SCM_RIGHTS) is classified on first use from /proc/self/fd, so a missed
// open costs one readlink, never a wrong decision. Lookups are one relaxed atomic load: the cost
// on non-NVIDIA fds is what keeps the ioctl wrapper cheap.
#pragma once

#include <cstdint>

namespace vgpu::shim {

enum class DevKind : uint8_t {
  kUnknown = 0,  // not yet seen: classify from /proc/self/fd on first use
  kNone,         // not an NVIDIA node
  kCtl,          // /dev/nvidiactl
  kGpu,          // /dev/nvidiaN
  kUvm,          // /dev/nvidia-uvm
  kUvmTools,     // /dev/nvidia-uvm-tools
  kOther,  // /dev/nvidia-caps/*, /dev/nvidia-modeset, nvswitch...: passed through, not filtered
};

// The directory holding the NVIDIA nodes: "/dev", or $VGPU_DEV_DIR (a test seam: unit tests
// point the preload libraries at fake nodes). Read once.
const char* DevDir();

// Kind of a device path under `dev_dir`.
DevKind ClassifyPath(const char* path, const char* dev_dir);
inline DevKind ClassifyPath(const char* path) { return ClassifyPath(path, DevDir()); }

// True for kinds whose ioctls are traced or filtered.
inline bool IsNvidia(DevKind k) { return k >= DevKind::kCtl; }

const char* DevKindName(DevKind k);

class FdTable {
 public:
  static constexpr int kMaxTracked = 1 << 16;

  // Kind of `fd`, classifying from /proc/self/fd when it was never seen.
  DevKind Get(int fd);
  // Records the kind of a freshly opened or duplicated fd.
  void Set(int fd, DevKind kind);
  // Forgets `fd` (closed); returns its previous kind.
  DevKind Clear(int fd);
  // Forgets every fd (after fork in a child that must re-learn nothing, or in tests).
  void Reset();

 private:
  uint8_t kinds_[kMaxTracked] = {};  // DevKind, accessed with __atomic builtins
};

// The process-wide table shared by the wrappers of one preload library.
FdTable& ProcessFdTable();

}  // namespace vgpu::shim

// The RM ABI facts the preload libraries need outside the filter core, all taken from the core
// (kmod/core/abi/, the one definition of each; docs/nvidia-rm-abi.md, "Adding a driver branch"):
// the request word's encoding and the nested-pointer layout of the escapes that carry user
// pointers to parameter buffers, which the recorder saves.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kmod/core/abi/nv_escape.h"
#include "kmod/core/abi/nvos.h"

namespace vgpu::shim::rm {

inline constexpr uint32_t IocNr(unsigned long req) { return VCORE_IOC_NR(req); }
inline constexpr uint32_t IocSize(unsigned long req) { return VCORE_IOC_SIZE(req); }
// _IOWR('F', nr, size): how libcuda encodes every escape (nv-ioctl-numbers.h NV_IOCTL_MAGIC).
inline constexpr unsigned long IocEscape(uint32_t nr, uint32_t size) {
  return VCORE_IOWR(NV_IOCTL_MAGIC, nr, size);
}
// The largest size _IOC_SIZE carries.
inline constexpr uint32_t kIocSizeMax = VCORE_IOC_SIZE(~0u);

// One nested user buffer of an escape: the pointer's offset in the top-level struct and the
// buffer's length. `len_unknown` marks a length the ABI derives from data we do not model (an
// RM_ALLOC class whose parameters the core's tables do not give): callers read up to a cap,
// stopping at unmapped memory.
struct NestedPtr {
  size_t off;
  uint64_t ptr;
  size_t len;
  bool len_unknown;
};

// Alloc-parameter size of an RM_ALLOC class on the newest driver branch the core knows, 0 if its
// tables give none. RM derives it from hClass, ignoring paramsSize (alloc_free.c:110-145,
// nvidia-rm-abi.md §3 NVOS64).
size_t AllocParamsSize(uint32_t h_class);

// Nested buffers of one escape (nr, size) given its top-level bytes; returns how many were
// written to `out` (at most 2).
int NestedPointers(uint32_t nr, const uint8_t* top, size_t top_len, NestedPtr out[2]);

}  // namespace vgpu::shim::rm

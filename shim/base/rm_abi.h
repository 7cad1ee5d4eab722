// The few RM ABI facts the preload libraries need outside the filter core: escape numbers and
// the nested-pointer layout of the escapes that carry user pointers to parameter buffers.
// Source: nvidia-rm-abi.md §2-§4 (open-gpu-kernel-modules 580.142, nv_escape.h, nvos.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vgpu::shim::rm {

inline constexpr uint32_t IocNr(unsigned long req) { return req & 0xff; }
inline constexpr uint32_t IocSize(unsigned long req) { return (req >> 16) & 0x3fff; }
// _IOWR('F', nr, size): how libcuda encodes every escape (nv-ioctl-numbers.h NV_IOCTL_MAGIC).
inline constexpr unsigned long IocEscape(uint32_t nr, uint32_t size) {
  return (3ul << 30) | (static_cast<unsigned long>(size) << 16) | (0x46ul << 8) | nr;
}
inline constexpr uint32_t kIocSizeMax = 0x3fff;

inline constexpr uint32_t kEscRmAllocMemory = 0x27;
inline constexpr uint32_t kEscRmFree = 0x29;
inline constexpr uint32_t kEscRmControl = 0x2a;
inline constexpr uint32_t kEscRmAlloc = 0x2b;
inline constexpr uint32_t kEscRmVidHeapControl = 0x4a;
inline constexpr uint32_t kEscRmGetEventData = 0x52;
inline constexpr uint32_t kEscXfer = 0xd3;

// NV_ABSOLUTE_MAX_IOCTL_SIZE (kernel-open/common/inc/nv.h:70).
inline constexpr size_t kMaxIoctlSize = 16384;

// One nested user buffer of an escape: the pointer's offset in the top-level struct and the
// buffer's length. `len_unknown` marks a length the ABI derives from data we do not model (an
// RM_ALLOC class without a table row): callers read up to a cap, stopping at unmapped memory.
struct NestedPtr {
  size_t off;
  uint64_t ptr;
  size_t len;
  bool len_unknown;
};

// Alloc-parameter size of an RM_ALLOC class, 0 if not in the table. RM derives it from hClass,
// ignoring paramsSize (alloc_free.c:110-145, nvidia-rm-abi.md §3 NVOS64).
size_t AllocParamsSize(uint32_t h_class);

// Nested buffers of one escape (nr, size) given its top-level bytes; returns how many were
// written to `out` (at most 2).
int NestedPointers(uint32_t nr, const uint8_t* top, size_t top_len, NestedPtr out[2]);

}  // namespace vgpu::shim::rm

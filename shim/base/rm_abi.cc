#include "rm_abi.h"

#include <cstring>

#include "kmod/core/vcore.h"

namespace vgpu::shim::rm {
namespace {

template <typename T>
T Load(const uint8_t* p, size_t off) {
  T v;
  memcpy(&v, p + off, sizeof v);
  return v;
}

// NVOS21 and NVOS64 share the fields read here.
static_assert(offsetof(NVOS21_PARAMETERS, hClass) == offsetof(NVOS64_PARAMETERS, hClass));
static_assert(offsetof(NVOS21_PARAMETERS, pAllocParms) == offsetof(NVOS64_PARAMETERS, pAllocParms));

// The buffer of a top-level struct T whose pointer is at `ptr_off` and whose u32 length is at
// `len_off`, when both are set and the length is at most `max_len`.
template <typename T>
bool SizedBuffer(const uint8_t* top, size_t top_len, size_t ptr_off, size_t len_off,
                 uint32_t max_len, NestedPtr* out) {
  if (top_len != sizeof(T)) {
    return false;
  }
  const uint64_t ptr = Load<uint64_t>(top, ptr_off);
  const uint32_t len = Load<uint32_t>(top, len_off);
  if (ptr == 0 || len == 0 || len > max_len) {
    return false;
  }
  *out = {ptr_off, ptr, len, false};
  return true;
}

}  // namespace

size_t AllocParamsSize(uint32_t h_class) { return vcore_class_params_size(nullptr, h_class); }

int NestedPointers(uint32_t nr, const uint8_t* top, size_t top_len, NestedPtr out[2]) {
  int n = 0;
  switch (nr) {
    case NV_ESC_RM_ALLOC:
      if (top_len == sizeof(NVOS21_PARAMETERS) || top_len == sizeof(NVOS64_PARAMETERS)) {
        const size_t off = offsetof(NVOS64_PARAMETERS, pAllocParms);
        uint64_t ptr = Load<uint64_t>(top, off);
        size_t len = AllocParamsSize(Load<uint32_t>(top, offsetof(NVOS64_PARAMETERS, hClass)));
        if (ptr != 0) {
          out[n++] = {off, ptr, len, len == 0};
        }
      }
      break;
    case NV_ESC_RM_CONTROL:
      // paramsSize must equal the command's size exactly (the driver checks it).
      n += SizedBuffer<NVOS54_PARAMETERS>(top, top_len, offsetof(NVOS54_PARAMETERS, params),
                                          offsetof(NVOS54_PARAMETERS, paramsSize), UINT32_MAX,
                                          &out[n]);
      break;
    case NV_ESC_IOCTL_XFER_CMD:
      // The driver caps the payload at NV_ABSOLUTE_MAX_IOCTL_SIZE.
      n += SizedBuffer<nv_ioctl_xfer_t>(top, top_len, offsetof(nv_ioctl_xfer_t, ptr),
                                        offsetof(nv_ioctl_xfer_t, size), NV_ABSOLUTE_MAX_IOCTL_SIZE,
                                        &out[n]);
      break;
    case NV_ESC_RM_GET_EVENT_DATA:
      // The kernel writes an NvUnixEvent at pEvent.
      if (top_len == sizeof(NVOS41_PARAMETERS)) {
        const size_t off = offsetof(NVOS41_PARAMETERS, pEvent);
        uint64_t ptr = Load<uint64_t>(top, off);
        if (ptr != 0) {
          out[n++] = {off, ptr, sizeof(NvUnixEvent), false};
        }
      }
      break;
    default:
      break;
  }
  return n;
}

}  // namespace vgpu::shim::rm

#include "rm_abi.h"

#include <cstring>

namespace vgpu::shim::rm {
namespace {

template <typename T>
T Load(const uint8_t* p, size_t off) {
  T v;
  memcpy(&v, p + off, sizeof v);
  return v;
}

}  // namespace

size_t AllocParamsSize(uint32_t h_class) {
  switch (h_class) {
    case 0x0:
    case 0x1:
    case 0x41:  // NV01_ROOT*: NV0000_ALLOC_PARAMETERS
      return 120;
    case 0x80:  // NV01_DEVICE_0
      return 56;
    case 0x2080:  // NV20_SUBDEVICE_0
      return 4;
    case 0x3e:     // NV01_MEMORY_SYSTEM
    case 0x3f:     // NV01_MEMORY_LOCAL_PRIVILEGED
    case 0x40:     // NV01_MEMORY_LOCAL_USER
    case 0x50a0:   // NV50_MEMORY_VIRTUAL
      return 128;  // NV_MEMORY_ALLOCATION_PARAMS
    case 0xc2:     // NV01_MEMORY_LOCAL_PHYSICAL
    case 0x70:     // NV01_MEMORY_VIRTUAL
      return 24;
    case 0x71:  // NV01_MEMORY_SYSTEM_OS_DESCRIPTOR
      return 40;
    case 0xf8:  // NV_MEMORY_FABRIC
      return 48;
    case 0xde:  // RM_USER_SHARED_DATA
      return 8;
    case 0xa06c:  // KEPLER_CHANNEL_GROUP_A
      return 20;
    case 0x9067:  // FERMI_CONTEXT_SHARE_A
      return 12;
    case 0x90f1:  // FERMI_VASPACE_A
      return 56;
    default:
      break;
  }
  // GPFIFO channels 0x??6f from Volta on: NV_CHANNEL_ALLOC_PARAMS, 368 B in 580 (§6.3).
  if ((h_class & 0xff) == 0x6f && h_class >= 0xc36f && h_class <= 0xcfff) {
    return 368;
  }
  return 0;
}

int NestedPointers(uint32_t nr, const uint8_t* top, size_t top_len, NestedPtr out[2]) {
  int n = 0;
  switch (nr) {
    case kEscRmAlloc:
      // NVOS21 (32 B) and NVOS64 (48 B) share hClass@12 and pAllocParms@16.
      if (top_len == 32 || top_len == 48) {
        uint64_t ptr = Load<uint64_t>(top, 16);
        size_t len = AllocParamsSize(Load<uint32_t>(top, 12));
        if (ptr != 0) {
          out[n++] = {16, ptr, len, len == 0};
        }
      }
      break;
    case kEscRmControl:
      // NVOS54: params@16, paramsSize@24 (must equal the command's size exactly).
      if (top_len == 32) {
        uint64_t ptr = Load<uint64_t>(top, 16);
        uint32_t len = Load<uint32_t>(top, 24);
        if (ptr != 0 && len != 0) {
          out[n++] = {16, ptr, len, false};
        }
      }
      break;
    case kEscXfer:
      // nv_ioctl_xfer_t {cmd@0, size@4, ptr@8}; the driver caps size at 16384.
      if (top_len == 16) {
        uint64_t ptr = Load<uint64_t>(top, 8);
        uint32_t len = Load<uint32_t>(top, 4);
        if (ptr != 0 && len != 0 && len <= kMaxIoctlSize) {
          out[n++] = {8, ptr, len, false};
        }
      }
      break;
    case kEscRmGetEventData:
      // NVOS41 {pEvent@0}: the kernel writes a 16-byte NvUnixEvent there.
      if (top_len == 16) {
        uint64_t ptr = Load<uint64_t>(top, 0);
        if (ptr != 0) {
          out[n++] = {0, ptr, 16, false};
        }
      }
      break;
    default:
      break;
  }
  return n;
}

}  // namespace vgpu::shim::rm

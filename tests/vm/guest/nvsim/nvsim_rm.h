// Small helpers for issuing raw RM ioctls to nvsim (or the real driver) from guest tests.
#pragma once

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "tests/vm/nvsim/nvsim_abi.h"

namespace nvsim_test {

inline constexpr uint64_t kMiB = 1ull << 20;

// ioctl() result and errno of one raw call.
struct Rc {
  int ret;
  int err;
};

inline Rc RawIoctl(int fd, unsigned nr, void* p, size_t size) {
  errno = 0;
  int r = ioctl(fd, NV_IOCTL(nr, size), p);
  return {r, r < 0 ? errno : 0};
}

inline uint64_t Ptr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// RM_ALLOC (NVOS64); returns the RM status, -errno when ioctl() itself fails.
inline int64_t Alloc(int ctl, uint32_t client, uint32_t parent, uint32_t* handle, uint32_t cls,
                     void* params = nullptr) {
  nvos64 p{};
  p.hRoot = client;
  p.hObjectParent = parent;
  p.hObjectNew = handle ? *handle : 0;
  p.hClass = cls;
  p.pAllocParms = Ptr(params);
  Rc rc = RawIoctl(ctl, NV_ESC_RM_ALLOC, &p, sizeof(p));
  if (rc.ret) return -rc.err;
  if (handle) *handle = p.hObjectNew;
  return p.status;
}

inline int64_t AllocClient(int ctl, uint32_t* client) {
  *client = 0;
  return Alloc(ctl, 0, 0, client, NV01_ROOT_CLIENT);
}

inline int64_t Free(int ctl, uint32_t client, uint32_t parent, uint32_t obj) {
  nvos00 p{client, parent, obj, 0};
  Rc rc = RawIoctl(ctl, NV_ESC_RM_FREE, &p, sizeof(p));
  return rc.ret ? -rc.err : p.status;
}

inline int64_t Control(int ctl, uint32_t client, uint32_t obj, uint32_t cmd, void* params,
                       uint32_t size) {
  nvos54 p{};
  p.hClient = client;
  p.hObject = obj;
  p.cmd = cmd;
  p.params = Ptr(params);
  p.paramsSize = size;
  Rc rc = RawIoctl(ctl, NV_ESC_RM_CONTROL, &p, sizeof(p));
  return rc.ret ? -rc.err : p.status;
}

// Allocates vidmem of class 0x40; *size is in/out (RM returns the rounded size).
inline int64_t AllocVidmem(int ctl, uint32_t client, uint32_t device, uint32_t* handle,
                           uint64_t* size) {
  nv_memory_allocation_params mp{};
  mp.owner = client;
  mp.flags = 0x1c101;
  mp.alignment = 2 * kMiB;
  mp.size = *size;
  int64_t st = Alloc(ctl, client, device, handle, NV01_MEMORY_LOCAL_USER, &mp);
  *size = mp.size;
  return st;
}

// FB_GET_INFO_V2 for one index, in KiB; returns ~0u on failure.
inline uint32_t FbInfo(int ctl, uint32_t client, uint32_t subdevice, uint32_t index) {
  nv2080_fb_get_info_v2_params p{};
  p.fbInfoListSize = 1;
  p.fbInfoList[0].index = index;
  if (Control(ctl, client, subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)) != NV_OK)
    return ~0u;
  return p.fbInfoList[0].data;
}

// One of nvsim's module parameters (its counters, tests/vm/nvsim/README.md), ~0 if unreadable.
inline uint64_t NvsimParam(const std::string& name) {
  std::ifstream f("/sys/module/nvsim/parameters/" + name);
  uint64_t v = ~0ull;
  f >> v;
  return v;
}

// UVM_CREATE_EXTERNAL_RANGE of [va, va + length) on a UVM file: its rmStatus, or ~0u.
inline uint32_t UvmCreateRange(int uvm, uint64_t va, uint64_t length) {
  uvm_create_external_range_params p{};
  p.base = va;
  p.length = length;
  return ioctl(uvm, UVM_CREATE_EXTERNAL_RANGE, &p) != 0 ? ~0u : p.rmStatus;
}

// UVM_MAP_EXTERNAL_ALLOCATION of (client, memory) at [va, va + length) on GPU 0 (offset 0), as
// libcuda maps a cuMemAlloc: its rmStatus, or ~0u.
inline uint32_t UvmMapOnGpu0(int uvm, uint64_t va, uint64_t length, uint32_t client,
                             uint32_t memory) {
  auto p = std::make_unique<uvm_map_external_allocation_params>();
  std::memset(p.get(), 0, sizeof(*p));
  p->base = va;
  p->length = length;
  p->gpuAttributesCount = 1;
  std::memcpy(p->perGpuAttributes[0].gpuUuid, NVSIM_GPU_UUID_PREFIX,
              sizeof(NVSIM_GPU_UUID_PREFIX) - 1);  // GPU 0: index 0 in the last byte
  p->rmCtrlFd = -1;
  p->hClient = client;
  p->hMemory = memory;
  return ioctl(uvm, UVM_MAP_EXTERNAL_ALLOCATION, p.get()) != 0 ? ~0u : p->rmStatus;
}

}  // namespace nvsim_test

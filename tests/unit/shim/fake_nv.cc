// libvshim-fakenv.so: a fake NVIDIA RM driver for the shim's end-to-end unit tests. Preloaded
// AFTER libvgpu-shim.so, so the shim's "real" ioctl (dlsym RTLD_NEXT) lands here for files under
// $VGPU_DEV_DIR (plain files standing in for /dev/nvidiactl etc.). It models just what the
// tests drive: root client, device, subdevice, class-0x40 video memory from a 16 GiB heap
// (sizes rounded to 2 MiB, NV_ERR_NO_MEMORY when exhausted), RM_FREE of memory and of clients,
// FB_GET_INFO_V2, CHECK_VERSION_STR and NV_ESC_IOCTL_XFER_CMD. Layouts: nvidia-rm-abi.md §1.3,
// §3-§5. FAKENV_GPUS=N (default 1) plays a node of N GPUs, named as the driver names them
// (CARD_INFO, the NV0000 GPU lists, GET_ID_INFO_V2, ATTACH_IDS, ATTACH_GPUS_TO_FD: GpuIndexOf);
// class 0x3e system memory is counted (vshim_fakenv_sysmem_bytes), nothing allocated.
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "tests/unit/core/delta_branch.h"

namespace {

constexpr uint64_t kHeap = 16ull << 30;
constexpr uint64_t kGranule = 2ull << 20;

std::mutex mu;
uint64_t used = 0;
uint32_t next_client = 0xc1d00001;
std::map<std::pair<uint32_t, uint32_t>, uint64_t> memory;  // (client, handle) -> bytes
uint64_t sysmem_used = 0;
std::map<std::pair<uint32_t, uint32_t>, uint64_t> sysmem;  // class 0x3e, (client, handle) -> bytes
uint32_t attached_mask = 0;                                // GPUs an ATTACH_IDS or _TO_FD named

constexpr uint32_t kInvalidId = 0xffffffff;  // NV0000_CTRL_GPU_INVALID_ID

unsigned GpuCount() {
  const char* n = getenv("FAKENV_GPUS");
  unsigned v = n != nullptr ? static_cast<unsigned>(strtoul(n, nullptr, 10)) : 1;
  return v < 1 ? 1 : v > 8 ? 8 : v;
}

// GPU i sits at PCI 0000:(0x18 + i):00.0; its id is the driver's gpuGenerate32BitId of that
// address (domain << 16 | bus << 8 | device, src/nvidia/src/kernel/gpu/gpu.c). -1: no such GPU.
int GpuIndexOf(uint32_t id) {
  for (unsigned i = 0; i < GpuCount(); ++i) {
    if (id == ((0x18u + i) << 8)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool IsFake(int fd) {
  const char* dir = getenv("VGPU_DEV_DIR");
  if (dir == nullptr) {
    return false;
  }
  char link[64], target[512];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) {
    return false;
  }
  target[n] = '\0';
  return strncmp(target, dir, strlen(dir)) == 0;
}

template <typename T>
T Get(const void* p, size_t off) {
  T v;
  memcpy(&v, static_cast<const uint8_t*>(p) + off, sizeof v);
  return v;
}
template <typename T>
void Put(void* p, size_t off, T v) {
  memcpy(static_cast<uint8_t*>(p) + off, &v, sizeof v);
}

int RmAlloc(void* a, uint32_t size) {  // NVOS64 (48 B) or NVOS21 (32 B)
  uint32_t h_root = Get<uint32_t>(a, 0), h_new = Get<uint32_t>(a, 8), cls = Get<uint32_t>(a, 12);
  void* params = reinterpret_cast<void*>(Get<uint64_t>(a, 16));
  uint32_t status = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (cls == 0x41 || cls == 0 || cls == 1) {
    if (h_new == 0) {
      Put<uint32_t>(a, 8, next_client++);
    }
  } else if (cls == 0x3e) {  // NV01_MEMORY_SYSTEM: size @64, page-rounded and written back
    uint64_t size = (Get<uint64_t>(params, 64) + 4095) & ~uint64_t{4095};
    Put<uint64_t>(params, 64, size);
    sysmem_used += size;
    sysmem[{h_root, h_new}] = size;
  } else if (cls == 0x40) {
    uint64_t size = Get<uint64_t>(params, 64);
    size = (size + kGranule - 1) & ~(kGranule - 1);
    // FAKENV_INFLATE=N: the driver allocates N times what was asked, as if another thread had
    // changed the size between the filter's check and the driver's read.
    if (const char* inflate = getenv("FAKENV_INFLATE")) {
      size *= strtoull(inflate, nullptr, 10);
    }
    if (used + size > kHeap) {
      status = 0x51;  // NV_ERR_NO_MEMORY
    } else {
      used += size;
      Put<uint64_t>(params, 64, size);
      memory[{h_root, h_new}] = size;
    }
  }
  Put<uint32_t>(a, size == 48 ? 40 : 28, status);
  return 0;
}

// Drops what `held` records for the object (or, for the client itself, the whole client) from it
// and from `total`.
void FreeHeld(std::map<std::pair<uint32_t, uint32_t>, uint64_t>& held, uint64_t& total,
              uint32_t h_root, uint32_t h_old) {
  for (auto it = held.begin(); it != held.end();) {
    if (it->first.first == h_root && (h_old == h_root || it->first.second == h_old)) {
      total -= it->second;
      it = held.erase(it);
    } else {
      ++it;
    }
  }
}

int RmFree(void* a) {  // NVOS00
  uint32_t h_root = Get<uint32_t>(a, 0), h_old = Get<uint32_t>(a, 8);
  std::lock_guard<std::mutex> lock(mu);
  FreeHeld(memory, used, h_root, h_old);
  FreeHeld(sysmem, sysmem_used, h_root, h_old);
  Put<uint32_t>(a, 12, 0);
  return 0;
}

// The NV0000 GPU controls (ctrl0000gpu.h) over GpuIndexOf's node; an id it does not know is
// NV_ERR_INVALID_ARGUMENT, as in the driver. false: not one of them.
bool GpuControl(uint32_t cmd, void* params, uint32_t size, uint32_t* status) {
  const unsigned n = GpuCount();
  switch (cmd) {
    case 0x201:  // GET_ATTACHED_IDS: gpuIds[32]
    case 0x214:  // GET_PROBED_IDS: gpuIds[32], excludedGpuIds[32], gpuFlags[32]
      if (size < (cmd == 0x201 ? 128u : 384u)) {
        *status = 0x1f;
        return true;
      }
      for (unsigned i = 0, k = 0; i < 32; ++i) {  // the listed ids, then INVALID
        while (k < n && cmd == 0x201 && !(attached_mask >> k & 1)) {
          ++k;
        }
        Put<uint32_t>(params, 4 * i, k < n ? (0x18u + k++) << 8 : kInvalidId);
        if (cmd == 0x214) {
          Put<uint32_t>(params, 128 + 4 * i, kInvalidId);
          Put<uint32_t>(params, 256 + 4 * i, 0);
        }
      }
      return true;
    case 0x205:  // GET_ID_INFO_V2: gpuId, gpuFlags, deviceInstance, subDeviceInstance, ...
      if (size < 16 || GpuIndexOf(Get<uint32_t>(params, 0)) < 0) {
        *status = 0x1f;
        return true;
      }
      Put<uint32_t>(params, 8, static_cast<uint32_t>(GpuIndexOf(Get<uint32_t>(params, 0))));
      return true;
    case 0x215:  // ATTACH_IDS: gpuIds[32] up to INVALID, 0xffff = every probed GPU
      for (unsigned i = 0; i < 32 && 4 * i + 4 <= size; ++i) {
        const uint32_t id = Get<uint32_t>(params, 4 * i);
        if (id == kInvalidId) {
          break;
        }
        if (id == 0xffff) {
          attached_mask |= (1u << n) - 1;
          break;
        }
        if (GpuIndexOf(id) < 0) {
          *status = 0x1f;
          return true;
        }
        attached_mask |= 1u << GpuIndexOf(id);
      }
      return true;
    default:
      return false;
  }
}

// NV_ESC_CARD_INFO: the valid entries first (nv.c nvidia_read_card_info), 72 B each:
// valid@0, pci_info{domain@4, bus@8, slot@9, function@10}, gpu_id@16, minor_number@56.
int CardInfo(void* arg, uint32_t size) {
  memset(arg, 0, size);
  for (unsigned i = 0; i < GpuCount() && 72 * (i + 1) <= size; ++i) {
    uint8_t* e = static_cast<uint8_t*>(arg) + 72 * i;
    e[0] = 1;
    e[8] = static_cast<uint8_t>(0x18 + i);
    Put<uint32_t>(e, 16, (0x18u + i) << 8);
    Put<uint32_t>(e, 56, i);
  }
  return 0;
}

// NV_ESC_ATTACH_GPUS_TO_FD: NvU32 gpu_id[], 0 skipped; an unknown id is -ENODEV (nv.c).
int AttachGpusToFd(const void* arg, uint32_t size) {
  std::lock_guard<std::mutex> lock(mu);
  uint32_t mask = 0;
  for (uint32_t off = 0; off + 4 <= size; off += 4) {
    const uint32_t id = Get<uint32_t>(arg, off);
    if (id == 0) {
      continue;
    }
    if (GpuIndexOf(id) < 0) {
      errno = ENODEV;
      return -1;
    }
    mask |= 1u << GpuIndexOf(id);
  }
  attached_mask |= mask;
  return 0;
}

int RmControl(void* a) {  // NVOS54
  uint32_t cmd = Get<uint32_t>(a, 8);
  void* params = reinterpret_cast<void*>(Get<uint64_t>(a, 16));
  uint32_t size = Get<uint32_t>(a, 24);
  uint32_t status = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (GpuControl(cmd, params, size, &status)) {
      Put<uint32_t>(a, 28, status);
      return 0;
    }
  }
  // FB_GET_INFO_V2, 1028 B, values in KiB; the made-up test branch serves it under another
  // number (tests/unit/core/delta_branch.h, NOT a driver branch).
  if (cmd == 0x20801303 || cmd == DELTA_TEST_CTRL_FB_GET_INFO_V2) {
    if (size != 1028) {
      status = 0x1f;
    } else {
      uint32_t n = Get<uint32_t>(params, 0);
      std::lock_guard<std::mutex> lock(mu);
      for (uint32_t i = 0; i < n && i < 128; ++i) {
        uint32_t index = Get<uint32_t>(params, 4 + 8 * i);
        uint32_t data = 0;
        switch (index) {
          case 0x08:  // TOTAL_RAM_SIZE
          case 0x09:  // HEAP_SIZE
          case 0x20:  // USABLE_RAM_SIZE
            data = static_cast<uint32_t>(kHeap >> 10);
            break;
          case 0x16:  // HEAP_FREE
            data = static_cast<uint32_t>((kHeap - used) >> 10);
            break;
          default:
            data = 0;
        }
        Put<uint32_t>(params, 8 + 8 * i, data);
      }
    }
  }
  Put<uint32_t>(a, 28, status);
  return 0;
}

int FakeIoctl(int fd, unsigned long req, void* arg);

// NV_ESC_IOCTL_XFER_CMD as nvidia_ioctl (nv.c) runs it: the driver reads the 16-byte header
// {cmd@0, size@4, ptr@8} itself and runs the inner escape on ptr (size <= 16384, no nesting).
// FAKENV_XFER_REWRITE_CMD=N stores N into the header's cmd just before that read, once, in the
// first XFER that carries another cmd: a sibling thread's store between a filter's check of the
// header and the driver's own read, made deterministic.
int Xfer(int fd, void* hdr) {
  static bool rewritten = false;
  if (const char* rewrite = getenv("FAKENV_XFER_REWRITE_CMD")) {
    uint32_t to = static_cast<uint32_t>(strtoul(rewrite, nullptr, 0));
    std::lock_guard<std::mutex> lock(mu);
    if (!rewritten && Get<uint32_t>(hdr, 0) != to) {
      Put<uint32_t>(hdr, 0, to);
      rewritten = true;
    }
  }
  uint32_t cmd = Get<uint32_t>(hdr, 0), size = Get<uint32_t>(hdr, 4);
  if (cmd == 0xd3 || size > 16384) {
    errno = EINVAL;
    return -1;
  }
  return FakeIoctl(fd, (size << 16) | (0x46u << 8) | cmd,
                   reinterpret_cast<void*>(Get<uint64_t>(hdr, 8)));
}

int FakeIoctl(int fd, unsigned long req, void* arg) {
  uint32_t nr = req & 0xff, size = (req >> 16) & 0x3fff;
  if (nr == 0xd3 && size == 16) {
    return Xfer(fd, arg);
  }
  if (nr == 0x2b && (size == 48 || size == 32)) {
    return RmAlloc(arg, size);
  }
  if (nr == 0x29 && size == 16) {
    return RmFree(arg);
  }
  if (nr == 0x2a && size == 32) {
    return RmControl(arg);
  }
  if (nr == 0xc8 && size >= 72 && size % 72 == 0) {
    return CardInfo(arg, size);
  }
  if (nr == 0xd4) {
    return AttachGpusToFd(arg, size);
  }
  if (nr == 0xd2 && size == 72) {  // CHECK_VERSION_STR; FAKENV_VERSION plays another driver
    Put<uint32_t>(arg, 4, 0);
    const char* version = getenv("FAKENV_VERSION");
    snprintf(static_cast<char*>(arg) + 8, 64, "%s", version != nullptr ? version : "580.159.04");
    return 0;
  }
  return 0;  // UVM and everything else: accepted, no effect
}

}  // namespace

// What the fake driver holds in video memory, for a client to compare with what the shim charged.
extern "C" __attribute__((visibility("default"))) uint64_t vshim_fakenv_used_bytes() {
  std::lock_guard<std::mutex> lock(mu);
  return used;
}

// What the fake driver holds in system memory (class 0x3e), and which GPUs were attached.
extern "C" __attribute__((visibility("default"))) uint64_t vshim_fakenv_sysmem_bytes() {
  std::lock_guard<std::mutex> lock(mu);
  return sysmem_used;
}
extern "C" __attribute__((visibility("default"))) uint32_t vshim_fakenv_attached_mask() {
  std::lock_guard<std::mutex> lock(mu);
  return attached_mask;
}
// The driver's id of GPU `index` of the fake node (the client names the other GPU with it).
extern "C" __attribute__((visibility("default"))) uint32_t vshim_fakenv_gpu_id(uint32_t index) {
  return (0x18u + index) << 8;
}

extern "C" __attribute__((visibility("default"))) int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (IsFake(fd)) {
    return FakeIoctl(fd, req, arg);
  }
  return static_cast<int>(syscall(SYS_ioctl, fd, req, arg));
}

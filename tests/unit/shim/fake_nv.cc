// libvshim-fakenv.so: a fake NVIDIA RM driver for the shim's end-to-end unit tests. Preloaded
// AFTER libvgpu-shim.so, so the shim's "real" ioctl (dlsym RTLD_NEXT) lands here for files under
// $VGPU_DEV_DIR (plain files standing in for /dev/nvidiactl etc.). It models just what the
// tests drive: root client, device, subdevice, class-0x40 video memory from a 16 GiB heap
// (sizes rounded to 2 MiB, NV_ERR_NO_MEMORY when exhausted), RM_FREE of memory and of clients,
// FB_GET_INFO_V2, CHECK_VERSION_STR and NV_ESC_IOCTL_XFER_CMD. Layouts: nvidia-rm-abi.md §1.3,
// §3-§5.
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

int RmFree(void* a) {  // NVOS00
  uint32_t h_root = Get<uint32_t>(a, 0), h_old = Get<uint32_t>(a, 8);
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = memory.begin(); it != memory.end();) {
    if (it->first.first == h_root && (h_old == h_root || it->first.second == h_old)) {
      used -= it->second;
      it = memory.erase(it);
    } else {
      ++it;
    }
  }
  Put<uint32_t>(a, 12, 0);
  return 0;
}

int RmControl(void* a) {  // NVOS54
  uint32_t cmd = Get<uint32_t>(a, 8);
  void* params = reinterpret_cast<void*>(Get<uint64_t>(a, 16));
  uint32_t size = Get<uint32_t>(a, 24);
  uint32_t status = 0;
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

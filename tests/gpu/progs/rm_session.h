// An RM session of raw ioctls for the real-GPU measurement programs (rm_vaspace_mem.cc,
// rm_channel_mem.cc): client, device and subdevice on /dev/nvidiactl and /dev/nvidia0, the
// driver's own HEAP_FREE figure (NV2080_CTRL_CMD_FB_GET_INFO_V2, KiB), and the allocations those
// programs make with the parameters libcuda uses in the recorded corpus (tests/data/traces).
// No CUDA; the guest tests' helpers (tests/vm/guest/nvsim/nvsim_rm.h) issue the calls.
#pragma once
#include <cstdio>

#include "tests/vm/guest/nvsim/nvsim_rm.h"

namespace rm_session {

using namespace nvsim_test;  // NOLINT: RawIoctl, Alloc, Free, Control, FbInfo, kMiB

struct Rm {
  int ctl = -1, dev = -1;
  uint32_t client = 0, device = 0xc0de0001, subdevice = 0xc0de0002;
  uint32_t next = 0xc0de1000;

  bool Open() {
    ctl = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    dev = open("/dev/nvidia0", O_RDWR | O_CLOEXEC);
    if (ctl < 0 || dev < 0) return perror("open"), false;
    nv_ioctl_register_fd r{ctl};
    if (RawIoctl(dev, NV_ESC_REGISTER_FD, &r, sizeof(r)).ret) perror("REGISTER_FD");
    int64_t st = AllocClient(ctl, &client);
    nv0080_alloc_params dp{};
    if (st == NV_OK) st = Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp);
    uint32_t sp[1] = {0};
    if (st == NV_OK) st = Alloc(ctl, client, device, &subdevice, NV20_SUBDEVICE_0, sp);
    if (st != NV_OK) std::printf("session: status 0x%llx\n", static_cast<unsigned long long>(st));
    return st == NV_OK;
  }
  int64_t Free1(uint32_t parent, uint32_t h) { return Free(ctl, client, parent, h); }
  uint64_t HeapFreeKiB() {
    return FbInfo(ctl, client, subdevice, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE);
  }
  // FERMI_VASPACE_A under the device (flags 0: RM builds its page directory).
  int64_t Vaspace(uint32_t* h, uint32_t flags, uint64_t base) {
    nv_vaspace_alloc_params p{};
    p.flags = flags;
    p.vaBase = base;
    *h = next++;
    return Alloc(ctl, client, device, h, FERMI_VASPACE_A, &p);
  }
  // Memory of class 0x40 (video) or 0x3e (system) under the device.
  int64_t Mem(uint32_t* h, uint32_t cls, uint32_t owner, uint32_t flags, uint32_t attr,
              uint64_t size, uint64_t align) {
    nv_memory_allocation_params p{};
    p.owner = owner;
    p.type = cls == NV01_MEMORY_SYSTEM ? 13 : 0;
    p.flags = flags;
    p.attr = attr;
    p.size = size;
    p.alignment = align;
    *h = next++;
    return Alloc(ctl, client, device, h, cls, &p);
  }
  // libcuda's USERD/GPFIFO buffer: 2 MiB of video memory (class 0x40).
  int64_t ChannelBuffer(uint32_t* h) {
    return Mem(h, NV01_MEMORY_LOCAL_USER, client, 0x1c101, 0x18000000, 2 * kMiB, 2 * kMiB);
  }
  // libcuda's per-channel error notifier: 4 KiB of system memory (class 0x3e) owned by the device.
  int64_t ErrorNotifier(uint32_t* h) {
    return Mem(h, NV01_MEMORY_SYSTEM, device, 0xc001, 0x3a000000, 0x1000, 0);
  }
  // NV_ESC_RM_MAP_MEMORY_DMA (NVOS46) of hMemory into the virtual object hDma; flags 0 lets
  // RM choose the address (*dma_offset out), NVOS46_FLAGS_DMA_OFFSET_FIXED takes *dma_offset.
  int64_t MapDma(uint32_t h_dma, uint32_t h_memory, uint64_t length, uint32_t flags,
                 uint64_t* dma_offset) {
    struct {
      uint32_t hClient, hDevice, hDma, hMemory;
      uint64_t offset, length;
      uint32_t flags, flags2, kindOverride, pad0;
      uint64_t dmaOffset;
      uint32_t status, pad1;
    } m{};
    static_assert(sizeof(m) == 64);
    m.hClient = client;
    m.hDevice = device;
    m.hDma = h_dma;
    m.hMemory = h_memory;
    m.length = length;
    m.flags = flags;
    m.dmaOffset = *dma_offset;
    Rc rc = RawIoctl(ctl, 0x57, &m, sizeof(m));  // NV_ESC_RM_MAP_MEMORY_DMA
    if (rc.ret) return -rc.err;
    *dma_offset = m.dmaOffset;
    return m.status;
  }
};

inline constexpr uint32_t kNvos46DmaOffsetFixed = 1u << 15;

inline void Report(const char* what, uint64_t before, uint64_t after, unsigned n) {
  const double mib = (static_cast<double>(before) - static_cast<double>(after)) / 1024.0;
  std::printf("%-58s HEAP_FREE %llu -> %llu KiB: %.4f MiB, %.4f MiB each (n=%u)\n", what,
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(after), mib,
              n ? mib / n : 0.0, n);
  std::fflush(stdout);
}

}  // namespace rm_session

// Measures the driver's own video memory behind VA spaces (FERMI_VASPACE_A) and GR-engine TSGs
// made alone by raw RM calls (issue 17 F11.1's residue), on a real GPU: HEAP_FREE
// (NV2080_CTRL_CMD_FB_GET_INFO_V2, the driver's own figure, KiB) before and after each batch of
// objects. Parameters follow libcuda's own calls in the recorded corpus (tests/data/traces):
// its two VA spaces (flags 0x48 at base 1 MiB; defaults at base 20 GiB), its GR TSG, context
// share, USERD/GPFIFO buffer, error notifier and channel. No CUDA; plain ioctls on
// /dev/nvidiactl and /dev/nvidia0 through the guest tests' helpers (tests/vm/guest/nvsim).
// Results: docs/results/context-memory-h200.md.
//   build: g++ -std=c++20 -O2 -static -I. tests/gpu/progs/rm_vaspace_mem.cc -o rm-vaspace-mem
//   usage: rm-vaspace-mem [N]   (N VA spaces per batch, default 64)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/vm/guest/nvsim/nvsim_rm.h"

using namespace nvsim_test;  // NOLINT: RawIoctl, Alloc, Free, Control, FbInfo

namespace {

constexpr uint32_t kFermiVaspaceA = 0x90f1, kFermiContextShareA = 0x9067,
                   kHopperChannelGpfifoA = 0xc86f, kHopperComputeA = 0xcbc0;

struct VaspaceParams {  // NV_VASPACE_ALLOCATION_PARAMETERS (kmod/core/abi/classes.h)
  uint32_t index, flags;
  uint64_t vaSize, vaStartInternal, vaLimitInternal;
  uint32_t bigPageSize, pad0;
  uint64_t vaBase;
  uint32_t pasid, pad1;
};
static_assert(sizeof(VaspaceParams) == 56);

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
  int64_t Vaspace(uint32_t* h, uint32_t flags, uint64_t base) {
    VaspaceParams p{};
    p.flags = flags;
    p.vaBase = base;
    *h = next++;
    return Alloc(ctl, client, device, h, kFermiVaspaceA, &p);
  }
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
};

void Report(const char* what, uint64_t before, uint64_t after, unsigned n) {
  const double mib = (static_cast<double>(before) - static_cast<double>(after)) / 1024.0;
  std::printf("%-58s HEAP_FREE %llu -> %llu KiB: %.4f MiB, %.4f MiB each (n=%u)\n", what,
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(after), mib,
              n ? mib / n : 0.0, n);
}

// N VA spaces of one kind, then freed; returns how many the driver granted.
unsigned VaspaceBatch(Rm& rm, const char* what, uint32_t flags, uint64_t base, unsigned n) {
  std::vector<uint32_t> hs;
  const uint64_t before = rm.HeapFreeKiB();
  int64_t last = NV_OK;
  for (unsigned i = 0; i < n; ++i) {
    uint32_t h = 0;
    last = rm.Vaspace(&h, flags, base);
    if (last != NV_OK) break;
    hs.push_back(h);
    if (hs.size() == 1)
      Report((std::string(what) + ", the first").c_str(), before, rm.HeapFreeKiB(), 1);
  }
  const uint64_t after = rm.HeapFreeKiB();
  Report(what, before, after, static_cast<unsigned>(hs.size()));
  if (last != NV_OK)
    std::printf("  stopped at %zu: status 0x%llx\n", hs.size(),
                static_cast<unsigned long long>(last));
  for (uint32_t h : hs) rm.Free1(rm.device, h);
  Report("  ... all freed", after, rm.HeapFreeKiB(), static_cast<unsigned>(hs.size()));
  return static_cast<unsigned>(hs.size());
}

// One VA space with a 2 MiB piece of video memory mapped at `maps` addresses 1 GiB apart
// (each needs page tables of its own), inside a virtual allocation of maps GiB.
void MappedVaspace(Rm& rm, unsigned maps) {
  uint32_t va = 0, phys = 0, virt = 0;
  uint64_t t0 = rm.HeapFreeKiB();
  int64_t st = rm.Vaspace(&va, 0, 0);
  uint64_t t1 = rm.HeapFreeKiB();
  if (st == NV_OK)
    st = rm.Mem(&phys, NV01_MEMORY_LOCAL_USER, rm.client, 0x1c101, 0x18000000, 2 * kMiB, 2 * kMiB);
  uint64_t t2 = rm.HeapFreeKiB();
  nv_memory_allocation_params vp{};
  vp.owner = rm.client;
  vp.flags = 0x0008c415;  // libcuda's NV50_MEMORY_VIRTUAL flags (corpus)
  vp.size = uint64_t{maps} << 30;
  vp.alignment = 2 * kMiB;
  vp.hVASpace = va;
  virt = rm.next++;
  if (st == NV_OK) st = Alloc(rm.ctl, rm.client, rm.device, &virt, NV50_MEMORY_VIRTUAL, &vp);
  std::printf("mapped VA space: vaspace/phys/virtual status 0x%llx, virtual at 0x%llx\n",
              static_cast<unsigned long long>(st), static_cast<unsigned long long>(vp.offset));
  uint64_t t3 = rm.HeapFreeKiB();
  unsigned mapped = 0;
  for (unsigned i = 0; st == NV_OK && i < maps; ++i) {
    struct {
      uint32_t hClient, hDevice, hDma, hMemory;
      uint64_t offset, length;
      uint32_t flags, flags2, kindOverride, pad0;
      uint64_t dmaOffset;
      uint32_t status, pad1;
    } m{};
    static_assert(sizeof(m) == 64);
    m.hClient = rm.client;
    m.hDevice = rm.device;
    m.hDma = virt;
    m.hMemory = phys;
    m.length = 2 * kMiB;
    m.flags = 1u << 15;  // NVOS46_FLAGS_DMA_OFFSET_FIXED
    m.dmaOffset = vp.offset + (uint64_t{i} << 30);
    Rc rc = RawIoctl(rm.ctl, 0x57, &m, sizeof(m));  // NV_ESC_RM_MAP_MEMORY_DMA
    if (rc.ret || m.status != NV_OK) {
      std::printf("  map %u: ret %d status 0x%x\n", i, rc.ret, m.status);
      break;
    }
    ++mapped;
  }
  uint64_t t4 = rm.HeapFreeKiB();
  Report("one VA space (flags 0), idle", t0, t1, 1);
  Report("  2 MiB of video memory", t1, t2, 1);
  Report("  virtual allocation in it", t2, t3, 1);
  Report("  2 MiB mapped at addresses 1 GiB apart (each)", t3, t4, mapped);
  if (virt) rm.Free1(rm.device, virt);
  if (phys) rm.Free1(rm.device, phys);
  if (va) rm.Free1(rm.device, va);
  Report("  all freed", t4, rm.HeapFreeKiB(), 0);
}

// `n` GR TSGs made as libcuda makes its first (hVASpace 0, engine GR), alone; then each given
// a context share, a USERD/GPFIFO buffer, an error notifier, a channel and a compute object.
void GrTsgs(Rm& rm, uint32_t va, unsigned n) {
  std::vector<uint32_t> tsgs;
  uint64_t t0 = rm.HeapFreeKiB();
  for (unsigned i = 0; i < n; ++i) {
    nv_channel_group_alloc_params tp{};
    tp.engineType = 1;  // NV2080_ENGINE_TYPE_GRAPHICS
    uint32_t h = rm.next++;
    int64_t st = Alloc(rm.ctl, rm.client, rm.device, &h, KEPLER_CHANNEL_GROUP_A, &tp);
    if (st != NV_OK) {
      std::printf("  GR TSG %u: status 0x%llx\n", i, static_cast<unsigned long long>(st));
      break;
    }
    tsgs.push_back(h);
  }
  uint64_t t1 = rm.HeapFreeKiB();
  Report("GR TSGs alone", t0, t1, static_cast<unsigned>(tsgs.size()));
  unsigned channels = 0, objects = 0;
  uint64_t mem_kib = 0;
  for (uint32_t tsg : tsgs) {
    uint32_t share = rm.next++, buf = 0, err = 0, ch = rm.next++, obj = rm.next++;
    uint32_t sp[3] = {va, 1, 0};
    int64_t st = Alloc(rm.ctl, rm.client, tsg, &share, kFermiContextShareA, sp);
    uint64_t m0 = rm.HeapFreeKiB();
    if (st == NV_OK)
      st = rm.Mem(&buf, NV01_MEMORY_LOCAL_USER, rm.client, 0x1c101, 0x18000000, 2 * kMiB, 2 * kMiB);
    if (st == NV_OK)
      st = rm.Mem(&err, NV01_MEMORY_SYSTEM, rm.device, 0xc001, 0x3a000000, 0x1000, 0);
    mem_kib += m0 - rm.HeapFreeKiB();
    uint64_t c0 = rm.HeapFreeKiB();
    uint8_t cp[368] = {};
    uint32_t* w = reinterpret_cast<uint32_t*>(cp);
    w[0] = err;         // hObjectError
    w[1] = buf;         // hObjectBuffer
    w[2] = 0x00600000;  // gpFifoOffset (libcuda's, low word)
    w[3] = 0x2;         // (high word)
    w[4] = 0x400;       // gpFifoEntries
    w[6] = share;       // hContextShare
    w[8] = buf;         // hUserdMemory[0]
    if (st == NV_OK) st = Alloc(rm.ctl, rm.client, tsg, &ch, kHopperChannelGpfifoA, cp);
    if (st != NV_OK) {
      std::printf("  GR channel: status 0x%llx\n", static_cast<unsigned long long>(st));
      break;
    }
    ++channels;
    uint64_t c1 = rm.HeapFreeKiB();
    uint32_t gp[4] = {};
    st = Alloc(rm.ctl, rm.client, ch, &obj, kHopperComputeA, gp);
    uint64_t c2 = rm.HeapFreeKiB();
    std::printf("  TSG 0x%x: channel %.4f MiB, compute object %.4f MiB (status 0x%llx)\n", tsg,
                (static_cast<double>(c0) - c1) / 1024, (static_cast<double>(c1) - c2) / 1024,
                static_cast<unsigned long long>(st));
    if (st == NV_OK) ++objects;
  }
  const uint64_t t3 = rm.HeapFreeKiB();
  std::printf(
      "GR TSGs with channel and compute object: %u channels, %u objects; %.4f MiB "
      "beyond the TSGs and their class-0x40/0x3e memory (%.4f MiB each)\n",
      channels, objects, (static_cast<double>(t1) - t3 - mem_kib) / 1024,
      channels ? (static_cast<double>(t1) - t3 - mem_kib) / 1024 / channels : 0.0);
  for (uint32_t tsg : tsgs) rm.Free1(rm.device, tsg);
  Report("  TSGs freed (their subtrees with them)", t3, rm.HeapFreeKiB(), 0);
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned n = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 64;
  Rm rm;
  if (!rm.Open()) return 1;
  std::printf("HEAP_FREE at start %llu KiB\n", static_cast<unsigned long long>(rm.HeapFreeKiB()));
  VaspaceBatch(rm, "VA spaces as libcuda's first (flags 0x48, base 1 MiB)", 0x48, 1 * kMiB, n);
  VaspaceBatch(rm, "VA spaces as libcuda's second (flags 0, base 20 GiB)", 0, 0x500000000ull, n);
  VaspaceBatch(rm, "VA spaces with defaults (flags 0, base 0)", 0, 0, 4 * n);
  MappedVaspace(rm, 32);
  uint32_t va = 0;
  int64_t st = rm.Vaspace(&va, 0x48, 1 * kMiB);
  std::printf("VA space for the contexts: status 0x%llx\n", static_cast<unsigned long long>(st));
  GrTsgs(rm, va, 8);
  GrTsgs(rm, va, 32);
  rm.Free1(rm.device, va);
  rm.Free1(rm.client, rm.device);
  std::printf("HEAP_FREE at end %llu KiB\n", static_cast<unsigned long long>(rm.HeapFreeKiB()));
  return 0;
}

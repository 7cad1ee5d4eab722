// Measures the driver's own video memory behind VA spaces (FERMI_VASPACE_A) and GR-engine TSGs
// made alone by raw RM calls (issue 17 F11.1's residue), on a real GPU: HEAP_FREE
// (NV2080_CTRL_CMD_FB_GET_INFO_V2, the driver's own figure, KiB) before and after each batch of
// objects. Parameters follow libcuda's own calls in the recorded corpus (tests/data/traces):
// its two VA spaces (flags 0x48 at base 1 MiB; defaults at base 20 GiB), its GR TSG, context
// share, USERD/GPFIFO buffer, error notifier and channel. No CUDA; plain ioctls on
// /dev/nvidiactl and /dev/nvidia0 through the guest tests' helpers (tests/vm/guest/nvsim).
// Results: docs/results/context-memory-h200.md.
//   build: g++ -std=c++20 -O2 -static -I. tests/gpu/progs/rm_vaspace_mem.cc -o rm-vaspace-mem
//   usage: rm-vaspace-mem [N] [MAPS]   (N VA spaces per batch, default 64; MAPS mappings of
//   2 MiB per spacing, default 32)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/gpu/progs/rm_session.h"

using namespace rm_session;  // NOLINT: Rm, Report, the nvsim_test helpers

namespace {

constexpr uint32_t kFermiContextShareA = 0x9067, kHopperChannelGpfifoA = 0xc86f,
                   kHopperComputeA = 0xcbc0;

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

// One VA space (RM's page directory) with a 2 MiB piece of video memory mapped by
// RM_MAP_MEMORY_DMA at up to `maps` addresses `spacing` apart (each further level of page tables
// the spacing crosses is the driver's), inside one virtual allocation as large as RM grants (the
// size halved from maps * spacing until granted). libcuda's own NV50_MEMORY_VIRTUAL flags
// (0x0008c415, FIXED_ADDRESS_ALLOCATE among them) were refused here at offset 0 (0x1a, the first
// run), so the allocation asks for VIRTUAL | IGNORE_BANK_PLACEMENT, and LAZY when `lazy`.
// Without LAZY RM builds the page tables of the whole range at the allocation
// (virtmemConstruct reserves them unless LAZY or EXTERNALLY_MANAGED): 273.0625 MiB for
// 128 GiB on the H200, and a 64 TiB one held the driver for minutes (killed after 150 s, its
// teardown blocked nvidia-smi for minutes more; docs/results/rm-internal-memory-h200.md). So
// an eager range is never asked for more than kEagerVirtualMax.
constexpr uint64_t kEagerVirtualMax = uint64_t{128} << 30;
void MappedVaspace(Rm& rm, unsigned maps, uint64_t spacing, bool lazy) {
  uint32_t va = 0, phys = 0, virt = 0;
  uint64_t t0 = rm.HeapFreeKiB();
  int64_t st = rm.Vaspace(&va, 0, 0);
  uint64_t t1 = rm.HeapFreeKiB();
  if (st == NV_OK) st = rm.ChannelBuffer(&phys);
  uint64_t t2 = rm.HeapFreeKiB();
  nv_memory_allocation_params vp{};
  int64_t vst = -1;
  uint64_t want = uint64_t{maps} * spacing;
  if (!lazy && want > kEagerVirtualMax) want = kEagerVirtualMax;
  for (uint64_t size = want; st == NV_OK && size >= spacing; size /= 2) {
    vp = nv_memory_allocation_params{};
    vp.owner = rm.client;
    vp.flags = 0x00080001 | (lazy ? 0x400u : 0u);  // VIRTUAL | IGNORE_BANK_PLACEMENT [| LAZY]
    vp.size = size;
    vp.alignment = spacing < (1ull << 30) ? 2 * kMiB : spacing;
    vp.hVASpace = va;
    virt = rm.next++;
    vst = Alloc(rm.ctl, rm.client, rm.device, &virt, NV50_MEMORY_VIRTUAL, &vp);
    if (vst == NV_OK) break;
    virt = 0;
  }
  const unsigned fit = virt ? static_cast<unsigned>(vp.size / spacing) : 0;
  std::printf(
      "mapped VA space, %llu MiB apart: vaspace/phys 0x%llx, virtual 0x%llx of %llu GiB "
      "at 0x%llx (room for %u maps)\n",
      static_cast<unsigned long long>(spacing / kMiB), static_cast<unsigned long long>(st),
      static_cast<unsigned long long>(vst), static_cast<unsigned long long>(vp.size >> 30),
      static_cast<unsigned long long>(vp.offset), fit);
  uint64_t t3 = rm.HeapFreeKiB();
  unsigned mapped = 0;
  for (unsigned i = 0; virt && i < maps && i < fit; ++i) {
    uint64_t at = vp.offset + uint64_t{i} * spacing;
    const int64_t ms = rm.MapDma(virt, phys, 2 * kMiB, kNvos46DmaOffsetFixed, &at);
    if (ms != NV_OK) {
      std::printf("  map %u: status 0x%llx\n", i, static_cast<unsigned long long>(ms));
      break;
    }
    ++mapped;
    if (mapped == 1 || mapped == 1024 || mapped == 8192 || mapped == 65536)
      Report("  ... mapped so far (each mapping)", t3, rm.HeapFreeKiB(), mapped);
  }
  uint64_t t4 = rm.HeapFreeKiB();
  Report("one VA space (flags 0), idle", t0, t1, 1);
  Report("  2 MiB of video memory", t1, t2, 1);
  Report("  virtual allocation in it", t2, t3, 1);
  Report("  2 MiB mapped (each mapping)", t3, t4, mapped);
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
    if (st == NV_OK) st = rm.ChannelBuffer(&buf);
    if (st == NV_OK) st = rm.ErrorNotifier(&err);
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
  const unsigned maps = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 32;
  Rm rm;
  if (!rm.Open()) return 1;
  std::printf("HEAP_FREE at start %llu KiB\n", static_cast<unsigned long long>(rm.HeapFreeKiB()));
  VaspaceBatch(rm, "VA spaces as libcuda's first (flags 0x48, base 1 MiB)", 0x48, 1 * kMiB, n);
  VaspaceBatch(rm, "VA spaces as libcuda's second (flags 0, base 20 GiB)", 0, 0x500000000ull, n);
  VaspaceBatch(rm, "VA spaces with defaults (flags 0, base 0)", 0, 0, 4 * n);
  MappedVaspace(rm, maps, 2 * kMiB, false);
  for (uint64_t spacing : {2 * kMiB, uint64_t{1} << 30, uint64_t{512} << 30})
    MappedVaspace(rm, maps, spacing, true);
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

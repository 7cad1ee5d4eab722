// Measures the driver's own video memory behind raw GR channels (HOPPER_CHANNEL_GPFIFO_A) and
// their compute objects, made by plain RM ioctls the way libcuda makes its own (issue 17 F11.1;
// the core charges a TSG 4.3125 MiB and a channel 64 KiB by class, kmod/core/tables_580.c):
// 1, 8 and 32 channels in one GR TSG sharing one context share, 1, 8 and 32 GR TSGs of one
// channel each, and 32 channels in one TSG each in a context share of its own. HEAP_FREE
// (NV2080_CTRL_CMD_FB_GET_INFO_V2, KiB) before and after each step; each step's own memory
// objects (the USERD/GPFIFO buffer, class 0x40, charged by the core as memory) are made before
// the first reading, so what HEAP_FREE loses is the driver's internal memory only.
// Parameters from the recorded corpus (tests/data/traces/cuda-driver-api: seq 138-162): GR TSG
// (engineType 1), context share {hVASpace, flags 1}, a 2 MiB buffer holding each channel's
// GPFIFO (0x400 entries, 8 KiB) and USERD (4 KiB) at 0x3000 steps, a 4 KiB system-memory error
// notifier per channel, the channel, then HOPPER_COMPUTE_A under it. libcuda's VA space is one
// UVM builds the page tables of (flags 0x48, registered with UVM_REGISTER_GPU_VASPACE); a
// channel in it before UVM registered it is refused (NV_ERR_INVALID_STATE, 0x40: the first try,
// docs/results/context-memory-h200.md). Here the VA space is RM's own (flags 0) and the buffer
// is mapped into it with RM_MAP_MEMORY_DMA, so the GPFIFO address is a real mapping.
// Results: docs/results/rm-internal-memory-h200.md.
//   build: g++ -std=c++20 -O2 -static -I. tests/gpu/progs/rm_channel_mem.cc -o rm-channel-mem
//   usage: rm-channel-mem
#include <cstdio>
#include <vector>

#include "tests/gpu/progs/rm_session.h"

using namespace rm_session;  // NOLINT: Rm, Report, the nvsim_test helpers

namespace {

constexpr uint32_t kFermiContextShareA = 0x9067, kHopperChannelGpfifoA = 0xc86f,
                   kHopperComputeA = 0xcbc0;
constexpr uint64_t kChannelStride = 0x3000;  // GPFIFO 8 KiB + USERD 4 KiB, as libcuda's
constexpr unsigned kChannelsPerBuffer = 2 * kMiB / kChannelStride;

struct ChannelParams {  // NV_CHANNEL_ALLOC_PARAMS (580), the fields libcuda sets
  uint32_t hObjectError, hObjectBuffer;
  uint64_t gpFifoOffset;
  uint32_t gpFifoEntries, flags, hContextShare, hVASpace;
  uint32_t hUserdMemory[8];
  uint64_t userdOffset[8];
  uint8_t rest[368 - 128];
};
static_assert(sizeof(ChannelParams) == 368);

// The VA space every channel runs in and the buffer its GPFIFO and USERD live in.
struct Space {
  uint32_t va = 0, virt = 0, buf = 0;
  uint64_t buf_va = 0;
  unsigned used = 0;  // channel slots of the buffer handed out
};

int64_t MakeSpace(Rm& rm, Space* s) {
  int64_t st = rm.Vaspace(&s->va, 0, 0);
  if (st == NV_OK) st = rm.ChannelBuffer(&s->buf);
  nv_memory_allocation_params vp{};
  vp.owner = rm.client;
  vp.flags = 0x00080001;  // NVOS32_ALLOC_FLAGS_VIRTUAL | IGNORE_BANK_PLACEMENT
  vp.size = 64 * kMiB;
  vp.alignment = 2 * kMiB;
  vp.hVASpace = s->va;
  s->virt = rm.next++;
  if (st == NV_OK) st = Alloc(rm.ctl, rm.client, rm.device, &s->virt, NV50_MEMORY_VIRTUAL, &vp);
  std::printf("space: VA space, buffer, 64 MiB virtual: status 0x%llx\n",
              static_cast<unsigned long long>(st));
  if (st != NV_OK) return st;
  st = rm.MapDma(s->virt, s->buf, 2 * kMiB, 0, &s->buf_va);
  std::printf("space: buffer mapped at GPU VA 0x%llx: status 0x%llx\n",
              static_cast<unsigned long long>(s->buf_va), static_cast<unsigned long long>(st));
  return st;
}

int64_t GrTsg(Rm& rm, uint32_t* h) {
  nv_channel_group_alloc_params tp{};
  tp.engineType = 1;  // NV2080_ENGINE_TYPE_GRAPHICS
  *h = rm.next++;
  return Alloc(rm.ctl, rm.client, rm.device, h, KEPLER_CHANNEL_GROUP_A, &tp);
}

int64_t ContextShare(Rm& rm, uint32_t tsg, uint32_t va, uint32_t* h) {
  uint32_t sp[3] = {va, 1, 0};  // hVASpace, flags (libcuda's), subctxId
  *h = rm.next++;
  return Alloc(rm.ctl, rm.client, tsg, h, kFermiContextShareA, sp);
}

// One channel in `tsg` on context share `share`; its error notifier is made first (system
// memory: HEAP_FREE does not see it) and returned in *err.
int64_t Channel(Rm& rm, Space& s, uint32_t tsg, uint32_t share, uint32_t err, uint32_t* ch) {
  if (s.used >= kChannelsPerBuffer) return -1;
  ChannelParams p{};
  const uint64_t at = uint64_t{s.used++} * kChannelStride;
  p.hObjectError = err;
  p.hObjectBuffer = s.buf;
  p.gpFifoOffset = s.buf_va + at;
  p.gpFifoEntries = 0x400;
  p.hContextShare = share;
  p.hUserdMemory[0] = s.buf;
  p.userdOffset[0] = at + 0x2000;
  *ch = rm.next++;
  return Alloc(rm.ctl, rm.client, tsg, ch, kHopperChannelGpfifoA, &p);
}

int64_t Compute(Rm& rm, uint32_t ch) {
  uint32_t gp[4] = {};  // NV_GR_ALLOCATION_PARAMETERS, zero as libcuda's
  uint32_t h = rm.next++;
  return Alloc(rm.ctl, rm.client, ch, &h, kHopperComputeA, gp);
}

void Status(const char* what, int64_t st) {
  if (st != NV_OK) std::printf("  %s: status 0x%llx\n", what, static_cast<unsigned long long>(st));
}

// Error notifiers for `n` channels, made before any reading.
std::vector<uint32_t> Notifiers(Rm& rm, unsigned n) {
  std::vector<uint32_t> v(n);
  for (uint32_t& h : v) Status("error notifier", rm.ErrorNotifier(&h));
  return v;
}

void FreeAll(Rm& rm, Space& s, const std::vector<uint32_t>& tsgs, const std::vector<uint32_t>& errs,
             uint64_t before) {
  for (uint32_t h : tsgs) rm.Free1(rm.device, h);
  for (uint32_t h : errs) rm.Free1(rm.device, h);
  s.used = 0;
  Report("  all freed (vs before the TSGs)", before, rm.HeapFreeKiB(), 0);
}

// One GR TSG, one context share, channels (each with a compute object) up to 1, 8, 32.
void ChannelsInOneTsg(Rm& rm, Space& s) {
  std::printf("== channels in one GR TSG, one context share\n");
  std::vector<uint32_t> errs = Notifiers(rm, 32);
  const uint64_t t0 = rm.HeapFreeKiB();
  uint32_t tsg = 0, share = 0;
  int64_t st = GrTsg(rm, &tsg);
  const uint64_t t1 = rm.HeapFreeKiB();
  Report("  GR TSG", t0, t1, 1);
  if (st == NV_OK) st = ContextShare(rm, tsg, s.va, &share);
  const uint64_t t2 = rm.HeapFreeKiB();
  Report("  context share", t1, t2, 1);
  Status("TSG/context share", st);
  unsigned made = 0;
  uint64_t prev = t2, compute_kib = 0;
  for (unsigned target : {1u, 8u, 32u}) {
    const unsigned from = made;
    while (st == NV_OK && made < target) {
      uint32_t ch = 0;
      st = Channel(rm, s, tsg, share, errs[made], &ch);
      Status("channel", st);
      if (st != NV_OK) break;
      const uint64_t c0 = rm.HeapFreeKiB();
      st = Compute(rm, ch);
      Status("compute object", st);
      compute_kib += c0 - rm.HeapFreeKiB();
      ++made;
    }
    const uint64_t now = rm.HeapFreeKiB();
    char what[96];
    std::snprintf(what, sizeof what, "  channels %u..%u (+compute objects)", from + 1, made);
    Report(what, prev, now, made - from);
    prev = now;
  }
  std::printf("  of which compute objects: %.4f MiB over %u\n", compute_kib / 1024.0, made);
  Report("  TSG + share + all channels", t0, prev, made);
  FreeAll(rm, s, {tsg}, errs, t0);
}

// N GR TSGs, each with a context share, one channel and a compute object: N = 1, 8, 32.
void OneChannelPerTsg(Rm& rm, Space& s) {
  std::printf("== GR TSGs of one channel each\n");
  std::vector<uint32_t> errs = Notifiers(rm, 32), tsgs;
  const uint64_t t0 = rm.HeapFreeKiB();
  uint64_t prev = t0, tsg_kib = 0, chan_kib = 0;
  int64_t st = NV_OK;
  for (unsigned target : {1u, 8u, 32u}) {
    const unsigned from = static_cast<unsigned>(tsgs.size());
    while (st == NV_OK && tsgs.size() < target) {
      uint32_t tsg = 0, share = 0, ch = 0;
      const uint64_t a = rm.HeapFreeKiB();
      st = GrTsg(rm, &tsg);
      if (st != NV_OK) break;
      tsgs.push_back(tsg);
      const uint64_t b = rm.HeapFreeKiB();
      tsg_kib += a - b;
      st = ContextShare(rm, tsg, s.va, &share);
      Status("context share", st);
      if (st == NV_OK) st = Channel(rm, s, tsg, share, errs[tsgs.size() - 1], &ch);
      Status("channel", st);
      if (st == NV_OK) st = Compute(rm, ch);
      Status("compute object", st);
      chan_kib += b - rm.HeapFreeKiB();
    }
    Status("stopped", st);
    const uint64_t now = rm.HeapFreeKiB();
    char what[96];
    std::snprintf(what, sizeof what, "  TSGs %u..%zu (share, channel, compute each)", from + 1,
                  tsgs.size());
    Report(what, prev, now, static_cast<unsigned>(tsgs.size()) - from);
    prev = now;
  }
  const unsigned n = static_cast<unsigned>(tsgs.size());
  std::printf("  split: TSGs %.4f MiB (%.4f each), share+channel+compute %.4f MiB (%.4f each)\n",
              tsg_kib / 1024.0, n ? tsg_kib / 1024.0 / n : 0.0, chan_kib / 1024.0,
              n ? chan_kib / 1024.0 / n : 0.0);
  FreeAll(rm, s, tsgs, errs, t0);
}

// One GR TSG, 32 channels each in a context share (subcontext) of its own.
void SubcontextsInOneTsg(Rm& rm, Space& s) {
  std::printf("== channels in one GR TSG, a context share each\n");
  std::vector<uint32_t> errs = Notifiers(rm, 32);
  const uint64_t t0 = rm.HeapFreeKiB();
  uint32_t tsg = 0;
  int64_t st = GrTsg(rm, &tsg);
  const uint64_t t1 = rm.HeapFreeKiB();
  Report("  GR TSG", t0, t1, 1);
  unsigned made = 0;
  uint64_t share_kib = 0;
  while (st == NV_OK && made < 32) {
    uint32_t share = 0, ch = 0;
    const uint64_t a = rm.HeapFreeKiB();
    st = ContextShare(rm, tsg, s.va, &share);
    share_kib += a - rm.HeapFreeKiB();
    Status("context share", st);
    if (st == NV_OK) st = Channel(rm, s, tsg, share, errs[made], &ch);
    Status("channel", st);
    if (st == NV_OK) st = Compute(rm, ch);
    Status("compute object", st);
    if (st == NV_OK) ++made;
  }
  const uint64_t t2 = rm.HeapFreeKiB();
  Report("  context share + channel + compute each", t1, t2, made);
  std::printf("  of which context shares: %.4f MiB\n", share_kib / 1024.0);
  FreeAll(rm, s, {tsg}, errs, t0);
}

}  // namespace

int main() {
  Rm rm;
  if (!rm.Open()) return 1;
  std::printf("HEAP_FREE at start %llu KiB\n", static_cast<unsigned long long>(rm.HeapFreeKiB()));
  Space s;
  const uint64_t t0 = rm.HeapFreeKiB();
  if (MakeSpace(rm, &s) != NV_OK) return 1;
  Report("VA space + 2 MiB buffer + virtual + map", t0, rm.HeapFreeKiB(), 1);
  ChannelsInOneTsg(rm, s);
  OneChannelPerTsg(rm, s);
  SubcontextsInOneTsg(rm, s);
  rm.Free1(rm.device, s.virt);
  rm.Free1(rm.device, s.buf);
  rm.Free1(rm.device, s.va);
  rm.Free1(rm.client, rm.device);
  std::printf("HEAP_FREE at end %llu KiB\n", static_cast<unsigned long long>(rm.HeapFreeKiB()));
  return 0;
}

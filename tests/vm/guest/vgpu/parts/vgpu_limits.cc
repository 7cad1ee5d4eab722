// Per-slot limits (docs/security/kernel-lifetime-compute.md). F11.1: channel ids are GPU-wide, so
// one tenant must not be able to take them all, and every TSG and channel of a slot must be one
// the compute controller can gate. libcuda makes 4 TSGs and 20 channels per context, all channels
// under a TSG. F10: the driver's system memory is charged to no memory cgroup, so each slot has a
// budget for it. Linked into vgpu_gtest (guest.cmake).
#include <cstddef>
#include <cstring>
#include <fstream>
#include <tuple>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

int64_t AllocTsg(Session& s, uint32_t h) {
  nv_channel_group_alloc_params tp{};
  tp.engineType = 1;
  return Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &tp);
}
int64_t AllocChannel(Session& s, uint32_t parent, uint32_t h) {
  uint8_t chp[368] = {};
  return Alloc(s.ctl, s.client, parent, &h, 0xc86f, chp);
}

int64_t AllocVaspace(Session& s, uint32_t h) {
  nv_vaspace_alloc_params vp{};
  return Alloc(s.ctl, s.client, s.device, &h, FERMI_VASPACE_A, &vp);
}

TEST(Limits, TsgsAndChannelsPerSlotAreCapped) {
  ScopedSlot slot(0, "limits");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  uint32_t tsgs = 0, channels = 0;
  for (uint32_t i = 0; i < kMaxTsgs + 8; ++i)
    if (AllocTsg(s, 0xd1000000 + i) == NV_OK) ++tsgs;
  EXPECT_EQ(tsgs, kMaxTsgs) << "TSGs granted to one slot";
  for (uint32_t i = 0; i < kMaxChannels + 16; ++i)
    if (AllocChannel(s, 0xd1000000 + i % kMaxTsgs, 0xd2000000 + i) == NV_OK) ++channels;
  EXPECT_EQ(channels, kMaxChannels) << "channels granted to one slot";
  // Freeing gives room again.
  EXPECT_EQ(Free(s.ctl, s.client, 0xd1000000, 0xd2000000), NV_OK);
  EXPECT_EQ(AllocChannel(s, 0xd1000000, 0xd2100000), NV_OK);
  // A channel straight under the device gets an RM-internal TSG no controller can gate.
  EXPECT_NE(AllocChannel(s, s.device, 0xd2200000), NV_OK) << "device-parented channel granted";
}

// F11.1: a TSG's and a channel's own video memory in the driver (instance blocks, GR context
// buffers, page tables; 4.6 to 15.6 MiB per CUDA context on the H200, nvidia-rm-abi.md §4.2) is
// allocated by no RM_ALLOC of memory, so it is charged to the slot as a fixed estimate per object.
// A slot whose quota is full must not get another TSG (or, past what is left, channel), and the
// charge must come back when the objects go: at their parent's free and at the file's close.
// nvsim allocates nothing for them; the slot's stats name the estimated part
// (internal_charged_bytes, read through sysfs).
TEST(Limits, TsgsAndChannelsAreChargedToTheQuota) {
  ScopedSlot slot(64 * kMiB, "ctxmem");
  ASSERT_TRUE(slot.ok());
  const uint64_t nvsim_used = NvsimUsedBytes();
  {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    ASSERT_EQ(AllocTsg(s, 0xd1000000), NV_OK);
    const uint64_t tsg = slot.Stat(VGPU_STAT_MEM_CHARGED);
    ASSERT_EQ(AllocChannel(s, 0xd1000000, 0xd2000000), NV_OK);
    const uint64_t channel = slot.Stat(VGPU_STAT_MEM_CHARGED) - tsg;
    std::printf("ctxmem: a TSG is charged %llu B, a channel %llu B\n",
                static_cast<unsigned long long>(tsg), static_cast<unsigned long long>(channel));
    EXPECT_GT(tsg, 0u) << "a TSG's memory in the driver charged to nobody";
    EXPECT_GT(channel, 0u) << "a channel's memory in the driver charged to nobody";
    EXPECT_EQ(NvsimUsedBytes(), nvsim_used) << "nvsim allocates nothing for them";
    // Fill the quota with 2 MiB allocations.
    uint32_t granted = 0;
    for (uint32_t i = 0; i < 40; ++i)
      if (s.Vidmem(0xd3000000 + i, 2 * kMiB) == NV_OK) ++granted;
    const uint64_t memory = uint64_t{granted} * 2 * kMiB;
    EXPECT_LE(slot.Stat(VGPU_STAT_MEM_CHARGED), 64 * kMiB);
    const int64_t tsg_status = AllocTsg(s, 0xd1000001);
    EXPECT_EQ(tsg_status, NV_ERR_NO_MEMORY) << "a TSG on a slot whose quota is full";
    // Channels fit until what is left of the quota is used, then are refused the same way.
    uint32_t more = 0;
    int64_t st = NV_OK;
    while (more < kMaxChannels && (st = AllocChannel(s, 0xd1000000, 0xd2000001 + more)) == NV_OK)
      ++more;
    std::printf(
        "ctxmem: %u x 2 MiB filled the 64 MiB quota; a TSG after it: status 0x%llx; then %u "
        "more channels fit, the next: status 0x%llx\n",
        granted, static_cast<unsigned long long>(tsg_status), more,
        static_cast<unsigned long long>(st));
    EXPECT_EQ(st, NV_ERR_NO_MEMORY) << "after " << more << " more channels";
    EXPECT_LE(slot.Stat(VGPU_STAT_MEM_CHARGED), 64 * kMiB);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), memory + tsg + (1 + more) * channel);
    // The TSG's free takes its channels with it, and their charge.
    EXPECT_EQ(Free(s.ctl, s.client, s.device, 0xd1000000), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), memory);
    EXPECT_EQ(AllocTsg(s, 0xd1000002), NV_OK) << "room again";
    EXPECT_EQ(AllocChannel(s, 0xd1000002, 0xd2100000), NV_OK);
    // The device's free (the TSG's parent) takes the TSG and its channel.
    EXPECT_EQ(Free(s.ctl, s.client, s.client, s.device), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
    // A new device and context, left to the file's close.
    nv0080_alloc_params dp{};
    uint32_t device = 0xd0000011;
    ASSERT_EQ(Alloc(s.ctl, s.client, s.client, &device, NV01_DEVICE_0, &dp), NV_OK);
    s.device = device;
    ASSERT_EQ(AllocTsg(s, 0xd1000003), NV_OK);
    ASSERT_EQ(AllocChannel(s, 0xd1000003, 0xd2200000), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), tsg + channel);
  }
  EXPECT_EQ(SettledCharge(slot, 0), 0u) << "the close refunds the context";
  EXPECT_EQ(NvsimUsedBytes(), nvsim_used);
}

// F11.1: a VA space's page directory is the driver's video memory (64 KiB for the first on the
// H200, about 20 KiB each after, docs/results/context-memory-h200.md), which no RM_ALLOC of memory
// reports, and a tenant can make as many as it likes. Each is charged the branch's estimate, a
// slot has at most kMaxVaspaces (libcuda makes 2 per process), a slot whose quota is full gets
// none, and the charge comes back at the free, the device's free and the file's close. nvsim
// allocates nothing for them.
TEST(Limits, VaSpacesAreChargedAndCapped) {
  ScopedSlot slot(64 * kMiB, "vaspace");
  ASSERT_TRUE(slot.ok());
  const uint64_t nvsim_used = NvsimUsedBytes();
  {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    ASSERT_EQ(AllocVaspace(s, 0xd4000000), NV_OK);
    const uint64_t one = slot.Stat(VGPU_STAT_MEM_CHARGED);
    EXPECT_GT(one, 0u) << "a VA space's page directory charged to nobody";
    EXPECT_EQ(NvsimUsedBytes(), nvsim_used) << "nvsim allocates nothing for it";
    uint32_t granted = 1;
    int64_t st = NV_OK;
    for (uint32_t i = 1; i < kMaxVaspaces + 8; ++i) {
      st = AllocVaspace(s, 0xd4000000 + i);
      if (st == NV_OK) ++granted;
    }
    const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    std::printf(
        "vaspace: one charged %llu B; %u of %u granted, the last: status 0x%llx; %llu B "
        "charged for them\n",
        static_cast<unsigned long long>(one), granted, kMaxVaspaces + 8,
        static_cast<unsigned long long>(st), static_cast<unsigned long long>(charged));
    EXPECT_EQ(granted, kMaxVaspaces) << "VA spaces granted to one slot";
    EXPECT_EQ(st, NV_ERR_INSUFFICIENT_RESOURCES);
    EXPECT_EQ(charged, granted * one);
    // A free gives room again; the device's free takes them all, and their charge.
    EXPECT_EQ(Free(s.ctl, s.client, s.device, 0xd4000000), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), (granted - 1) * one);
    EXPECT_EQ(AllocVaspace(s, 0xd4100000), NV_OK) << "room again";
    EXPECT_EQ(Free(s.ctl, s.client, s.client, s.device), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
    // A new device with a VA space, and the quota filled with memory; what they hold is left to
    // the file's close.
    nv0080_alloc_params dp{};
    uint32_t device = 0xd0000021;
    ASSERT_EQ(Alloc(s.ctl, s.client, s.client, &device, NV01_DEVICE_0, &dp), NV_OK);
    s.device = device;
    ASSERT_EQ(AllocVaspace(s, 0xd4200000), NV_OK);
    uint32_t filled = 0;
    for (uint32_t i = 0; i < 40; ++i)
      if (s.Vidmem(0xd3000000 + i, 2 * kMiB) == NV_OK) ++filled;
    // VA spaces fit in what is left of the quota, then are refused as memory is.
    uint32_t more = 0;
    int64_t full = NV_OK;
    while (more < kMaxVaspaces && (full = AllocVaspace(s, 0xd4200001 + more)) == NV_OK) ++more;
    std::printf(
        "vaspace: %u x 2 MiB filled the 64 MiB quota; then %u more VA spaces fit, the next: status "
        "0x%llx\n",
        filled, more, static_cast<unsigned long long>(full));
    EXPECT_EQ(full, NV_ERR_NO_MEMORY) << "a VA space on a slot whose quota is full";
    EXPECT_LE(slot.Stat(VGPU_STAT_MEM_CHARGED), 64 * kMiB);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), uint64_t{filled} * 2 * kMiB + (1 + more) * one);
  }
  EXPECT_EQ(SettledCharge(slot, 0), 0u) << "the close refunds the VA space";
  EXPECT_EQ(NvsimUsedBytes(), nvsim_used);
}

// vgpu.ko's per-slot system-memory budget in MiB, read at slot creation (~0: no such parameter).
uint64_t SysmemBudgetMiB() {
  std::ifstream f("/sys/module/vgpu/parameters/slot_sysmem_mib");
  uint64_t v = ~0ull;
  f >> v;
  return v;
}
bool SetSysmemBudgetMiB(uint64_t mib) {
  std::ofstream f("/sys/module/vgpu/parameters/slot_sysmem_mib");
  f << mib;
  f.flush();
  return f.good();
}

// F10: class 0x3e pages are the driver's (nv_alloc_system_pages, GFP_KERNEL without
// __GFP_ACCOUNT): no process RSS, no memory cgroup. A tenant of a 64 MiB slot asks for 100 x 64 MiB
// of them; the slot's budget (256 MiB here) must bound what the driver holds for it, a free must
// give room again, and the slot's process exit must give it all back.
TEST(Limits, SystemMemoryPerSlotIsCapped) {
  const uint64_t saved = SysmemBudgetMiB();
  const bool set = SetSysmemBudgetMiB(256);
  ScopedSlot slot(64 * kMiB, "sysmem");
  if (set) SetSysmemBudgetMiB(saved);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = ReadNvsimParam("sysmem_bytes");
  uint64_t peak = 0;
  int granted = 0, refused = 0;
  {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    for (uint32_t i = 0; i < 100; ++i) {
      const int64_t st = s.Sysmem(0xd3000000 + i, 64 * kMiB);
      if (st == NV_OK) {
        ++granted;
      } else {
        EXPECT_EQ(st, NV_ERR_NO_MEMORY) << "allocation " << i;
        ++refused;
      }
    }
    peak = ReadNvsimParam("sysmem_bytes") - base;
    std::printf(
        "sysmem: budget parameter %s, %d of 100 x 64 MiB granted, %d refused; the driver "
        "holds %llu MiB of system memory for the slot\n",
        set ? "set to 256 MiB" : "absent", granted, refused,
        static_cast<unsigned long long>(peak / kMiB));
    EXPECT_TRUE(set) << "vgpu.ko has no per-slot system-memory budget";
    EXPECT_LE(peak, 256 * kMiB) << "system memory outside every cgroup and every budget";
    EXPECT_EQ(granted, 4);
    // A free gives room again; a page-rounded small one fits in what is left.
    if (granted > 0) {
      EXPECT_EQ(Free(s.ctl, s.client, s.device, 0xd3000000), NV_OK);
      EXPECT_EQ(s.Sysmem(0xd3100000, 64 * kMiB), NV_OK);
    }
  }
  EXPECT_EQ(ReadNvsimParam("sysmem_bytes"), base);
  // The budget did not touch the video memory quota.
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

// F10, the size race: the driver reads the size of a class 0x3e allocation again after vgpu.ko's
// private copy, and writes back the size it allocated, both in the caller's memory. A sibling
// thread raises the size between the two reads and lowers it again before vgpu.ko reads the reply:
// nvsim's rewrite_allocp_* hook lands those two stores every time (tests/vm/nvsim/nvsim_hook.c).
// The slot's budget must bound what the driver holds (the driver's own size, kmod/driver_query.c):
// past the budget the object is freed and NV_ERR_NO_MEMORY returned; within it the driver's size is
// what the budget counts, so the allocations that follow fit only in what is really left.
TEST(Limits, SystemMemorySizeRaisedDuringTheCallStaysInTheBudget) {
  constexpr uint64_t kBudgetMiB = 64;
  const uint64_t saved = SysmemBudgetMiB();
  const bool set = SetSysmemBudgetMiB(kBudgetMiB);
  ScopedSlot slot(64 * kMiB, "sysrace");
  if (set) SetSysmemBudgetMiB(saved);
  ASSERT_TRUE(set);
  ASSERT_TRUE(slot.ok());
  const uint64_t done = ReadNvsimParam("rewrite_allocp_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_allocp_* test hook";
  const uint64_t base = ReadNvsimParam("sysmem_bytes");
  auto raised = [&](Session& s, uint32_t handle, uint64_t checked, uint32_t raised_to) {
    nv_memory_allocation_params mp{};
    mp.owner = s.client;
    mp.size = checked;
    EXPECT_TRUE(
        WriteNvsimParam("rewrite_allocp_offset", offsetof(nv_memory_allocation_params, size)) &&
        WriteNvsimParam("rewrite_allocp_value", raised_to) &&
        WriteNvsimParam("rewrite_allocp_tgid", static_cast<uint64_t>(getpid())));
    const int64_t st = Alloc(s.ctl, s.client, s.device, &handle, NV01_MEMORY_SYSTEM, &mp);
    WriteNvsimParam("rewrite_allocp_tgid", 0);
    EXPECT_EQ(mp.size, checked) << "the sibling's second store did not land";
    return st;
  };
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  // Checked 4 KiB, the driver reads 256 MiB: four times the budget in one allocation.
  const int64_t over = raised(s, 0xd4000000, 4096, 256 * kMiB);
  const uint64_t held_over = ReadNvsimParam("sysmem_bytes") - base;
  EXPECT_EQ(ReadNvsimParam("rewrite_allocp_done"), done + 1) << "nvsim made the rewrite once";
  // Checked 4 KiB, the driver reads 16 MiB: within the budget, so it stays, counted at 16 MiB.
  const int64_t within = raised(s, 0xd4000001, 4096, 16 * kMiB);
  const uint64_t held_within = ReadNvsimParam("sysmem_bytes") - base;
  // Then 64 MiB of plain 4 MiB allocations: only what the budget has left fits.
  int granted = 0;
  for (uint32_t i = 0; i < 16; ++i)
    if (s.Sysmem(0xd4100000 + i, 4 * kMiB) == NV_OK) ++granted;
  const uint64_t held = ReadNvsimParam("sysmem_bytes") - base;
  std::printf(
      "sysmem race: budget %llu MiB; 4 KiB raised to 256 MiB -> status 0x%llx, the driver holds "
      "%llu MiB; 4 KiB raised to 16 MiB -> status 0x%llx, holds %llu MiB; then %d of 16 x 4 MiB "
      "granted, the driver holds %llu MiB for the slot\n",
      static_cast<unsigned long long>(kBudgetMiB), static_cast<unsigned long long>(over),
      static_cast<unsigned long long>(held_over / kMiB), static_cast<unsigned long long>(within),
      static_cast<unsigned long long>(held_within / kMiB), granted,
      static_cast<unsigned long long>(held / kMiB));
  EXPECT_EQ(over, NV_ERR_NO_MEMORY) << "an allocation past the budget was granted";
  EXPECT_EQ(held_over, 0u) << "the driver holds system memory past the slot's budget";
  EXPECT_EQ(within, NV_OK);
  EXPECT_EQ(held_within, 16 * kMiB);
  EXPECT_EQ(granted, 12) << "the budget counted another size than the driver's";
  EXPECT_LE(held, kBudgetMiB * kMiB) << "the driver holds system memory past the slot's budget";
}

// F11.1: a GPU virtual address range (NV50_MEMORY_VIRTUAL) without NVOS32_ALLOC_FLAGS_LAZY, or with
// SPARSE (which the driver makes eager), gets the page tables of its whole extent in video memory
// when it is made (virtmemConstruct_IMPL, 580): 273.0625 MiB for 128 GiB on the H200
// (docs/results/rm-internal-memory-h200.md), and no RM_ALLOC of memory reports them. nvsim holds
// them as the driver does (ptable_bytes). On a 64 MiB slot, eight eager 8 GiB ranges (17.125 MiB
// of page tables each) must not be granted; libcuda's own range (0xfb000000, flags 0x8c415, LAZY:
// every trace of tests/data/traces that has one) is, charged the page tables it would need were it
// eager (kmod/core/rm_alloc.c), and the charge goes with its free.
constexpr uint32_t kVirtualEager = 0x00080001;  // VIRTUAL | IGNORE_BANK_PLACEMENT (the GPU run's)
constexpr uint32_t kVirtualLibcuda = 0x0008c415;
constexpr uint32_t kLazy = 0x400, kSparse = 0x04000000;
constexpr uint64_t kLibcudaRange = 0xfb000000, kGiB = 1024 * kMiB;

int64_t AllocVirtual(Session& s, uint32_t h, uint64_t size, uint32_t flags) {
  nv_memory_allocation_params mp{};
  mp.owner = s.client;
  mp.flags = flags;
  mp.size = size;
  return Alloc(s.ctl, s.client, s.device, &h, NV50_MEMORY_VIRTUAL, &mp);
}

TEST(Limits, EagerVirtualRangesAreRefusedUnderAQuota) {
  ScopedSlot slot(64 * kMiB, "eagerva");
  ASSERT_TRUE(slot.ok());
  const uint64_t base = ReadNvsimParam("ptable_bytes");
  ASSERT_NE(base, ~0ull) << "nvsim has no ptable_bytes";
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  uint32_t granted = 0;
  for (uint32_t i = 0; i < 8; ++i)
    if (AllocVirtual(s, 0xd5000000 + i, 8 * kGiB, kVirtualEager) == NV_OK) ++granted;
  const uint64_t held = ReadNvsimParam("ptable_bytes") - base;
  const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  const int64_t sparse = AllocVirtual(s, 0xd5000010, 8 * kGiB, kVirtualEager | kLazy | kSparse);
  const uint64_t held_sparse = ReadNvsimParam("ptable_bytes") - base;
  std::printf(
      "eager VA: %u of 8 x 8 GiB eager ranges granted on a 64 MiB slot; nvsim holds %llu KiB of "
      "page tables, %llu KiB charged; a lazy sparse one: status 0x%llx, nvsim then holds %llu "
      "KiB\n",
      granted, static_cast<unsigned long long>(held >> 10),
      static_cast<unsigned long long>(charged >> 10), static_cast<unsigned long long>(sparse),
      static_cast<unsigned long long>(held_sparse >> 10));
  EXPECT_EQ(granted, 0u) << "eager virtual ranges granted under a quota";
  EXPECT_EQ(held, 0u) << "the driver holds page tables the quota does not count";
  EXPECT_EQ(sparse, NV_ERR_NOT_SUPPORTED) << "a sparse range is eager whatever LAZY says";
  EXPECT_EQ(held_sparse, 0u);
  // libcuda's range is lazy: granted, charged its worst case (8.4375 MiB), nothing in nvsim.
  ASSERT_EQ(AllocVirtual(s, 0xd5000020, kLibcudaRange, kVirtualLibcuda), NV_OK);
  EXPECT_EQ(ReadNvsimParam("ptable_bytes"), base) << "a lazy range has no page tables yet";
  const uint64_t libcuda = slot.Stat(VGPU_STAT_MEM_CHARGED);
  std::printf("eager VA: libcuda's lazy 0xfb000000 range is charged %llu B\n",
              static_cast<unsigned long long>(libcuda));
  EXPECT_EQ(libcuda, 8847360u) << "size/512 + size/8192 + size/131072 in 64 KiB, + 64 KiB";
  EXPECT_EQ(s.FreeObj(0xd5000020), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u) << "the free refunds it";
  // Maps into an RM-owned VA space make page tables too (4 KiB per map 1 GiB apart on the H200):
  // RM_MAP_MEMORY_DMA and its unmap (NVOS46, 64 B, status at 56; NVOS47, 48 B, at 40) are refused.
  for (auto [nr, size, status_at] : {std::tuple{0x57u, 64u, 56u}, std::tuple{0x58u, 48u, 40u}}) {
    uint8_t p[64] = {};
    memcpy(p, &s.client, 4);
    ASSERT_EQ(RawIoctl(s.ctl, nr, p, size).ret, 0);
    uint32_t st;
    memcpy(&st, p + status_at, 4);
    EXPECT_EQ(st, NV_ERR_NOT_SUPPORTED) << "escape 0x" << std::hex << nr;
  }
}

// The driver reads the flags again from the caller's memory after vgpu.ko checked its copy: a
// sibling thread clears LAZY between the two (nvsim's rewrite_allocp_* hook lands that store every
// time). What the driver then reserves must already be charged: two 16 GiB ranges whose page
// tables (34.1875 MiB each) together pass the 64 MiB quota.
TEST(Limits, VirtualRangeMadeEagerDuringTheCallStaysInTheQuota) {
  ScopedSlot slot(64 * kMiB, "eagerrace");
  ASSERT_TRUE(slot.ok());
  const uint64_t done = ReadNvsimParam("rewrite_allocp_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_allocp_* test hook";
  const uint64_t base = ReadNvsimParam("ptable_bytes");
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  int64_t st[2];
  for (uint32_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        WriteNvsimParam("rewrite_allocp_offset", offsetof(nv_memory_allocation_params, flags)) &&
        WriteNvsimParam("rewrite_allocp_value", kVirtualLibcuda & ~kLazy) &&
        WriteNvsimParam("rewrite_allocp_tgid", static_cast<uint64_t>(getpid())));
    st[i] = AllocVirtual(s, 0xd5100000 + i, 16 * kGiB, kVirtualLibcuda);
    WriteNvsimParam("rewrite_allocp_tgid", 0);
    if (i == 0) {
      EXPECT_EQ(ReadNvsimParam("rewrite_allocp_done"), done + 1) << "nvsim's rewrite";
    }
  }
  const uint64_t held = ReadNvsimParam("ptable_bytes") - base;
  const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  std::printf(
      "eager VA race: 2 x 16 GiB lazy ranges made eager during the call: status 0x%llx, 0x%llx; "
      "nvsim holds %llu KiB of page tables, %llu KiB charged (quota 64 MiB)\n",
      static_cast<unsigned long long>(st[0]), static_cast<unsigned long long>(st[1]),
      static_cast<unsigned long long>(held >> 10), static_cast<unsigned long long>(charged >> 10));
  EXPECT_EQ(st[0], NV_OK);
  EXPECT_EQ(st[1], NV_ERR_NO_MEMORY) << "the second passes the quota";
  EXPECT_GT(held, 0u) << "the rewrite did not make the range eager";
  EXPECT_LE(held, charged) << "the driver holds page tables the quota does not count";
  EXPECT_LE(charged, 64 * kMiB);
  EXPECT_EQ(s.FreeObj(0xd5100000), NV_OK);
  EXPECT_EQ(ReadNvsimParam("ptable_bytes"), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

}  // namespace
}  // namespace vgpu_test

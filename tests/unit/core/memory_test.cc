// Memory quota: charge from the driver's reply, refund on free, refuse as RM does, and the
// object tree's cascades (nvidia-rm-abi.md §3, §4; memory-quota-h200.md).
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

TEST_F(CoreTest, ChargesTheSizeTheDriverReportsAndRefundsOnFree) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  // cuMemAlloc(4 KiB): RM rounds to 2 MiB and says so in params.size.
  Outcome o = AllocVidmem(c, d, 0x5c000010, 4096);
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  EXPECT_EQ(o.ret, 0);
  EXPECT_EQ(Charged(), 2 * kMiB);
  EXPECT_EQ(Get<uint64_t>(mem_, kParams + 64), 2 * kMiB);
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000011, 64 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 66 * kMiB);
  EXPECT_EQ(Stats().charged_peak_bytes, 66 * kMiB);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 64 * kMiB);
  Free(c, d, 0x5c000011);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().charged_peak_bytes, 66 * kMiB);
}

// F10 (docs/security/kernel-lifetime-compute.md): the driver's system memory is charged to no
// memory cgroup, so a slot's class 0x3e objects are held to its budget, apart from the video
// memory quota; a free gives the room back, and the legacy paths the budget does not count are
// refused.
TEST_F(CoreTest, SystemMemoryIsHeldToTheSlotsBudget) {
  sysmem_budget_ = 8 * kMiB;
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.size = 3 * kMiB;
  EXPECT_EQ(Alloc(c, d, 0x5c000030, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Alloc(c, d, 0x5c000031, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  Outcome o = Alloc(c, d, 0x5c000032, NV01_MEMORY_SYSTEM, Bytes(m));
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << "9 MiB on an 8 MiB budget";
  EXPECT_FALSE(o.forwarded);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY);
  Free(c, d, 0x5c000030);
  EXPECT_EQ(Alloc(c, d, 0x5c000032, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 0u) << "system memory is not video memory";
  // 6 MiB held: 2 more fill the budget exactly, and then nothing fits.
  m.size = 2 * kMiB;
  EXPECT_EQ(Alloc(c, d, 0x5c000033, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Alloc(c, d, 0x5c000034, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_REFUSE_STATUS);
  // Freeing the client frees everything under it.
  Free(c, c, c);
  uint32_t c2, d2, s2;
  Session(&c2, &d2, &s2);
  m.owner = c2;
  m.size = 8 * kMiB;
  EXPECT_EQ(Alloc(c2, d2, 0x5c000040, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
}

TEST_F(CoreTest, RefusesOverQuotaExactlyAsTheDriverDoes) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 48 * kMiB).verdict, VCORE_FORWARD);
  int calls = rm_.calls;
  Outcome o = AllocVidmem(c, d, 0x5c000011, 32 * kMiB);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(o.ret, 0) << "RM refuses with ioctl 0 and a status";
  EXPECT_EQ(rm_.calls, calls) << "a refused call never reaches the driver";
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NO_MEMORY);
  EXPECT_EQ(Charged(), 48 * kMiB);
  EXPECT_EQ(Stats().denied_quota, 1u);
  // Freeing the handle that was never created: no refund, no crash.
  Free(c, d, 0x5c000011);
  EXPECT_EQ(Charged(), 48 * kMiB);
  // Exactly up to the quota is fine.
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000012, 16 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 64 * kMiB);
}

// Address space is no video memory: a VA range is charged its page tables were it eager (issue 17
// F11.1, va_range_test.cc), never its size.
TEST_F(CoreTest, NeverChargesVirtualMemory) {
  MakeSlot(16 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.flags = 0x0008c415;    // libcuda's: VIRTUAL | LAZY | ... (every trace of tests/data/traces)
  m.size = 4211081216ull;  // the VA reservation of cuInit (nvidia-rm-abi.md §4.2)
  EXPECT_EQ(Alloc(c, d, 0x5c000020, NV50_MEMORY_VIRTUAL, Bytes(m)).verdict, VCORE_FORWARD);
  // VIRTUAL-flagged class 0x40 is refused by the driver (vidmemConstruct_IMPL): nothing.
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000021, 1 * kGiB, NVOS32_ALLOC_FLAGS_VIRTUAL).verdict,
            VCORE_FORWARD);
  EXPECT_EQ(Charged(), 8847360u) << "8.4375 MiB of page tables, not 3.9 GiB";
}

TEST_F(CoreTest, DriverFailureReleasesTheReservation) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  rm_.alloc_status = NV_ERR_NO_MEMORY;
  Outcome o = AllocVidmem(c, d, 0x5c000010, 32 * kMiB);
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 0u);
  rm_.alloc_status = NV_OK;
  rm_.rc = -VCORE_EFAULT;  // the ioctl itself failed
  o = AllocVidmem(c, d, 0x5c000010, 32 * kMiB);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
  EXPECT_EQ(Charged(), 0u);
  rm_.rc = 0;
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000010, 64 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 64 * kMiB);
}

TEST_F(CoreTest, ChargesTheReplyWhenTheDriverAllocatedMoreThanAsked) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  rm_.round = 32 * kMiB;  // RM rounds further than the request said
  AllocVidmem(c, d, 0x5c000010, 3 * kMiB);
  EXPECT_EQ(Charged(), 32 * kMiB);
}

TEST_F(CoreTest, OverQuotaFromARacedReplyIsReportedToTheHost) {
  MakeSlot(8 * kMiB);
  static int hook_calls;
  static vcore_overquota seen;
  hook_calls = 0;
  vcore_slot_set_overquota_hook(slot_, [](void*, vcore_file*, const vcore_overquota* oq) {
    ++hook_calls;
    seen = *oq;
  });
  uint32_t c, d, s;
  Session(&c, &d, &s);
  // The private copy asked 2 MiB; "another thread" made the driver allocate 16 MiB.
  rm_.round = 16 * kMiB;
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  EXPECT_EQ(Charged(), 16 * kMiB) << "charge = max(reserved, reply)";
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(seen.h_object, 0x5c000010u);
  EXPECT_EQ(seen.h_client, c);
  EXPECT_EQ(Stats().overquota_events, 1u);
}

TEST_F(CoreTest, FreeingAParentFreesItsChildren) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  AllocVidmem(c, d, 0x5c000011, 4 * kMiB);
  EXPECT_EQ(Charged(), 6 * kMiB);
  EXPECT_EQ(Stats().objects, 5u);
  Free(c, c, d);  // the device: both memory objects and the subdevice go
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 1u);
  // The children are gone: freeing them again is a no-op.
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, FreeingAClientFreesEverything) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  Free(c, 0, c);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 0u);
  EXPECT_EQ(Stats().clients, 0u);
  // Double free of the client and of a child: defined, harmless.
  Free(c, 0, c);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Stats().objects, 0u);
}

TEST_F(CoreTest, ClosingTheFileFreesTheClientsItOwns) {
  MakeSlot(0);
  vcore_file* other = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
  uint32_t c, d, s;
  Session(&c, &d, &s);  // on ctl_
  uint32_t c2 = AllocClient(other);
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  Alloc(c2, c2, 0x5c100001, NV01_DEVICE_0, std::vector<uint8_t>(NV0080_ALLOC_PARAMETERS_SIZE),
        other);
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.size = 8 * kMiB;
  Alloc(c2, 0x5c100001, 0x5c100002, NV01_MEMORY_LOCAL_USER, Bytes(m), other);
  EXPECT_EQ(Charged(), 10 * kMiB);
  vcore_file_close(other);
  EXPECT_EQ(Charged(), 2 * kMiB)
      << "only the closed file's client is freed (nvidia-rm-abi.md §9.1)";
  vcore_file_close(ctl_);
  ctl_ = nullptr;
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 0u);
}

TEST_F(CoreTest, HandleReuseReplacesTheStaleObject) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  // The driver says it created 0x5c000010 again: our record was stale.
  AllocVidmem(c, d, 0x5c000010, 4 * kMiB);
  EXPECT_EQ(Charged(), 4 * kMiB);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, ObjectsOfAnUnseenClientAreStillFreedWithIt) {
  MakeSlot(0);
  // A recording that starts mid-way: the client was never allocated through us.
  uint32_t c = 0xc1d0beef;
  AllocVidmem(c, 0x5c000001, 0x5c000010, 2 * kMiB);
  EXPECT_EQ(Charged(), 2 * kMiB);
  EXPECT_EQ(Stats().clients, 1u);
  Free(c, 0, c);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, DupOfMemoryKeepsTheChargeUntilTheLastReferenceGoes) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  NVOS55_PARAMETERS p{c, d, 0x5c000099, c, 0x5c000010, 0, 0};
  Put(kArg, Bytes(p));
  EXPECT_EQ(Call(Req(NV_ESC_RM_DUP_OBJECT, 28), kArg).verdict, VCORE_FORWARD);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 2 * kMiB) << "the dup keeps the memory alive in RM";
  Free(c, d, 0x5c000099);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, DupFromAClientOutsideTheSlotIsRefusedUnderAQuota) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NVOS55_PARAMETERS p{c, d, 0x5c000099, 0xc1d0ffff, 0x5c000010, 0, 0};
  Put(kArg, Bytes(p));
  Outcome o = Call(Req(NV_ESC_RM_DUP_OBJECT, 28), kArg);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 24), NV_ERR_INSUFFICIENT_PERMISSIONS);
  NVOS57_PARAMETERS sh{0xc1d0ffff, 0x5c000010, {0, 0, 0}, 0};
  Put(kArg, Bytes(sh));
  EXPECT_EQ(Call(Req(NV_ESC_RM_SHARE, 24), kArg).verdict, VCORE_REFUSE_STATUS);
}

TEST_F(CoreTest, MemoryClassesTheCoreCannotCountAreRefusedUnderAQuota) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  for (uint32_t cls : {NV01_MEMORY_LOCAL_PHYSICAL, NV_MEMORY_MULTICAST_FABRIC, NV_MEMORY_EXPORT,
                       NV_MEMORY_FABRIC_IMPORTED_REF, NV_MEMORY_MAPPER, NV01_MEMORY_FLA,
                       NV01_MEMORY_HW_RESOURCES, NV01_MEMORY_DEVICELESS}) {
    Outcome o = Alloc(c, d, 0x5c000030, cls, std::vector<uint8_t>(64));
    EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << std::hex << cls;
    EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_NOT_SUPPORTED);
  }
  // Without a quota they pass (and are tracked, uncharged).
  MakeSlot(0);
  Session(&c, &d, &s);
  EXPECT_EQ(Alloc(c, d, 0x5c000030, NV_MEMORY_EXPORT, std::vector<uint8_t>(64)).verdict,
            VCORE_FORWARD);
}

TEST_F(CoreTest, FabricMemoryIsChargedByAllocSize) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  std::vector<uint8_t> p(NV00F8_ALLOCATION_PARAMETERS_SIZE);
  uint64_t sz = 512 * kMiB;
  memcpy(p.data() + 8, &sz, 8);
  EXPECT_EQ(Alloc(c, d, 0x5c000040, NV_MEMORY_FABRIC, p).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 512 * kMiB);
}

TEST_F(CoreTest, LegacyVidHeapAllocIsChargedAndFreed) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NVOS32_PARAMETERS v{};
  v.hRoot = c;
  v.hObjectParent = d;
  v.function = NVOS32_FUNCTION_ALLOC_SIZE;
  uint64_t sz = 3 * kMiB;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_SIZE_OFF, &sz, 8);
  uint32_t h = 0x5c000050;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_HMEMORY_OFF, &h, 4);
  // Under a quota only with the handle provided: else the driver makes its own (issue 17, F9).
  Put(kArg, Bytes(v));
  EXPECT_EQ(Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 20), NV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(Charged(), 0u);
  uint32_t flags = NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_FLAGS_OFF, &flags, 4);
  Put(kArg, Bytes(v));
  EXPECT_EQ(Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 4 * kMiB);
  // Over quota through the legacy path: refused with the RM status at @20.
  sz = 64 * kMiB;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_SIZE_OFF, &sz, 8);
  Put(kArg, Bytes(v));
  EXPECT_EQ(Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 20), NV_ERR_NO_MEMORY);
  // NVOS32 FREE refunds.
  NVOS32_PARAMETERS f{};
  f.hRoot = c;
  f.hObjectParent = d;
  f.function = NVOS32_FUNCTION_FREE;
  memcpy(reinterpret_cast<uint8_t*>(&f) + NVOS32_FREE_HMEMORY_OFF, &h, 4);
  Put(kArg, Bytes(f));
  Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, SharedLedgerEnforcesOneQuotaAcrossSlots) {
  // The shim: each process runs its own core; the slot's processes share one ledger.
  struct Shared {
    uint64_t charged = 0;
  } shared;
  static const vcore_ledger_ops ops = {
      [](void* l, vcore_u64 b, vcore_u64 q) -> int {
        auto* s = static_cast<Shared*>(l);
        if (q && s->charged + b > q) return -VCORE_ENOSPC;
        s->charged += b;
        return 0;
      },
      [](void* l, vcore_u64 b) { static_cast<Shared*>(l)->charged += b; },
      [](void* l, vcore_u64 b) {
        auto* s = static_cast<Shared*>(l);
        s->charged = s->charged > b ? s->charged - b : 0;
      },
      [](void* l) -> vcore_u64 { return static_cast<Shared*>(l)->charged; },
      nullptr,  // sharing between processes: tests/unit/core/shared_dup_test.cc
      nullptr,
      nullptr,
      nullptr,
  };
  vcore_ledger ledger{&ops, &shared};
  MakeSlot(16 * kMiB, VCORE_UNKNOWN_STRICT, &SimHost::kOps, &ledger);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  shared.charged = 12 * kMiB;  // another process of the slot holds 12 MiB
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000010, 8 * kMiB).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000010, 4 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(shared.charged, 16 * kMiB);
  vcore_slot_destroy(slot_);
  slot_ = nullptr;
  EXPECT_EQ(shared.charged, 12 * kMiB) << "destroying the slot refunds what it charged";
}

// Found by the fuzzer: a non-client object whose handle equals its client's handle (the driver
// "accepted" it) became a root without an owner and survived every file close.
TEST_F(CoreTest, AnObjectNamedLikeItsClientStillDiesWithTheFile) {
  MakeSlot(0);
  vcore_file* other = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
  Alloc(0xc1d0abcd, 2, 0xc1d0abcd, NV20_SUBDEVICE_0, std::vector<uint8_t>(4), other);
  EXPECT_EQ(Stats().objects, 1u);
  vcore_file_close(other);
  EXPECT_EQ(Stats().objects, 0u);
}

}  // namespace
}  // namespace vgpu::core_test

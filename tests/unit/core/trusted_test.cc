// The core's use of the host op driver_memory (kmod/core/vcore.h, rm_alloc_verify.c and
// rm_alloc_post.c): after a charged allocation the size comes from the driver itself, not from
// the reply in user memory that a racing thread can rewrite (docs/nvidia-rm-abi.md §9.5).
// The "racing thread" here rewrites the reply between the fake driver's answer and vcore_post.
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

// The driver's own record, which the host op reads (the kernel host asks nvidia.ko through its
// in-kernel RM entry, kmod/driver_query.c).
struct FakeDriverRecord {
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> bytes;  // (client, object) -> GPU memory
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> sys;    // -> system memory, when it has any
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> cls;    // -> class, when it says
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> va;     // -> a VA range's size
  int queries = 0;
  int frees = 0;
  bool answer = true;      // false: the driver cannot say (e.g. an older driver)
  bool free_works = true;  // false: the in-kernel free fails
  // true: an object the record lacks is missing in the driver (-ENOENT, what kmod/driver_query.c
  // says after GET_HANDLE_INFO); false: the driver cannot say (-EIO).
  bool missing_is_enoent = false;
  std::vector<uint32_t> freed_clients;  // client frees (tampering), in order; 0 = kill only
  int class_queries = 0;                // driver_class asks
};
FakeDriverRecord* g_driver = nullptr;

int DriverMemory(void*, vcore_u32 h_client, vcore_u32, vcore_u32 h_object,
                 vcore_driver_mem* bytes) {
  auto it = g_driver->bytes.find({h_client, h_object});
  if (bytes == nullptr && h_object == h_client) {
    g_driver->freed_clients.push_back(h_client);
    return 0;
  }
  if (bytes == nullptr) {
    ++g_driver->frees;
    if (!g_driver->free_works || it == g_driver->bytes.end()) return -5;
    g_driver->bytes.erase(it);
    g_driver->sys.erase({h_client, h_object});
    return 0;
  }
  ++g_driver->queries;
  if (!g_driver->answer) return -5;
  if (it == g_driver->bytes.end()) return g_driver->missing_is_enoent ? -VCORE_ENOENT : -5;
  *bytes = {it->second, g_driver->sys[{h_client, h_object}], g_driver->cls[{h_client, h_object}],
            g_driver->va[{h_client, h_object}]};
  return 0;
}

// The class of any object (host op driver_class; kmod/driver_query.c asks GET_HANDLE_INFO): the
// record's class when it has one, "cannot say" for an object it knows no class of or, unless
// missing_is_enoent, one it does not have.
int DriverClass(void*, vcore_u32 h_client, vcore_u32 h_object, vcore_u32* cls) {
  ++g_driver->class_queries;
  if (!g_driver->answer) return -5;
  auto it = g_driver->cls.find({h_client, h_object});
  if (it != g_driver->cls.end()) {
    *cls = it->second;
    return 0;
  }
  if (g_driver->bytes.count({h_client, h_object})) return -5;
  return g_driver->missing_is_enoent ? -VCORE_ENOENT : -5;
}

vcore_host_ops OpsWithDriverMemory() {
  vcore_host_ops ops = SimHost::kOps;
  ops.driver_memory = DriverMemory;
  return ops;
}
const vcore_host_ops kTrustedOps = OpsWithDriverMemory();
vcore_host_ops OpsWithDriverClass() {
  vcore_host_ops ops = OpsWithDriverMemory();
  ops.driver_class = DriverClass;
  return ops;
}
const vcore_host_ops kClassOps = OpsWithDriverClass();
// A lazy VA range, as libcuda asks it (tests/data/traces): an eager one is refused under a quota.
constexpr uint32_t kLazyRange = 0x0008c415;

class TrustedTest : public CoreTest {
 protected:
  void SetUp() override { g_driver = &driver_; }
  void TearDown() override {
    CoreTest::TearDown();
    g_driver = nullptr;
  }

  // One RM_ALLOC of class 0x40 asking @asked bytes. The driver allocates @allocated (what it read
  // after the check), then @reply_size and @reply_status are what the reply says when the core
  // reads it (both rewritten by "another thread"). Returns the status the application sees.
  uint32_t RacedAlloc(uint32_t c, uint32_t d, uint32_t h, uint64_t asked, uint64_t allocated,
                      uint64_t reply_size, uint32_t reply_status = NV_OK) {
    return Raced(NV01_MEMORY_LOCAL_USER, c, d, h, asked, {allocated, 0, 0, 0}, reply_size,
                 reply_status);
  }

  // The same for any memory class @cls: @made is the driver's record of the object (sizes and
  // class; a record with neither size stays GPU memory 0).
  uint32_t Raced(uint32_t cls, uint32_t c, uint32_t d, uint32_t h, uint64_t asked,
                 vcore_driver_mem made, uint64_t reply_size, uint32_t reply_status = NV_OK) {
    NV_MEMORY_ALLOCATION_PARAMS m{};
    m.owner = c;
    m.flags = cls == NV01_MEMORY_LOCAL_USER ? 0x1c101 : cls == NV50_MEMORY_VIRTUAL ? kLazyRange : 0;
    m.size = asked;
    m.alignment = cls == NV01_MEMORY_LOCAL_USER ? 2 * kMiB : 0;
    NVOS64_PARAMETERS p{};
    p.hRoot = c;
    p.hObjectParent = d;
    p.hObjectNew = h;
    p.hClass = cls;
    p.pAllocParms = kParams;
    Put(kArg, Bytes(p));
    Put(kParams, Bytes(m));
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = nullptr;
    vcore_verdict v = vcore_pre(ctl_, Req(NV_ESC_RM_ALLOC, 48), kArg, &ctx, &call);
    if (v == VCORE_FORWARD) {
      driver_.bytes[{c, h}] = made.gpu;  // the driver's own record
      if (made.sys) driver_.sys[{c, h}] = made.sys;
      if (made.cls) driver_.cls[{c, h}] = made.cls;
      if (made.va) driver_.va[{c, h}] = made.va;
      uint32_t ok = NV_OK;
      mem_.Write(kArg + 40, &ok, 4);
      // The racing thread rewrites the reply before the core reads it.
      mem_.Write(kParams + 64, &reply_size, 8);
      mem_.Write(kArg + 40, &reply_status, 4);
    }
    EXPECT_EQ(vcore_post(call, 0), 0);
    return Get<uint32_t>(mem_, kArg + 40);
  }

  FakeDriverRecord driver_;
};

TEST_F(TrustedTest, ChargesWhatTheDriverHoldsNotTheRewrittenReply) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  // Checked 2 MiB; the driver read 16 MiB; the reply was rewritten back to 2 MiB.
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000010, 2 * kMiB, 16 * kMiB, 2 * kMiB), NV_OK);
  EXPECT_EQ(Charged(), 16 * kMiB) << "the driver's word, not the reply";
  EXPECT_EQ(driver_.frees, 0);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(TrustedTest, PastTheQuotaTheObjectIsFreedInTheDriverAndRefused) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  static int hook_calls;
  hook_calls = 0;
  vcore_slot_set_overquota_hook(slot_,
                                [](void*, vcore_file*, const vcore_overquota*) { ++hook_calls; });
  uint32_t c, d, s;
  Session(&c, &d, &s);
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000010, 4 * kMiB, 4 * kMiB, 4 * kMiB), NV_OK);
  uint32_t objects = Stats().objects;
  // The driver allocated 512 MiB for a 64 MiB slot; the reply says 2 MiB.
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000011, 2 * kMiB, 512 * kMiB, 2 * kMiB), NV_ERR_NO_MEMORY);
  EXPECT_EQ(driver_.frees, 1);
  EXPECT_EQ(driver_.bytes.count({c, 0x5c000011}), 0u) << "freed in the driver";
  EXPECT_EQ(Charged(), 4 * kMiB) << "reservation refunded, nothing else charged";
  EXPECT_EQ(Stats().objects, objects) << "never recorded";
  EXPECT_EQ(Stats().overquota_events, 1u);
  EXPECT_EQ(Stats().denied_quota, 1u);
  EXPECT_EQ(hook_calls, 0) << "nothing left for the host to undo";
  // A later fitting allocation still works.
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000012, 8 * kMiB, 8 * kMiB, 8 * kMiB), NV_OK);
  EXPECT_EQ(Charged(), 12 * kMiB);
}

TEST_F(TrustedTest, WhenTheDriverWillNotFreeItTheObjectIsChargedAndReported) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  static int hook_calls;
  hook_calls = 0;
  vcore_slot_set_overquota_hook(slot_,
                                [](void*, vcore_file*, const vcore_overquota*) { ++hook_calls; });
  driver_.free_works = false;
  uint32_t c, d, s;
  Session(&c, &d, &s);
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000011, 2 * kMiB, 128 * kMiB, 2 * kMiB), NV_OK);
  EXPECT_EQ(Charged(), 128 * kMiB) << "the ledger follows the driver even past the quota";
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(Stats().overquota_events, 1u);
}

TEST_F(TrustedTest, AFailureStatusWrittenOverTheReplyDoesNotHideTheObject) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  uint32_t objects = Stats().objects;
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000010, 2 * kMiB, 2 * kMiB, 2 * kMiB, NV_ERR_NO_MEMORY),
            NV_ERR_NO_MEMORY);
  EXPECT_EQ(Charged(), 2 * kMiB) << "the driver holds it, so it is charged";
  EXPECT_EQ(Stats().objects, objects + 1);
  Free(c, d, 0x5c000010);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(TrustedTest, ARealFailureStaysAFailure) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  uint32_t objects = Stats().objects;
  int queries = driver_.queries;
  rm_.alloc_status = NV_ERR_NO_MEMORY;  // the driver itself refuses: no object exists
  EXPECT_EQ(AllocVidmem(c, d, 0x5c000010, 2 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(driver_.queries, queries + 1) << "asked, since the status could be a rewrite";
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, objects);
}

TEST_F(TrustedTest, WithoutAnAnswerTheReplyIsUsedAsBefore) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  driver_.answer = false;
  uint32_t c, d, s;
  Session(&c, &d, &s);
  EXPECT_EQ(RacedAlloc(c, d, 0x5c000010, 2 * kMiB, 16 * kMiB, 8 * kMiB), NV_OK);
  EXPECT_EQ(Charged(), 8 * kMiB) << "max(reserved, reply)";
}

TEST_F(TrustedTest, EveryAllocationAsksTheDriverButNoControlDoes) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);  // client (a root: not asked), device, subdevice
  EXPECT_EQ(driver_.queries, 2) << "device and subdevice: hClass may have been rewritten";
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS fb{};
  fb.fbInfoListSize = 1;
  fb.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  for (int i = 0; i < 10; ++i) Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, Bytes(fb));
  EXPECT_EQ(driver_.queries, 2) << "controls never pay for a query";
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.flags = 0x1c101;
  m.size = 2 * kMiB;
  EXPECT_EQ(Alloc(c, d, 0x5c000020, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_EQ(driver_.queries, 3);
  EXPECT_EQ(Charged(), 0u) << "system memory the driver does not count is not charged";
  driver_.bytes[{c, 0x5c000010}] = 2 * kMiB;
  AllocVidmem(c, d, 0x5c000010, 2 * kMiB);
  EXPECT_EQ(driver_.queries, 4);
  EXPECT_TRUE(driver_.freed_clients.empty()) << "nothing was tampered with";
}

// docs/results/kmod-issue4-tamper.md: the core saw NV50_MEMORY_VIRTUAL (no charge), the driver read
// NV01_MEMORY_LOCAL_USER and holds 32 MiB for the same handle. The file's clients are freed in the
// driver, dropped from the table, and the host is asked to kill (a client free).
TEST_F(TrustedTest, VideoMemoryBehindAnUnchargedClassFreesTheFilesClients) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c000030}] = 32 * kMiB;  // what the driver made
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.flags = kLazyRange;
  m.size = 32 * kMiB;
  Alloc(c, d, 0x5c000030, NV50_MEMORY_VIRTUAL, Bytes(m));
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Charged(), 0u);
  vcore_stats st = Stats();
  EXPECT_EQ(st.objects, 0u) << "the file's clients are gone from the table";
  EXPECT_GE(st.denied, 1u);
}

// hObjectNew (or hRoot) rewritten: the object the core recorded does not exist in the driver.
TEST_F(TrustedTest, AnObjectTheDriverDoesNotHaveMeansTampering) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.missing_is_enoent = true;
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.flags = kLazyRange;
  m.size = 32 * kMiB;
  Alloc(c, d, 0x5c000040, NV50_MEMORY_VIRTUAL, Bytes(m));  // the driver made another handle
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Stats().objects, 0u);
}

// A VID_HEAP allocation under a quota names its handle (MEMORY_HANDLE_PROVIDED), but the driver
// reads the flags again; with the flag cleared in its copy it made its own handle
// (_rmVidHeapControlAllocCommon) and the one the core holds names nothing (issue 17, F9).
TEST_F(TrustedTest, AVidHeapAllocationUnderAnotherHandleMeansTampering) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.missing_is_enoent = true;
  auto vhc = [&](uint32_t h) {
    NVOS32_PARAMETERS v{};
    v.hRoot = c;
    v.hObjectParent = d;
    v.function = NVOS32_FUNCTION_ALLOC_SIZE;
    uint32_t flags = NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED;
    uint64_t sz = 8 * kMiB;
    auto* b = reinterpret_cast<uint8_t*>(&v);
    memcpy(b + NVOS32_ALLOCSIZE_HMEMORY_OFF, &h, 4);
    memcpy(b + NVOS32_ALLOCSIZE_FLAGS_OFF, &flags, 4);
    memcpy(b + NVOS32_ALLOCSIZE_SIZE_OFF, &sz, 8);
    Put(kArg, Bytes(v));
    Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
  };
  driver_.bytes[{c, 0x5c000070}] = 8 * kMiB;  // the control: the driver used the handle
  vhc(0x5c000070);
  EXPECT_EQ(Charged(), 8 * kMiB);
  EXPECT_TRUE(driver_.freed_clients.empty());
  vhc(0x5c000071);  // the driver has nothing under it
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 0u);
}

// A VIRTUAL-flagged 0x40 reserves nothing; if the driver nonetheless holds video memory for it
// (the flag was cleared in user memory), that is charged like any growth, and refused past the
// quota (the object freed in the driver), never left uncharged.
TEST_F(TrustedTest, AVirtualFlaggedAllocationIsChargedWhatTheDriverHolds) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c000050}] = 16 * kMiB;
  AllocVidmem(c, d, 0x5c000050, 16 * kMiB, 0x1c101 | 0x00080000 /* VIRTUAL */);
  EXPECT_EQ(Charged(), 16 * kMiB);
  driver_.bytes[{c, 0x5c000060}] = 60 * kMiB;
  AllocVidmem(c, d, 0x5c000060, 60 * kMiB, 0x1c101 | 0x00080000);
  EXPECT_EQ(Charged(), 16 * kMiB) << "past the quota: freed in the driver, not recorded";
  EXPECT_EQ(driver_.frees, 1);
  EXPECT_TRUE(driver_.freed_clients.empty());
}

// hObjectNew rewritten to a handle the slot already holds: the driver made another object, and
// the insert would replace (and refund) the held record while the driver keeps both.
TEST_F(TrustedTest, AnOkAllocationOfAHandleInUseMeansTampering) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c000070}] = 16 * kMiB;
  AllocVidmem(c, d, 0x5c000070, 16 * kMiB);
  EXPECT_EQ(Charged(), 16 * kMiB);
  AllocVidmem(c, d, 0x5c000070, 16 * kMiB);  // the fake driver says NV_OK again
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Charged(), 0u) << "the file's clients were freed in the driver and the table";
}

// Issue 17, F10: class 0x3e allocations checked at `asked`, of which the driver made `allocated`
// (a sibling raised or lowered the size before the driver's read) while the reply says `reply`
// (the sibling's second store, before the core reads it): the budget holds the driver's size.
TEST_F(TrustedTest, SystemMemoryIsHeldToTheBudgetAtTheDriversSize) {
  sysmem_budget_ = 8 * kMiB;
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  auto sysmem = [&](uint32_t h, uint64_t asked, uint64_t allocated, uint64_t reply) {
    return Raced(NV01_MEMORY_SYSTEM, c, d, h, asked, {0, allocated, NV01_MEMORY_SYSTEM, 0}, reply);
  };
  // Checked 4 KiB, the driver made 16 MiB: twice the budget. Freed in the driver, refused.
  EXPECT_EQ(sysmem(0x5c000080, 4096, 16 * kMiB, 4096), NV_ERR_NO_MEMORY);
  EXPECT_EQ(driver_.frees, 1);
  EXPECT_EQ(driver_.bytes.count({c, 0x5c000080}), 0u) << "freed in the driver";
  EXPECT_TRUE(driver_.freed_clients.empty()) << "a size is no tampering: the caller lives";
  // Checked 4 KiB, the driver made 2 MiB: it fits, and the budget counts 2 MiB.
  EXPECT_EQ(sysmem(0x5c000081, 4096, 2 * kMiB, 4096), NV_OK);
  // Checked 4 MiB, the driver made 1 MiB: the unused 3 MiB go back at once.
  EXPECT_EQ(sysmem(0x5c000082, 4 * kMiB, 1 * kMiB, 4 * kMiB), NV_OK);
  // 3 MiB held: 5 more fit exactly, then nothing.
  EXPECT_EQ(sysmem(0x5c000083, 5 * kMiB, 5 * kMiB, 5 * kMiB), NV_OK);
  EXPECT_EQ(sysmem(0x5c000084, 4096, 4096, 4096), NV_ERR_NO_MEMORY);
  EXPECT_EQ(driver_.frees, 1) << "the last one was refused before the driver saw it";
  Free(c, d, 0x5c000081);
  EXPECT_EQ(sysmem(0x5c000085, 2 * kMiB, 2 * kMiB, 2 * kMiB), NV_OK) << "the free gave 2 MiB back";
  EXPECT_EQ(Charged(), 0u) << "system memory is not video memory";
}

// hClass rewritten (docs/results/kmod-issue4-tamper.md) into 0x3e: the core saw a VA range, the
// driver made system memory no budget would count. The driver's class differs: tampering.
TEST_F(TrustedTest, AClassTheDriverDidNotMakeMeansTampering) {
  sysmem_budget_ = 8 * kMiB;
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c000090}] = 0;
  driver_.sys[{c, 0x5c000090}] = 64 * kMiB;
  driver_.cls[{c, 0x5c000090}] = NV01_MEMORY_SYSTEM;
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.flags = kLazyRange;
  m.size = 64 * kMiB;
  Alloc(c, d, 0x5c000090, NV50_MEMORY_VIRTUAL, Bytes(m));
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Stats().objects, 0u);
}

// The other way, into a class the core neither charges nor limits (0x3e -> a VA range): nothing
// escapes, so no tampering; the driver's word settles the budget at what it holds (nothing).
TEST_F(TrustedTest, AClassSwappedIntoAnUnlimitedOneIsNoTampering) {
  sysmem_budget_ = 8 * kMiB;
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.owner = c;
  m.size = 8 * kMiB;
  driver_.bytes[{c, 0x5c0000a0}] = 0;
  driver_.cls[{c, 0x5c0000a0}] = NV50_MEMORY_VIRTUAL;
  EXPECT_EQ(Alloc(c, d, 0x5c0000a0, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_TRUE(driver_.freed_clients.empty());
  // The 8 MiB reservation went back: the whole budget is there.
  driver_.bytes[{c, 0x5c0000a1}] = 0;
  driver_.sys[{c, 0x5c0000a1}] = 8 * kMiB;
  driver_.cls[{c, 0x5c0000a1}] = NV01_MEMORY_SYSTEM;
  EXPECT_EQ(Alloc(c, d, 0x5c0000a1, NV01_MEMORY_SYSTEM, Bytes(m)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_OK);
}

// Issue 17, F11.1: hClass rewritten between the core's copy and the driver's read into a class the
// core counts and charges an estimate for, which holds no memory the size query answers for. With
// only driver_memory the driver says "not memory" and the core cannot tell; with driver_class
// (GET_HANDLE_INFO's CLASSID for any object) the swap is tampering: the file's clients are freed
// in the driver and nothing of the call stays in the table, the TSG registry or the charge.
class ClassSwapTest : public TrustedTest {
 protected:
  // hClass @checked is what the core copies; the driver made @made under handle @h (parent
  // @parent).
  Outcome Swapped(uint32_t c, uint32_t parent, uint32_t h, uint32_t checked, uint32_t made) {
    driver_.cls[{c, h}] = made;
    std::vector<uint8_t> params(NV_CHANNEL_ALLOC_PARAMS_SIZE);  // room for any class's params
    NV_MEMORY_ALLOCATION_PARAMS m{};
    m.size = 64 * 1024;
    if (checked == NV50_MEMORY_VIRTUAL) m.flags = kLazyRange;  // an eager one is refused first
    memcpy(params.data(), &m, sizeof(m));
    if (checked == KEPLER_CHANNEL_GROUP_A) {
      NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
      t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
      memcpy(params.data(), &t, sizeof(t));
    }
    return Alloc(c, parent, h, checked, params);
  }
  // A TSG made as asked, as the parent of channels.
  uint32_t Tsg(uint32_t c, uint32_t d, uint32_t h) {
    driver_.cls[{c, h}] = KEPLER_CHANNEL_GROUP_A;
    NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
    t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
    EXPECT_EQ(Alloc(c, d, h, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict, VCORE_FORWARD);
    return h;
  }
};

TEST_F(ClassSwapTest, MemoryMadeIntoATsgChannelOrVaSpaceMeansTampering) {
  struct Swap {
    uint32_t checked, made;
    bool under_tsg;
  };
  const Swap swaps[] = {
      {NV01_MEMORY_LOCAL_USER, KEPLER_CHANNEL_GROUP_A, false},
      {NV01_MEMORY_LOCAL_USER, HOPPER_CHANNEL_GPFIFO_A, true},
      {NV01_MEMORY_LOCAL_USER, FERMI_VASPACE_A, false},
      {NV50_MEMORY_VIRTUAL, KEPLER_CHANNEL_GROUP_A, false},
      {NV01_MEMORY_SYSTEM, FERMI_VASPACE_A, false},
      {FERMI_CONTEXT_SHARE_A, HOPPER_CHANNEL_GPFIFO_A, true},  // a class the core lets pass
  };
  for (const Swap& w : swaps) {
    SCOPED_TRACE(testing::Message() << std::hex << "0x" << w.checked << " -> 0x" << w.made);
    driver_ = FakeDriverRecord{};
    MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
    uint32_t c, d, s;
    Session(&c, &d, &s);
    const uint32_t parent = w.under_tsg ? Tsg(c, d, 0x5c0000b0) : d;
    const int sizes = driver_.queries;
    Swapped(c, parent, 0x5c0000b1, w.checked, w.made);
    EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
    EXPECT_EQ(driver_.queries, sizes) << "the class decided; no size was asked";
    const vcore_stats st = Stats();
    EXPECT_EQ(st.objects, 0u);
    EXPECT_EQ(st.tsgs, 0u);
    EXPECT_EQ(st.overquota_events, 1u);
    EXPECT_EQ(Charged(), 0u);
  }
}

// The reverse: checked as a TSG (counted, registered, charged its estimate), made as something
// else; and a VA space made as a VA range.
TEST_F(ClassSwapTest, ATsgOrVaSpaceMadeIntoAnotherClassMeansTampering) {
  const std::pair<uint32_t, uint32_t> swaps[] = {
      {KEPLER_CHANNEL_GROUP_A, FERMI_VASPACE_A},
      {KEPLER_CHANNEL_GROUP_A, NV50_MEMORY_VIRTUAL},
      {KEPLER_CHANNEL_GROUP_A, FERMI_CONTEXT_SHARE_A},
      {FERMI_VASPACE_A, NV50_MEMORY_VIRTUAL},
  };
  for (const auto& [checked, made] : swaps) {
    SCOPED_TRACE(testing::Message() << std::hex << "0x" << checked << " -> 0x" << made);
    driver_ = FakeDriverRecord{};
    MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
    uint32_t c, d, s;
    Session(&c, &d, &s);
    Swapped(c, d, 0x5c0000c0, checked, made);
    EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
    EXPECT_EQ(Stats().objects, 0u);
    EXPECT_EQ(Stats().tsgs, 0u) << "no TSG the driver does not have in the registry";
    EXPECT_EQ(Charged(), 0u);
  }
}

// No swap: a TSG, a channel and a VA space made as checked are recorded, counted and charged
// their estimates; only the class is asked (no size query for objects that are not memory).
TEST_F(ClassSwapTest, ObjectsMadeAsCheckedAreRecordedAndAskedOnlyTheirClass) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  const int sizes = driver_.queries, classes = driver_.class_queries;
  const uint32_t tsg = Tsg(c, d, 0x5c0000d0);
  Swapped(c, tsg, 0x5c0000d1, HOPPER_CHANNEL_GPFIFO_A, HOPPER_CHANNEL_GPFIFO_A);
  Swapped(c, d, 0x5c0000d2, FERMI_VASPACE_A, FERMI_VASPACE_A);
  EXPECT_TRUE(driver_.freed_clients.empty());
  EXPECT_EQ(driver_.class_queries, classes + 3);
  EXPECT_EQ(driver_.queries, sizes) << "no size query for a TSG, channel or VA space";
  EXPECT_EQ(Stats().tsgs, 1u);
  const auto* abi = &vcore_abi_580;
  EXPECT_EQ(Charged(), vcore_abi_class(abi, KEPLER_CHANNEL_GROUP_A)->rm_internal_bytes +
                           vcore_abi_class(abi, HOPPER_CHANNEL_GPFIFO_A)->rm_internal_bytes +
                           vcore_abi_class(abi, FERMI_VASPACE_A)->rm_internal_bytes);
  // Memory made as checked: the class, then the size.
  driver_.bytes[{c, 0x5c0000d3}] = 2 * kMiB;
  driver_.cls[{c, 0x5c0000d3}] = NV01_MEMORY_LOCAL_USER;
  AllocVidmem(c, d, 0x5c0000d3, 2 * kMiB);
  EXPECT_EQ(driver_.queries, sizes + 1);
  EXPECT_TRUE(driver_.freed_clients.empty());
}

// The swaps that let nothing escape stay what they were with the class query: memory made as a VA
// range is charged what the driver holds, the caller lives.
TEST_F(ClassSwapTest, MemoryMadeIntoAVaRangeIsStillNoTampering) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c0000e0}] = 0;
  driver_.cls[{c, 0x5c0000e0}] = NV50_MEMORY_VIRTUAL;
  AllocVidmem(c, d, 0x5c0000e0, 16 * kMiB);
  EXPECT_TRUE(driver_.freed_clients.empty());
  EXPECT_EQ(Stats().objects, 4u) << "client, device, subdevice and the record";
  EXPECT_EQ(Charged(), 0u) << "the driver's size, not the 16 MiB reservation";
}

// The status is user memory too: a sibling's second store can write a failure over the driver's
// NV_OK. The size query cannot find a TSG, channel or VA space, so the object was recorded nowhere
// and counted against no cap; the driver's class finds it, and it is verified as any other.
TEST_F(ClassSwapTest, AFailureStatusHidesNoTsg) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  rm_.alloc_status = NV_ERR_NO_MEMORY;  // what the caller's struct says after the call
  Swapped(c, d, 0x5c000100, KEPLER_CHANNEL_GROUP_A, KEPLER_CHANNEL_GROUP_A);
  EXPECT_TRUE(driver_.freed_clients.empty());
  EXPECT_EQ(Stats().tsgs, 1u) << "the TSG the driver made is in the registry";
  EXPECT_EQ(Charged(), vcore_abi_class(&vcore_abi_580, KEPLER_CHANNEL_GROUP_A)->rm_internal_bytes);
  // Made as a TSG where memory was checked, under a failure status: tampering.
  Swapped(c, d, 0x5c000101, NV01_MEMORY_LOCAL_USER, KEPLER_CHANNEL_GROUP_A);
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
  EXPECT_EQ(Stats().tsgs, 0u);
}

// Where the driver cannot name the class (an error other than "no such object"), the size query
// decides as before; where it has no such object, that is tampering as before.
TEST_F(ClassSwapTest, WithoutTheDriversClassTheSizeQueryDecidesAsBefore) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kClassOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  driver_.bytes[{c, 0x5c0000f0}] = 2 * kMiB;  // no class in the record: "cannot say"
  AllocVidmem(c, d, 0x5c0000f0, 2 * kMiB);
  EXPECT_TRUE(driver_.freed_clients.empty());
  EXPECT_EQ(Charged(), 2 * kMiB);
  driver_.missing_is_enoent = true;
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.size = 64 * 1024;
  m.flags = kLazyRange;
  Alloc(c, d, 0x5c0000f1, NV50_MEMORY_VIRTUAL, Bytes(m));  // the driver has no such object
  EXPECT_EQ(driver_.freed_clients, std::vector<uint32_t>{c});
}

// Issue 17 F11.1: the driver reads a VA range's size (and flags) again after the core's check. The
// page tables charged follow the driver's own size of the range (GET_SURFACE_INFO, kmod/
// driver_query.c), never the size the core was asked: raised past the quota, the range is freed
// in the driver and refused; lowered, the rest goes back at once.
TEST_F(TrustedTest, AVaRangeIsChargedThePageTablesOfTheDriversSize) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  constexpr uint64_t kGiB = 1024 * kMiB;
  auto range = [&](uint32_t h, uint64_t asked, uint64_t made) {
    return Raced(NV50_MEMORY_VIRTUAL, c, d, h, asked, {0, 0, NV50_MEMORY_VIRTUAL, made}, asked);
  };
  EXPECT_EQ(range(0x5c0000b0, kGiB, 16 * kGiB), NV_OK);
  EXPECT_EQ(Charged(), vcore_va_range_ptables(16 * kGiB)) << "the driver's size, not the asked";
  EXPECT_EQ(range(0x5c0000b1, kGiB, 32 * kGiB), NV_ERR_NO_MEMORY);
  EXPECT_EQ(driver_.frees, 1) << "past the quota: freed in the driver";
  EXPECT_TRUE(driver_.freed_clients.empty()) << "a size is no tampering";
  EXPECT_EQ(range(0x5c0000b2, 8 * kGiB, kGiB), NV_OK);
  EXPECT_EQ(Charged(), vcore_va_range_ptables(16 * kGiB) + vcore_va_range_ptables(kGiB))
      << "what the driver did not make went back at once";
  EXPECT_EQ(Stats().internal_charged_bytes, Charged());
}

// A VID_HEAP allocation checked as video memory that the driver made a VA range (VIRTUAL set by a
// sibling's store): charged the range's page tables, not the video memory it did not make.
TEST_F(TrustedTest, AVidHeapAllocationMadeVirtualIsChargedItsPageTables) {
  MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kTrustedOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  const uint32_t h = 0x5c0000c0;
  driver_.bytes[{c, h}] = 0;
  driver_.cls[{c, h}] = NV50_MEMORY_VIRTUAL;
  driver_.va[{c, h}] = 32 * kMiB;
  EXPECT_EQ(VidHeapAlloc(c, d, h, 32 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), vcore_va_range_ptables(32 * kMiB));
}

}  // namespace
}  // namespace vgpu::core_test

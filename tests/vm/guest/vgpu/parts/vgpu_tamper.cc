// The allocation tamper (docs/results/kmod-issue4-tamper.md), deterministically: what an RM_ALLOC
// creates is rewritten between vgpu.ko's private copy of the NVOS64 and the driver's own copy-in. A
// sibling thread can land that store only by chance (vgpu_hostile.cc races it for real and asserts
// what holds whether or not the window is caught); here nvsim's test hook lands it every time
// (tests/vm/nvsim/nvsim_hook.c, rewrite_alloc_*: the u32 at an offset of the caller's struct is
// rewritten just before nvsim copies it in, exactly where the sibling's store would land). After
// every successful RM_ALLOC the core asks the driver what it made (kmod/driver_query.c); a mismatch
// frees the file's clients in the driver and kills the caller. Linked into vgpu_gtest
// (guest.cmake).
//
// Each case runs in a forked child and asserts:
//   - armed: the child is killed by SIGKILL inside the call (it never returns to user code),
//     nvsim made exactly one rewrite, the slot counted exactly one tampering (stats/overquota),
//     and afterwards nvsim holds nothing for the slot and the slot is charged nothing;
//   - not armed (the control): the same call returns, the child lives, the slot counts no
//     tampering; so the kill above is the rewrite's doing and nothing else's.
#include <sys/mman.h>
#include <sys/wait.h>

#include <csignal>
#include <fstream>
#include <string>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// Arms nvsim's rewrite_alloc_* hook: the next RM_ALLOC of this process gets `value` stored at
// `offset` of its NVOS64 after the proxy's copy and before nvsim's own read (a sibling's store).
bool ArmAllocRewrite(uint32_t offset, uint64_t value) {
  return WriteNvsimParam("rewrite_alloc_offset", offset) &&
         WriteNvsimParam("rewrite_alloc_value", value) &&
         WriteNvsimParam("rewrite_alloc_tgid", static_cast<uint64_t>(getpid()));
}

enum class Field { kClass, kNewHandle, kNewHandleToZero, kRoot };

struct Case {
  Field field;
  uint32_t offset;  // in the NVOS64
  const char* what;
};

// Child exit codes.
constexpr int kSessionFailed = 2;
constexpr int kSetupFailed = 4;
constexpr int kIoctlFailed = 5;
constexpr int kSurvived = 3;  // returned from the armed call

// Runs `calls(a)` in a forked child, with tenant A's session `a` open on `slot` (else the child
// exits kSessionFailed; it exits kSurvived if `calls` returns), and returns the child's wait
// status once it is gone, with nvsim's RM_ALLOC hook disarmed whatever happened to it.
template <typename Calls>
int RunTenant(const ScopedSlot& slot, Calls calls) {
  const pid_t child = fork();
  if (child == 0) {
    Session a;
    if (!a.Open(slot.ctl(), slot.dev()).empty()) _exit(kSessionFailed);
    calls(a);
    _exit(kSurvived);
  }
  int status = 0;
  EXPECT_GE(child, 0);
  if (child > 0) {
    EXPECT_EQ(waitpid(child, &status, 0), child);
  }
  EXPECT_TRUE(WriteNvsimParam("rewrite_alloc_tgid", 0));  // disarm, whatever happened
  return status;
}

// Two tenants on slots of their own: B (64 MiB quota) with its session open here, and A's slot,
// whose calls run in a child (RunTenant).
struct TwoTenants {
  explicit TwoTenants(uint64_t a_quota) : slot_b(64 * kMiB, "b"), slot_a(a_quota, "a") {}
  // "" when both slots exist and B's session is open.
  std::string Open() {
    if (!slot_b.ok() || !slot_a.ok()) return "no slots";
    return b.Open(slot_b.ctl(), slot_b.dev());
  }
  ScopedSlot slot_b, slot_a;
  Session b;
};

// The call a tenant makes, and what nvsim is told to turn it into:
//   kClass:     hClass NV50_MEMORY_VIRTUAL (a VA range, never charged) -> NV01_MEMORY_LOCAL_USER
//               (16 MiB of video memory the core would never charge);
//   kNewHandle: hObjectNew = a handle the slot already holds -> a fresh one (the record the core
//               would replace is refunded while the driver keeps both);
//   kNewHandleToZero: hObjectNew = a fresh handle -> 0 (the driver chooses one, which the core
//               could learn only from the reply, user memory the sibling can rewrite again);
//   kRoot:      hRoot = the tenant's client A -> its client B, which has a device under the same
//               handle (the driver makes the memory under B, the core records it under A).
[[noreturn]] void Child(const Session& s, const Case& c, bool armed) {
  nv_memory_allocation_params mp = VidmemParams(s.client, 16 * kMiB);
  uint32_t held = 0x100;
  if (Alloc(s.ctl, s.client, s.device, &held, NV01_MEMORY_LOCAL_USER, &mp) != NV_OK)
    _exit(kSetupFailed);
  uint32_t client_b = 0, device_b = s.device;
  if (c.field == Field::kRoot) {
    nv0080_alloc_params dp{};
    if (AllocClient(s.ctl, &client_b) != NV_OK ||
        Alloc(s.ctl, client_b, client_b, &device_b, NV01_DEVICE_0, &dp) != NV_OK)
      _exit(kSetupFailed);
  }
  nvos64 a{};
  a.hRoot = s.client;
  a.hObjectParent = s.device;
  a.hObjectNew = c.field == Field::kNewHandle ? held : 0x2000;
  a.hClass = c.field == Field::kClass ? NV50_MEMORY_VIRTUAL : NV01_MEMORY_LOCAL_USER;
  // A lazy range: the core forwards it (an eager one it refuses, issue 17 F11.1).
  if (c.field == Field::kClass) mp.flags |= NVOS32_ALLOC_FLAGS_LAZY;
  a.pAllocParms = Ptr(&mp);
  uint32_t value = c.field == Field::kClass             ? NV01_MEMORY_LOCAL_USER
                   : c.field == Field::kNewHandle       ? 0x2000
                   : c.field == Field::kNewHandleToZero ? 0
                                                        : client_b;
  if (armed && (!ArmAllocRewrite(c.offset, value))) _exit(kSetupFailed);
  Rc rc = RawIoctl(s.ctl, NV_ESC_RM_ALLOC, &a, sizeof(a));
  if (rc.ret != 0) _exit(kIoctlFailed);
  _exit(armed ? kSurvived : 0);
}

void RewriteDuringTheCall(const Case& c, bool armed) {
  SCOPED_TRACE(std::string(c.what) + (armed ? " rewritten" : " not rewritten (control)"));
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_alloc_* test hook";
  const int status = RunTenant(slot, [&](const Session& s) { Child(s, c, armed); });
  if (armed) {
    EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1) << "nvsim made the rewrite once";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "status 0x" << std::hex << status
        << " (exit 3: returned from the call; 2/4: setup failed; 5: the ioctl failed)";
    EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
  } else {
    EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status 0x" << std::hex << status;
    EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 0u);
  }
  // Whatever the driver made, under whichever handle or client: freed with the child's files,
  // and nothing stays charged.
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base) << "nvsim free == heap - charge afterwards";
}

// NVOS64: hRoot @0, hObjectNew @8, hClass @12 (nvsim_abi.h).
const Case kClass{Field::kClass, 12, "hClass"};
const Case kNewHandle{Field::kNewHandle, 8, "hObjectNew"};
const Case kNewHandleToZero{Field::kNewHandleToZero, 8, "hObjectNew (to 0)"};
const Case kRoot{Field::kRoot, 0, "hRoot"};

TEST(Tamper, RewrittenClassKillsTheCaller) { RewriteDuringTheCall(kClass, true); }
TEST(Tamper, RewrittenNewHandleKillsTheCaller) { RewriteDuringTheCall(kNewHandle, true); }
TEST(Tamper, NewHandleRewrittenToZeroKillsTheCaller) {
  RewriteDuringTheCall(kNewHandleToZero, true);
}
TEST(Tamper, RewrittenRootKillsTheCaller) { RewriteDuringTheCall(kRoot, true); }
TEST(Tamper, SameCallsUnrewrittenLive) {
  for (const Case* c : {&kClass, &kNewHandle, &kNewHandleToZero, &kRoot})
    RewriteDuringTheCall(*c, false);
}

// The reverse class swap: the tenant asks for 16 MiB of video memory (class 0x40, reserved against
// the quota before the call) and a sibling's store turns hClass into NV50_MEMORY_VIRTUAL before
// the driver reads it, so the driver makes a VA range: no video memory of its own, but, the 0x40
// params lacking LAZY, the page tables of its whole extent (issue 17 F11.1). Not tampering
// (nothing escapes the quota), but the charge must be what the driver made as soon as the call
// ends: before, the 16 MiB reservation stayed charged until the free, so such swaps could hold a
// tenant below its quota with no memory behind it (docs/results/kmod-issue4-tamper.md, "a class
// swap over-charges").
TEST(Tamper, ClassSwappedAwayFromVidmemIsChargedWhatTheDriverMade) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_alloc_* test hook";
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  nv_memory_allocation_params mp = VidmemParams(s.client, 16 * kMiB);
  ASSERT_TRUE(ArmAllocRewrite(12, NV50_MEMORY_VIRTUAL));
  uint32_t h = 0x2100;
  const int64_t st = Alloc(s.ctl, s.client, s.device, &h, NV01_MEMORY_LOCAL_USER, &mp);
  ASSERT_TRUE(WriteNvsimParam("rewrite_alloc_tgid", 0));
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1) << "nvsim made the rewrite once";
  EXPECT_EQ(st, NV_OK);
  // The 0x40 params have no LAZY: the driver made the range eager, with its page tables (F11.1).
  const uint64_t tables = NvsimUsedBytes() - base;
  EXPECT_GT(tables, 0u) << "nvsim made no page tables for an eager range";
  EXPECT_LT(tables, 1 * kMiB) << "the driver made a VA range, no 16 MiB of video memory";
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), tables)
      << "charged what the driver made (the range's page tables, from its size), when the call "
         "ended (not the 16 MiB reservation)";
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 0u) << "not tampering: nothing escaped the quota";
  // The rest of the quota is still there for real memory.
  EXPECT_EQ(s.Vidmem(0x2101, 62 * kMiB), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 62 * kMiB + tables);
  EXPECT_EQ(s.FreeObj(0x2101), NV_OK);
  EXPECT_EQ(s.FreeObj(h), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base);
}

// A handle the driver chooses (hObjectNew 0) would reach the core only through the reply, which
// a sibling thread can rewrite after the driver wrote it (to 0, or to another handle; with the
// status, to a failure), leaving the driver's object unrecorded and uncharged. vgpu.ko therefore
// refuses it, as the driver refuses what it does not support, for every class but a client
// (kmod/core/rm_alloc.c). Nothing reaches the driver; a client still gets a driver-chosen handle
// (Session::Open allocates its client that way).
TEST(Tamper, DriverChosenHandleIsRefusedForMemory) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  for (uint32_t cls : {NV01_MEMORY_LOCAL_USER, NV50_MEMORY_VIRTUAL, NV01_MEMORY_SYSTEM}) {
    nv_memory_allocation_params mp{};
    mp.owner = s.client;
    mp.size = 2 * kMiB;
    uint32_t h = 0;
    EXPECT_EQ(Alloc(s.ctl, s.client, s.device, &h, cls, &mp), NV_ERR_NOT_SUPPORTED)
        << "class 0x" << std::hex << cls;
    EXPECT_EQ(h, 0u);
  }
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  uint32_t second_client = 0;
  EXPECT_EQ(AllocClient(s.ctl, &second_client), NV_OK);
  EXPECT_NE(second_client, 0u);
}

// Tenant A must not be able to have vgpu.ko free tenant B's client. A allocates a client whose
// hObjectNew in the core's private copy is B's client handle, and the store of a sibling thread
// (here nvsim's hook) turns it into 0 before the driver reads it, so that the driver makes a fresh
// client for A. Before client records were confirmed by the driver, the core recorded B's handle
// as a client owned by A's file, and a later tampering (hClass rewrite) had it freed: through the
// driver's in-kernel entry, which checks no ownership, that freed B's client and its memory
// (measured on 6.1). Now the handle is claimed node-wide before the call (kmod/core/rm_alloc.c,
// claim_client): the driver already has B's client under it, so A's call is refused the way the
// driver refuses a duplicate (0x19), before the driver sees it. A's tampering afterwards frees
// only A's own clients and kills A.
TEST(Tamper, TenantCannotHaveAnotherTenantsClientFreed) {
  TwoTenants t(64 * kMiB);
  ASSERT_EQ(t.Open(), "");
  Session& b = t.b;
  ASSERT_EQ(b.Vidmem(0x500, 16 * kMiB), NV_OK);
  const uint64_t before = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  const int status = RunTenant(t.slot_a, [&](Session& a) {
    if (!ArmAllocRewrite(8, 0)) _exit(kSetupFailed);
    nvos64 r{};
    r.hObjectNew = b.client;
    r.hClass = NV01_ROOT_CLIENT;
    if (RawIoctl(a.ctl, NV_ESC_RM_ALLOC, &r, sizeof(r)).ret != 0 ||
        r.status != NV_ERR_INSERT_DUPLICATE_NAME)
      _exit(kIoctlFailed);
    nv_memory_allocation_params mp = VidmemParams(a.client, 16 * kMiB);
    mp.flags |= NVOS32_ALLOC_FLAGS_LAZY;  // a range the core forwards (F11.1)
    if (!ArmAllocRewrite(12, NV01_MEMORY_LOCAL_USER)) _exit(kSetupFailed);
    uint32_t h = 0x2000;
    Alloc(a.ctl, a.client, a.device, &h, NV50_MEMORY_VIRTUAL, &mp);
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status << " (exit 5: the client alloc was not refused 0x19)";
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1)
      << "only the class rewrite reached the driver; the client alloc was refused before it";
  EXPECT_EQ(NvsimUsedBytes(), before) << "B's memory is still there";
  EXPECT_EQ(b.Vidmem(0x501, 2 * kMiB), NV_OK) << "B's client still works";
}

// The same for an object: a sibling's store makes the core's private hRoot another tenant's
// client while the driver reads the tenant's own. A asks for 2 MiB under B's client handle with
// hObjectNew = the handle of B's 32 MiB; the driver makes 2 MiB under A's client. The core used
// to ask the driver about (B's client, 0x600), find B's 32 MiB past A's 16 MiB quota and have it
// freed (through the in-kernel entry that freed B's memory; through A's file it was refused).
// Now an object is accepted only under a client the driver confirmed A's file created
// (rm_alloc_verify.c, vcore_own_client): B's is not, so the call is tampering, A is killed and
// only A's clients are freed.
TEST(Tamper, TenantCannotHaveAnotherTenantsMemoryFreed) {
  TwoTenants t(16 * kMiB);
  ASSERT_EQ(t.Open(), "");
  Session& b = t.b;
  ASSERT_EQ(b.Vidmem(0x600, 32 * kMiB), NV_OK);
  const uint64_t with_b = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  const int status = RunTenant(t.slot_a, [&](Session& a) {
    if (a.device != b.device) _exit(kSetupFailed);  // B's device is the parent under both names
    if (!ArmAllocRewrite(0, a.client)) _exit(kSetupFailed);
    nv_memory_allocation_params mp = VidmemParams(a.client, 2 * kMiB);
    uint32_t h = 0x600;
    Alloc(a.ctl, b.client, a.device, &h, NV01_MEMORY_LOCAL_USER, &mp);
  });
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status;
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1) << "nvsim made the rewrite once";
  EXPECT_EQ(t.slot_a.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
  EXPECT_EQ(NvsimUsedBytes(), with_b) << "B's 32 MiB is still there, A's files freed A's";
  EXPECT_EQ(b.FreeObj(0x600), NV_OK) << "B's object was still B's";
  EXPECT_EQ(t.slot_a.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

// "client records are not driver-verified" (docs/results/kmod-issue4-tamper.md): a quota bypass
// with a guessed handle of another tenant. The core asks the driver about the object under the
// hRoot of its private copy, and the driver's in-kernel entry answers for any client. Tenant B
// holds a VA range (class 0x50a0, no video memory) under handle 0x700 of its client. Tenant A
// (quota 16 MiB) asks for 16 MiB of video memory under B's client with hObjectNew 0x700, and a
// sibling's store (nvsim's hook) turns hRoot into A's own client before the driver reads it: the
// driver makes 16 MiB under A's client, and the core, asking about (B's client, 0x700), learned
// "exists, no video memory" and charged nothing (measured on 6.12 with the previous module: A then
// held a second 16 MiB, 32 MiB under a 16 MiB quota). Now the object's client must be one the
// driver confirmed A's file created: B's is not, so A is killed and its files' memory freed.
TEST(Tamper, GuessedClientOfAnotherTenantIsNoQuotaBypass) {
  TwoTenants t(16 * kMiB);
  ASSERT_EQ(t.Open(), "");
  Session& b = t.b;
  nv_memory_allocation_params va{};
  va.owner = b.client;
  va.flags = NVOS32_ALLOC_FLAGS_VIRTUAL | NVOS32_ALLOC_FLAGS_LAZY;
  va.size = 16 * kMiB;
  uint32_t hva = 0x700;
  ASSERT_EQ(Alloc(b.ctl, b.client, b.device, &hva, NV50_MEMORY_VIRTUAL, &va), NV_OK);
  const uint64_t base = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  constexpr int kBypassed = 6;  // child: held 32 MiB under its 16 MiB quota
  const int status = RunTenant(t.slot_a, [&](Session& a) {
    if (a.device != b.device) _exit(kSetupFailed);
    if (!ArmAllocRewrite(0, a.client)) _exit(kSetupFailed);
    nv_memory_allocation_params mp = VidmemParams(a.client, 16 * kMiB);
    uint32_t h = 0x700;
    const int64_t first = Alloc(a.ctl, b.client, a.device, &h, NV01_MEMORY_LOCAL_USER, &mp);
    const int64_t second = a.Vidmem(0x701, 16 * kMiB);
    _exit(first == NV_OK && second == NV_OK ? kBypassed : kSurvived);
  });
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1) << "nvsim made the rewrite once";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status
      << " (exit 6: A held 32 MiB of video memory under its 16 MiB quota; 3: not killed)";
  EXPECT_EQ(t.slot_a.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
  EXPECT_EQ(NvsimUsedBytes(), base) << "A's memory went with A's files";
  EXPECT_EQ(t.slot_a.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  EXPECT_EQ(b.FreeObj(hva), NV_OK) << "B's object is untouched";
  EXPECT_EQ(t.slot_b.Stat(VGPU_STAT_MEM_CHARGED), 0u) << "its page-table charge went with it";
}

// "a sibling can rewrite the cleanup scratch page" (docs/results/kmod-issue4-tamper.md). When the
// driver allocates past the quota (a sibling's store made it read a larger size than the core's
// private copy), the core has the object freed and answers NV_ERR_NO_MEMORY. That free used to be
// an RM_FREE whose NVOS00 sat in a page vm_mmap-ed into the caller's mm, which a sibling thread can
// write between vgpu.ko's copy_to_user and the driver's read: pointed at a handle the client does
// not have, the driver freed nothing (NV_OK) and the tenant kept the memory, uncharged (measured
// on 6.12 with the previous module: 64 MiB held under a 16 MiB quota). Here nvsim's hooks land both
// stores: the params' size (rewrite_allocp, put back after the copy-out), so that the driver reads
// 64 MiB where the core read 2 MiB, and hObjectOld of the tenant's next RM_FREE. (The size, not
// the pointer: in module mode the driver reads the params from a sealed copy, kmod/seal.c, whose
// pointer a low-half store no longer redirects to another of the caller's buffers.) The free is now
// issued through the driver's in-kernel entry on kernel memory (kmod/driver_query.c,
// vgpu_trusted_free), only under a client whose creation by this slot the driver confirmed: no user
// memory is read, so the second rewrite never lands.
TEST(Tamper, CleanupFreeReadsNoUserMemory) {
  ScopedSlot slot(16 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_allocp_done"),
                 freed = ReadNvsimParam("rewrite_free_done");
  ASSERT_NE(freed, ~0ull) << "nvsim has no rewrite_free_* test hook";
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  nv_memory_allocation_params mp{};
  mp.owner = s.client;
  mp.flags = 0x1c101;
  mp.alignment = 2 * kMiB;
  mp.size = 2 * kMiB;  // what the core copies and reserves; the driver reads 64 MiB
  ASSERT_TRUE(WriteNvsimParam("rewrite_free_offset", 8) &&  // NVOS00.hObjectOld
              WriteNvsimParam("rewrite_free_value", 0xdead0001u) &&
              WriteNvsimParam("rewrite_free_tgid", static_cast<uint64_t>(getpid())));
  ASSERT_TRUE(
      WriteNvsimParam("rewrite_allocp_offset", offsetof(nv_memory_allocation_params, size)) &&
      WriteNvsimParam("rewrite_allocp_value", 64 * kMiB) &&
      WriteNvsimParam("rewrite_allocp_tgid", static_cast<uint64_t>(getpid())));
  uint32_t h = 0x2200;
  const int64_t st = Alloc(s.ctl, s.client, s.device, &h, NV01_MEMORY_LOCAL_USER, &mp);
  ASSERT_TRUE(WriteNvsimParam("rewrite_allocp_tgid", 0) && WriteNvsimParam("rewrite_free_tgid", 0));
  EXPECT_EQ(ReadNvsimParam("rewrite_allocp_done"), done + 1) << "nvsim read 64 MiB params";
  EXPECT_EQ(st, NV_ERR_NO_MEMORY) << "past the quota: refused as the driver refuses";
  EXPECT_EQ(ReadNvsimParam("rewrite_free_done"), freed)
      << "the cleanup free read an NVOS00 from user memory, where a sibling rewrote it";
  EXPECT_EQ(NvsimUsedBytes(), base) << "the 64 MiB the driver made past the quota is gone";
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 1u);
  // The tenant's session is intact and its quota whole.
  EXPECT_EQ(s.Vidmem(0x2201, 16 * kMiB), NV_OK);
  EXPECT_EQ(NvsimUsedBytes(), base + 16 * kMiB);
  EXPECT_EQ(s.FreeObj(0x2201), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

// Two stores in one call: a sibling changes hRoot to another client of the same file before the
// driver reads it, and the status to a failure after the driver wrote NV_OK. The core, told the
// allocation failed, asked the driver only about the private copy's hRoot, found nothing, and
// recorded nothing: the driver's 16 MiB under the other client was charged to no one (measured on
// 6.12 with the previous module: the tenant held 16 MiB, charged 0). Now a failed allocation also
// asks about the handle under the file's other confirmed clients (kmod/core/rm_alloc_verify.c,
// vcore_made_under_another_client): found, it is tampering, the file's clients are freed and the
// caller killed. nvsim's hooks land both stores (rewrite_alloc_after_* is the second, after nvsim's
// copy-out).
TEST(Tamper, FailedStatusHidesNoObjectUnderAnotherClient) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t done = ReadNvsimParam("rewrite_alloc_done");
  ASSERT_NE(ReadNvsimParam("rewrite_alloc_after_offset"), ~0ull) << "nvsim has no after-store hook";
  constexpr int kHidden = 7;  // child: the driver held its 16 MiB, charged to no one
  const int status = RunTenant(slot, [&](Session& a) {
    uint32_t c2 = 0, d2 = a.device;
    nv0080_alloc_params dp{};
    if (AllocClient(a.ctl, &c2) != NV_OK || Alloc(a.ctl, c2, c2, &d2, NV01_DEVICE_0, &dp) != NV_OK)
      _exit(kSetupFailed);
    if (!WriteNvsimParam("rewrite_alloc_after_offset", 40) ||  // NVOS64.status
        !WriteNvsimParam("rewrite_alloc_after_value", NV_ERR_NO_MEMORY) || !ArmAllocRewrite(0, c2))
      _exit(kSetupFailed);
    nv_memory_allocation_params mp = VidmemParams(a.client, 16 * kMiB);
    uint32_t h = 0x2300;
    const int64_t st = Alloc(a.ctl, a.client, a.device, &h, NV01_MEMORY_LOCAL_USER, &mp);
    if (st != NV_ERR_NO_MEMORY) _exit(kIoctlFailed);
    _exit(NvsimUsedBytes() > base ? kHidden : kSurvived);
  });
  ASSERT_TRUE(WriteNvsimParam("rewrite_alloc_after_offset", 0xffffffffu));
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done + 1) << "nvsim made the rewrite once";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status
      << " (exit 7: the driver held 16 MiB charged to no one; 3: nothing held, not killed)";
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

// A tampered call can leave a client the core never saw: the tenant asks for a client under a
// fresh handle, which vgpu.ko claims, and a sibling's store turns hObjectNew into 0, so that the
// driver makes one under a handle of its own choosing, bound to the caller's file. The caller is
// killed, but a file can outlive it (fork, SCM_RIGHTS): another process holding the same proxy
// file could then allocate under that client, each such call found (the client is not one the
// driver confirmed this file created) and its process killed, but the object the driver made in
// it held by the hidden client, charged to no one (measured on 6.12 with the previous module:
// 16 MiB held, the slot charged 0). Now a file on which tampering is found refuses every later
// call (-ENODEV) and mmap, from every process that shares it (vcore_file_tampered).
TEST(Tamper, FileSharedWithATamperedProcessIsClosedToCalls) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  constexpr int kLeaked = 8;  // holder: the driver held memory charged to no one
  const int status = RunTenant(slot, [&](Session& a) {
    auto* r = static_cast<nvos64*>(
        mmap(nullptr, sizeof(nvos64), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (r == MAP_FAILED) _exit(kSetupFailed);
    // 1: a client under a handle the driver does not honour: the caller is killed.
    pid_t p = fork();
    if (p == 0) {
      if (!ArmAllocRewrite(8, 0)) _exit(kSetupFailed);
      *r = nvos64{};
      r->hObjectNew = 0x5eed0001;
      r->hClass = NV01_ROOT_CLIENT;
      RawIoctl(a.ctl, NV_ESC_RM_ALLOC, r, sizeof(*r));
      _exit(kSurvived);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFSIGNALED(st)) _exit(kIoctlFailed);
    const uint32_t hidden = r->hObjectNew;  // the driver's handle, from the reply
    // 2, 3: other processes sharing the file use the hidden client: a device, then memory.
    for (int step = 0; step < 2; ++step) {
      p = fork();
      if (p == 0) {
        uint32_t dev = 0xd0000010, mem = 0x5000;
        uint64_t size = 16 * kMiB;
        nv0080_alloc_params dp{};
        if (step == 0)
          Alloc(a.ctl, hidden, hidden, &dev, NV01_DEVICE_0, &dp);
        else
          AllocVidmem(a.ctl, hidden, dev, &mem, &size);
        _exit(0);
      }
      if (p < 0 || waitpid(p, &st, 0) != p) _exit(kSetupFailed);
    }
    _exit(NvsimUsedBytes() > base ? kLeaked : 0);
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status 0x" << std::hex << status
      << " (exit 8: the driver held memory under the hidden client, charged to no one)";
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
}

}  // namespace
}  // namespace vgpu_test

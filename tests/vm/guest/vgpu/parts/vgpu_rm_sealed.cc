// Issue 17 (F2, F7, F11.1, docs/security/kernel-call-path.md): nvidia.ko copies an RM escape's
// argument in from user memory itself (nv.c nvidia_ioctl), and RM copies RM_ALLOC's class params
// and RM_CONTROL's params in again (rmapiParamsAcquire), after the proxy read them. A sibling
// thread that stores in between makes the driver run what the proxy never checked. The module
// runs the escapes the core decides on from a sealed copy of their argument and of the nested
// params the core reads (kmod/seal.c): pages only the calling task can store into while its call
// is in flight, whose replacement is tampering. nvsim's sibling hook (tests/vm/nvsim/
// nvsim_sibling.c) stores from another task that uses the caller's mm, or replaces the mapping,
// just before nvsim copies the argument in. Linked into vgpu_gtest (guest.cmake).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint32_t kLazyVirtual = 0x0008c415;  // libcuda's NV50_MEMORY_VIRTUAL flags, LAZY set
constexpr uint32_t kLazy = 0x400;
constexpr uint64_t kGiB = 1024 * kMiB;

// The eager-range race: the sibling clears LAZY and raises the size from 1 GiB to 128 GiB in
// NV50_MEMORY_VIRTUAL's class params (flags@8, the size's high word @76).
bool ArmEagerRace(bool replace) {
  const std::string offsets = std::to_string(offsetof(nv_memory_allocation_params, flags)) + "," +
                              std::to_string(offsetof(nv_memory_allocation_params, size) + 4);
  const std::string values =
      std::to_string(kLazyVirtual & ~kLazy) + "," + std::to_string((128 * kGiB) >> 32);
  return ArmRmSibling(NV_ESC_RM_ALLOC, true, offsets, values, replace);
}

// A lazy 1 GiB virtual range with its class params on a page of their own (the replacement
// takes the page); `xfer`: the RM_ALLOC wrapped in NV_ESC_IOCTL_XFER_CMD (header, NVOS64 and
// class params: three sealed pieces).
int64_t AllocLazyGiB(int ctl, uint32_t client, uint32_t device, uint32_t h, bool xfer = false) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return -ENOMEM;
  auto* mp = new (page) nv_memory_allocation_params{};
  mp->owner = client;
  mp->flags = kLazyVirtual;
  mp->size = kGiB;
  int64_t st;
  if (xfer) {
    nvos64 p{};
    p.hRoot = client;
    p.hObjectParent = device;
    p.hObjectNew = h;
    p.hClass = NV50_MEMORY_VIRTUAL;
    p.pAllocParms = Ptr(mp);
    nv_ioctl_xfer x{NV_ESC_RM_ALLOC, sizeof(p), Ptr(&p)};
    const Rc rc = RawIoctl(ctl, NV_ESC_IOCTL_XFER_CMD, &x, sizeof(x));
    st = rc.ret ? -rc.err : p.status;
  } else {
    st = Alloc(ctl, client, device, &h, NV50_MEMORY_VIRTUAL, mp);
  }
  munmap(page, 4096);
  return st;
}

// A small slot, four lazy 1 GiB ranges whose class params a sibling makes a 128 GiB eager range
// during the call (issue 17, F11.1's open residue: on the H200 a 128 GiB eager range builds
// 273 MiB of page tables, a 64 TiB one hung the driver for minutes). The driver must build
// what the core checked: no page tables at any moment.
TEST(RmSealed, SiblingCannotMakeALazyRangeEagerDuringTheCall) {
  const uint64_t quota = 64 * kMiB;
  // Rounds 0-1 plain, 2-3 wrapped in XFER.
  ScopedSlot slot(quota, "rm-sealed-eager");
  ASSERT_TRUE(slot.ok());
  const uint64_t tries = ReadNvsimParam("sibling_rm_tries");
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  ASSERT_NE(tries, ~0ull) << "nvsim has no sibling_rm_* hook";
  const uint64_t base = ReadNvsimParam("ptable_bytes");
  ASSERT_TRUE(WriteNvsimParam("ptable_peak", base));
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  constexpr uint32_t kRounds = 4;
  uint64_t charged_peak = 0;
  for (uint32_t round = 0; round < kRounds; ++round) {
    const uint32_t h = 0xd7000000 + round;
    ASSERT_TRUE(ArmEagerRace(false));
    const int64_t st = AllocLazyGiB(s.ctl, s.client, s.device, h, round >= 2);
    EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
    EXPECT_EQ(st, NV_OK) << "round " << round;
    charged_peak = std::max(charged_peak, slot.Stat(VGPU_STAT_MEM_CHARGED));
    if (st == NV_OK) {
      EXPECT_EQ(s.FreeObj(h), NV_OK);
    }
  }
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  const uint64_t peak = ReadNvsimParam("ptable_peak") - base;
  std::printf(
      "eager race: %u lazy 1 GiB ranges (half in XFER), a sibling raising them to 128 GiB eager "
      "during the call, "
      "on a 64 MiB slot: %llu of %llu stores landed; nvsim held at most %llu KiB of page tables, "
      "at most %llu KiB charged\n",
      kRounds, static_cast<unsigned long long>(stores),
      static_cast<unsigned long long>(ReadNvsimParam("sibling_rm_tries") - tries),
      static_cast<unsigned long long>(peak >> 10),
      static_cast<unsigned long long>(charged_peak >> 10));
  EXPECT_EQ(ReadNvsimParam("sibling_rm_tries"), tries + kRounds) << "the sibling ran";
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the params RM reads";
  EXPECT_EQ(peak, 0u) << "the driver built page tables of a range the core saw lazy";
  EXPECT_EQ(ReadNvsimParam("ptable_bytes"), base);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
}

// The same made by replacing the page (munmap and an anonymous MAP_FIXED mapping holding the
// raised params), which no page protection stops: tampering. The tenant (a forked child with
// files of its own) is killed in the call, and what the driver built goes with its files.
TEST(RmSealed, ReplacedAllocParamsAreTampering) {
  ScopedSlot slot(64 * kMiB, "rm-sealed-replace");
  ASSERT_TRUE(slot.ok());
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  const uint64_t tampered = slot.Stat(VGPU_STAT_OVERQUOTA);
  const uint64_t base = ReadNvsimParam("ptable_bytes");
  ASSERT_TRUE(WriteNvsimParam("ptable_peak", base));
  const pid_t child = fork();
  if (child == 0) {
    Session s;
    if (!s.Open(slot.ctl(), slot.dev()).empty() || !ArmEagerRace(true)) _exit(4);
    const int64_t st = AllocLazyGiB(s.ctl, s.client, s.device, 0xd7100000);
    std::printf("eager race, replaced: the tampered alloc returned to the tenant, status 0x%llx\n",
                static_cast<unsigned long long>(st));
    std::fflush(stdout);
    _exit(3);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
  const uint64_t peak = ReadNvsimParam("ptable_peak") - base;
  std::printf("eager race, replaced: nvsim held at most %llu KiB of page tables; tenant %s\n",
              static_cast<unsigned long long>(peak >> 10),
              WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "killed" : "not killed");
  EXPECT_EQ(ReadNvsimParam("sibling_rm_done"), landed + 1) << "the mapping was replaced";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status << ": the tampering tenant was not killed";
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), tampered + 1) << "the tampering is counted";
  EXPECT_EQ(SettledOpenFiles(slot, 0), 0u);
  EXPECT_EQ(Settled([] { return ReadNvsimParam("ptable_bytes"); }, base), base)
      << "what the driver built went with the tenant's files";
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
}

// F7 through the back door: the tenant issues a control the core forwards untouched (an NV2081
// binary-API control, any size) with the params of FIFO_DISABLE_CHANNELS, and a sibling swaps the
// NVOS54's cmd into FIFO_DISABLE_CHANNELS, a lever of the compute gate the core refuses from
// tenants (kmod/core/rm_control.c), before the driver reads it. The driver must run the control
// the core checked: the lever never reaches it.
TEST(RmSealed, SiblingCannotSwapAControlIntoAGateLever) {
  ScopedSlot slot(64 * kMiB, "rm-sealed-cmd");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  ASSERT_TRUE(WriteNvsimParam("watch_ctrl_cmd", NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS));
  const uint64_t seen = ReadNvsimParam("watch_ctrl_seen");
  ASSERT_NE(seen, ~0ull) << "nvsim has no watch_ctrl_* counter";
  nv2080_fifo_disable_channels_params dc{};
  dc.bDisable = 0;  // re-enable what the gate disabled
  constexpr uint32_t kRounds = 4, kBinapi = 0x20810101;
  for (uint32_t round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(ArmRmSibling(NV_ESC_RM_CONTROL, false, std::to_string(offsetof(nvos54, cmd)),
                             std::to_string(NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS), false));
    Control(s.ctl, s.client, s.subdevice, kBinapi, &dc, sizeof(dc));
    EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
  }
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  const uint64_t levers = ReadNvsimParam("watch_ctrl_seen") - seen;
  std::printf(
      "cmd swap: %u controls forwarded untouched, a sibling swapping cmd into "
      "FIFO_DISABLE_CHANNELS: %llu stores landed, %llu levers reached the driver\n",
      kRounds, static_cast<unsigned long long>(stores), static_cast<unsigned long long>(levers));
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the NVOS54 the driver reads";
  EXPECT_EQ(levers, 0u) << "a gate lever reached the driver";
  // The lever itself, asked for directly, is refused
  // (ComputeShares.TenantCannotPullTheGatesLevers).
  EXPECT_EQ(
      Control(s.ctl, s.client, s.subdevice, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &dc, sizeof(dc)),
      NV_ERR_INSUFFICIENT_PERMISSIONS);
  EXPECT_EQ(ReadNvsimParam("watch_ctrl_seen"), seen + levers);
  EXPECT_TRUE(WriteNvsimParam("watch_ctrl_cmd", 0));
}

// F3's export residue: the export's holds are made from the core's copy of objects[], and RM
// copies the control's params in again. A sibling that swaps objects[0] from A (4 MiB) to B
// (24 MiB) made the export fd hold B while the core held A; once both handles go the driver keeps
// B for the fd, charged A. The control's params now run from the sealed copy: the fd holds A.
TEST(RmSealed, SiblingCannotSwapAnExportedObject) {
  ScopedSlot slot(64 * kMiB, "rm-sealed-export");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint64_t used0 = NvsimUsedBytes();
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  constexpr uint32_t kRounds = 2;
  std::vector<int> export_fds;
  for (uint32_t round = 0; round < kRounds; ++round) {
    const uint32_t a = 0xd7200000 + 2 * round, b = a + 1;
    ASSERT_EQ(s.Vidmem(a, 4 * kMiB), NV_OK);
    ASSERT_EQ(s.Vidmem(b, 24 * kMiB), NV_OK);
    const int efd = open(slot.ctl().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(efd, 0);
    export_fds.push_back(efd);
    auto ex = std::make_unique<nv0000_export_objects_to_fd_params>();
    ex->fd = efd;
    ex->hDevice = s.device;
    ex->maxObjects = 1;
    ex->objects[0] = a;
    ex->numObjects = 1;
    ASSERT_TRUE(ArmRmSibling(NV_ESC_RM_CONTROL, true,
                             std::to_string(offsetof(nv0000_export_objects_to_fd_params, objects)),
                             std::to_string(b), false));
    EXPECT_EQ(Control(s.ctl, s.client, s.client, NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
                      ex.get(), sizeof(*ex)),
              NV_OK);
    EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
    EXPECT_EQ(s.FreeObj(b), NV_OK);
    EXPECT_EQ(s.FreeObj(a), NV_OK);
  }
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  const uint64_t held = NvsimUsedBytes() - used0;
  const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  std::printf(
      "export swap: %u exports of A (4 MiB) with a sibling swapping objects[0] to B (24 MiB), both "
      "handles then freed: %llu stores landed; the driver holds %llu MiB for the export fds, %llu "
      "MiB charged\n",
      kRounds, static_cast<unsigned long long>(stores), static_cast<unsigned long long>(held >> 20),
      static_cast<unsigned long long>(charged >> 20));
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the params RM reads";
  EXPECT_EQ(held, kRounds * 4 * kMiB) << "the export fds hold exactly A";
  EXPECT_EQ(charged, held);
  for (int fd : export_fds) close(fd);
  EXPECT_EQ(NvsimUsedBytes(), used0);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
}

}  // namespace
}  // namespace vgpu_test

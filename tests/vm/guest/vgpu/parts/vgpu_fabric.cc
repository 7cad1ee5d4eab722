// NVLink-fabric controls through the proxy (docs/security/kernel-call-path.md, F4): NV00E0
// EXPORT_MEM and NV00FD ATTACH_GPU name a /dev/nvidiaN by an fd (devDescriptor) that the driver
// looks up in current's table and then requires to carry the driver's own file operations
// (escape.c:716-761, nv.c:5762-5783, mem_export.c:700, mem_multicast_fabric.c:546 at 580.142;
// nvsim models exactly these checks, tests/vm/nvsim/nvsim_fabric.c). No inert decoy can pass
// that, so the module runs them from its kernel thread with the real file in that thread's
// table: they must work, and no sibling thread may reach a driver file meanwhile.
// Linked into vgpu_gtest (guest.cmake).
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <string>
#include <thread>

#include "held_fault.h"
#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// ctrl00fd.h, ctrl00e0.h (layouts checked in kmod/core/abi/ctrl.h).
constexpr uint32_t kAttachGpu = 0x00fd0104;
constexpr uint32_t kExportMem = 0x00e00101;
struct AttachGpuParams {
  uint32_t hSubdevice;
  uint32_t flags;
  uint64_t devDescriptor;
};
static_assert(sizeof(AttachGpuParams) == 16);
struct ExportMemParams {
  uint16_t index;
  uint32_t hParent;
  uint32_t handles[256];
  uint16_t numHandles;
  uint64_t devDescriptor;
};
static_assert(offsetof(ExportMemParams, devDescriptor) == 1040);

int64_t AttachGpu(Session& s) {
  AttachGpuParams p{s.subdevice, 0, static_cast<uint64_t>(s.dev)};
  return Control(s.ctl, s.client, s.client, kAttachGpu, &p, sizeof(p));
}

int64_t ExportMem(Session& s) {
  ExportMemParams p{};
  p.hParent = s.device;
  p.devDescriptor = static_cast<uint64_t>(s.dev);
  return Control(s.ctl, s.client, s.client, kExportMem, &p, sizeof(p));
}

// Before the kernel thread both failed with NV_ERR_INVALID_DEVICE (the decoy's f_op).
TEST(Fabric, ExportMemAndAttachGpuWorkThroughTheProxy) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const int64_t attach = AttachGpu(s), exported = ExportMem(s);
  std::printf("ATTACH_GPU: 0x%llx, EXPORT_MEM: 0x%llx (0x26: NV_ERR_INVALID_DEVICE)\n",
              static_cast<unsigned long long>(attach), static_cast<unsigned long long>(exported));
  std::fflush(stdout);
  EXPECT_EQ(attach, NV_OK);
  EXPECT_EQ(exported, NV_OK);
  // The driver's own refusals still come through: another file than a /dev/nvidiaN is no GPU.
  AttachGpuParams bad{s.subdevice, 0, static_cast<uint64_t>(s.ctl)};
  EXPECT_NE(Control(s.ctl, s.client, s.client, kAttachGpu, &bad, sizeof(bad)), NV_OK);
}

// While the driver holds the call (nvsim's fabric_ctrl_delay_us, 2 ms after its lookup), a
// sibling thread issues an ioctl on every number a temporary fd of the call would take (the
// lowest free ones): a real driver file there would answer it (nvsim: EINVAL for a ctl escape
// on a dev file), a decoy refuses (EPERM), an empty number is EBADF.
TEST(Fabric, NoSiblingReachesADriverFileDuringAFabricCall) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const int calls = DebianKernel() ? 200 : 20;
  ASSERT_TRUE(WriteNvsimParam("fabric_ctrl_delay_us", 2000));
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  pid_t child = fork();
  if (child == 0) {
    Session s;
    if (!s.Open(slot.ctl(), slot.dev()).empty()) _exit(2);
    int next = open("/dev/null", O_RDONLY);  // the lowest free number
    close(next);
    std::atomic<bool> stop{false};
    std::atomic<long> tries{0}, reached{0};
    std::thread sibling([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (int fd = next; fd <= next + 1; ++fd) {
          nv_ioctl_status_code sc{};
          tries++;
          Rc rc = RawIoctl(fd, NV_ESC_STATUS_CODE, &sc, sizeof(sc));
          if (rc.ret == 0 || (rc.err != EBADF && rc.err != EPERM)) reached++;
        }
      }
    });
    int failed = 0;
    for (int i = 0; i < calls; ++i) failed += (i % 2 ? AttachGpu(s) : ExportMem(s)) != NV_OK;
    stop = true;
    sibling.join();
    std::printf("  %d fabric calls (%d failed); sibling: %ld calls, %ld reached a driver file\n",
                calls, failed, tries.load(), reached.load());
    std::fflush(stdout);
    _exit(failed ? 4 : reached ? 3 : 0);
  }
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  WriteNvsimParam("fabric_ctrl_delay_us", 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << status << ": 3: a sibling reached a driver file; 4: a fabric call failed through the "
      << "proxy; 2: the session did not open";
}

// Issue 17, no tenant stalls another slot's control: a tenant whose ATTACH_GPU parameters fault
// until a release it controls (held_fault.h) must not hold up another slot's fabric calls, and
// must stay killable.
TEST(Fabric, AFaultOfOneTenantsFabricCallHoldsUpNoOtherSlot) {
  ScopedSlot held_slot(64 * kMiB, "held"), other_slot(64 * kMiB, "other");
  ASSERT_TRUE(held_slot.ok() && other_slot.ok());
  Session* s = nullptr;  // in the held tenant, for the length of its life
  held_fault::NoSlotWaitsOnAnothersFault(
      "ATTACH_GPU",
      [&](void* page) {
        s = new Session;
        if (!s->Open(held_slot.ctl(), held_slot.dev()).empty()) return false;
        *static_cast<AttachGpuParams*>(page) = {s->subdevice, 0, static_cast<uint64_t>(s->dev)};
        return true;
      },
      [&](void* page) {
        return Control(s->ctl, s->client, s->client, kAttachGpu, page, sizeof(AttachGpuParams)) ==
               NV_OK;
      },
      [&] {
        Session t;
        return t.Open(other_slot.ctl(), other_slot.dev()).empty() && AttachGpu(t) == NV_OK;
      });
}

// Issue 17, the fabric residue (docs/security/kernel-call-path.md, "Not sealed"): EXPORT_MEM and
// ATTACH_GPU run from a sealed copy of their NVOS54 and params like every control the core
// decides on (kmod/seal.c), but from one of the module's kernel threads (kmod/kthread_call.c).
// nvsim's sibling hook (tests/vm/nvsim/nvsim_sibling.c) fires in that thread's call, as the
// caller's, and stores from another task on the caller's mm just before nvsim copies the
// argument in. The driver must run what the core checked.

// A fabric call (EXPORT_MEM on even rounds, ATTACH_GPU on odd ones).
int64_t FabricCall(Session& s, int round) { return round % 2 ? AttachGpu(s) : ExportMem(s); }

std::string Hex(int64_t v) {
  char b[24];
  std::snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// The sibling turns the NVOS54 into FIFO_DISABLE_CHANNELS on the tenant's subdevice (hObject,
// cmd, paramsSize: a lever of the compute gate the core refuses from tenants, kmod/core/
// rm_control.c; the fabric params' page holds its 536 bytes), as in
// RmSealed.SiblingCannotSwapAControlIntoAGateLever for a control run in the calling task.
TEST(Fabric, SiblingCannotSwapAFabricCallIntoAGateLever) {
  ScopedSlot slot(64 * kMiB, "fabric-sealed-cmd");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint64_t tries = ReadNvsimParam("sibling_rm_tries");
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  ASSERT_NE(tries, ~0ull) << "nvsim has no sibling_rm_* hook";
  ASSERT_TRUE(WriteNvsimParam("watch_ctrl_cmd", NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS));
  const uint64_t seen = ReadNvsimParam("watch_ctrl_seen");
  const std::string offsets = std::to_string(offsetof(nvos54, hObject)) + "," +
                              std::to_string(offsetof(nvos54, cmd)) + "," +
                              std::to_string(offsetof(nvos54, paramsSize));
  const std::string values = std::to_string(s.subdevice) + "," +
                             std::to_string(NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS) + "," +
                             std::to_string(sizeof(nv2080_fifo_disable_channels_params));
  constexpr int kRounds = 4;
  int ok = 0;
  std::string statuses;
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(ArmRmSibling(NV_ESC_RM_CONTROL, false, offsets, values, false));
    const int64_t st = FabricCall(s, round);
    EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
    ok += st == NV_OK;
    statuses += (round ? " " : "") + Hex(st);
  }
  const uint64_t armed = ReadNvsimParam("sibling_rm_tries") - tries;
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  const uint64_t levers = ReadNvsimParam("watch_ctrl_seen") - seen;
  std::printf(
      "fabric cmd swap: %d fabric controls, a sibling swapping the NVOS54 into "
      "FIFO_DISABLE_CHANNELS: the sibling ran in %llu, %llu stores landed, %llu levers reached "
      "the driver; statuses %s\n",
      kRounds, static_cast<unsigned long long>(armed), static_cast<unsigned long long>(stores),
      static_cast<unsigned long long>(levers), statuses.c_str());
  std::fflush(stdout);
  EXPECT_TRUE(WriteNvsimParam("watch_ctrl_cmd", 0));
  EXPECT_EQ(armed, static_cast<uint64_t>(kRounds)) << "the sibling ran in each fabric call";
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the NVOS54 the driver reads";
  EXPECT_EQ(levers, 0u) << "a gate lever reached the driver";
  EXPECT_EQ(ok, kRounds) << "the fabric calls the core checked ran: " << statuses;
}

// The sibling renumbers devDescriptor (the fd the core checked as a /dev/vgpuN of the slot, and
// the module replaced by the real file's number in its thread's table) in the params: to a
// number that names no file there, so the driver would answer NV_ERR_INVALID_DEVICE for a call
// whose device the core let through; with another tenant's file on that table it would be that
// tenant's GPU.
TEST(Fabric, SiblingCannotRenumberAFabricCallsDevice) {
  ScopedSlot slot(64 * kMiB, "fabric-sealed-fd");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint64_t tries = ReadNvsimParam("sibling_rm_tries");
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  ASSERT_NE(tries, ~0ull) << "nvsim has no sibling_rm_* hook";
  constexpr uint32_t kNoFile = 999999;
  constexpr int kRounds = 4;
  int ok = 0, invalid_device = 0;
  std::string statuses;
  for (int round = 0; round < kRounds; ++round) {
    const size_t off = round % 2 ? offsetof(AttachGpuParams, devDescriptor)
                                 : offsetof(ExportMemParams, devDescriptor);
    ASSERT_TRUE(
        ArmRmSibling(NV_ESC_RM_CONTROL, true, std::to_string(off), std::to_string(kNoFile), false));
    const int64_t st = FabricCall(s, round);
    EXPECT_TRUE(WriteNvsimParam("sibling_rm_tgid", 0));
    ok += st == NV_OK;
    invalid_device += st == NV_ERR_INVALID_DEVICE;
    statuses += (round ? " " : "") + Hex(st);
  }
  const uint64_t armed = ReadNvsimParam("sibling_rm_tries") - tries;
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  std::printf(
      "fabric fd renumber: %d fabric controls, a sibling renumbering devDescriptor: the sibling "
      "ran in %llu, %llu stores landed, %d calls answered NV_ERR_INVALID_DEVICE; statuses %s\n",
      kRounds, static_cast<unsigned long long>(armed), static_cast<unsigned long long>(stores),
      invalid_device, statuses.c_str());
  std::fflush(stdout);
  EXPECT_EQ(armed, static_cast<uint64_t>(kRounds)) << "the sibling ran in each fabric call";
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the params RM reads";
  EXPECT_EQ(ok, kRounds) << "the driver looked up a device the core never checked: " << statuses;
}

}  // namespace
}  // namespace vgpu_test

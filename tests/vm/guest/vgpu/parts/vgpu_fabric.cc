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
#include <cstdio>
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

}  // namespace
}  // namespace vgpu_test

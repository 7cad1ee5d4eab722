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
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

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

// The sealed copy's mapping, [start, end) in this process, or {0, 0}.
std::pair<uintptr_t, uintptr_t> SealMapping() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("[vgpu-params]") == std::string::npos) continue;
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &start, &end) == 2) return {start, end};
  }
  return {0, 0};
}

// What the tenant's sibling thread did (reported through a pipe).
constexpr char kReplaced = 'R', kNoUserfaultfd = 'N', kNoSeal = 'S', kReplaceFailed = 'F';

// A sibling thread of the caller replaces the sealed copy while the fabric call is in the driver
// (nvsim's fabric_ctrl_delay_us holds it after its copy-in): munmap, an anonymous MAP_FIXED
// mapping in its place, registered with a userfaultfd whose faults nobody answers. The driver's
// copy-out then faults there, from the module's call thread: without the SIGKILL the seal's
// ->close sends that thread, it would wait for ever, the caller with it, and every slot's fabric
// calls behind it (they run one at a time). The replacement is tampering: the tenant is killed,
// and another slot's fabric call goes through.
TEST(Fabric, AReplacedSealEndsTheFabricCallThread) {
  ScopedSlot tenant_slot(64 * kMiB, "replacer"), other_slot(64 * kMiB, "other");
  ASSERT_TRUE(tenant_slot.ok() && other_slot.ok());
  const int probe = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (probe < 0 && errno == ENOSYS) GTEST_SKIP() << "this kernel has no userfaultfd";
  if (probe >= 0) close(probe);
  const auto delay = std::chrono::milliseconds(DebianKernel() ? 2000 : 8000);
  ASSERT_TRUE(WriteNvsimParam("fabric_ctrl_delay_us", delay.count() * 1000));
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  const pid_t tenant = fork();
  if (tenant == 0) {
    close(report[0]);
    Session s;
    if (!s.Open(tenant_slot.ctl(), tenant_slot.dev()).empty()) _exit(2);
    std::thread sibling([&] {
      char what = kNoSeal;
      const auto end = held_fault::Clock::now() + delay / 2;
      std::pair<uintptr_t, uintptr_t> seal{0, 0};
      while (!seal.first && held_fault::Clock::now() < end) seal = SealMapping();
      // Well inside the driver's hold: the call thread has long taken the copy.
      std::this_thread::sleep_until(end);
      const int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
      if (uffd < 0 && errno == ENOSYS) {
        what = kNoUserfaultfd;
      } else if (seal.first) {
        void* at = reinterpret_cast<void*>(seal.first);
        const size_t len = seal.second - seal.first;
        uffdio_api api{UFFD_API, 0, 0};
        uffdio_register reg{{seal.first, len}, UFFDIO_REGISTER_MODE_MISSING, 0};
        what = uffd >= 0 && munmap(at, len) == 0 &&
                       mmap(at, len, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == at &&
                       ioctl(uffd, UFFDIO_API, &api) == 0 && ioctl(uffd, UFFDIO_REGISTER, &reg) == 0
                   ? kReplaced
                   : kReplaceFailed;
      }
      if (write(report[1], &what, 1) != 1) _exit(5);
      // The uffd stays open and unanswered until the process goes.
    });
    const int64_t st = AttachGpu(s);
    sibling.join();
    std::printf("replaced seal: the tenant's ATTACH_GPU returned 0x%llx\n",
                static_cast<unsigned long long>(st));
    std::fflush(stdout);
    _exit(3);
  }
  ASSERT_GT(tenant, 0);
  close(report[1]);
  char what = 0;
  const bool reported = read(report[0], &what, 1) == 1;
  close(report[0]);
  const auto t0 = held_fault::Clock::now();
  int status = held_fault::ReapWithin(tenant, delay + held_fault::kBound);
  const double died_after = held_fault::Seconds(held_fault::Clock::now() - t0);
  const bool died = status != -1;
  if (!died) {
    kill(tenant, SIGKILL);
    status = held_fault::ReapWithin(tenant, held_fault::kBound);
  }
  WriteNvsimParam("fabric_ctrl_delay_us", 0);
  if (reported && what == kNoUserfaultfd) GTEST_SKIP() << "this kernel has no userfaultfd";
  const auto t1 = held_fault::Clock::now();
  std::fflush(stdout);
  const pid_t other = fork();
  if (other == 0) {
    Session t;
    _exit(t.Open(other_slot.ctl(), other_slot.dev()).empty() && AttachGpu(t) == NV_OK ? 0 : 1);
  }
  ASSERT_GT(other, 0);
  int other_status = held_fault::ReapWithin(other, held_fault::kBound);
  const double other_after = held_fault::Seconds(held_fault::Clock::now() - t1);
  const bool other_in_time = other_status != -1;
  std::printf(
      "replaced seal: sibling '%c'; the tenant %s %.3f s after the replacement (%s); another "
      "slot's ATTACH_GPU %s after %.3f s\n",
      reported ? what : '-', died ? "ended" : "had not ended", died_after,
      held_fault::Describe(status).c_str(), other_in_time ? "returned" : "had not returned",
      other_after);
  std::fflush(stdout);
  if (!other_in_time) {
    // Only a killed tenant's call thread can still hold the queue: the next test must not wait.
    other_status = held_fault::Reap(other);
  }
  EXPECT_TRUE(reported && what == kReplaced) << "the sibling did not replace the seal: " << what;
  EXPECT_TRUE(died) << "the tenant's call stayed in a thread waiting on the replaced mapping";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the replacement was not treated as tampering: " << held_fault::Describe(status);
  EXPECT_TRUE(other_in_time) << "another slot's fabric call waited on the tenant's call thread";
  EXPECT_TRUE(WIFEXITED(other_status) && WEXITSTATUS(other_status) == 0)
      << held_fault::Describe(other_status);
}

}  // namespace
}  // namespace vgpu_test

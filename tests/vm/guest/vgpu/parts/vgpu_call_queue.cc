// No tenant stalls another slot's UVM_MM_INITIALIZE (issue 17; docs/security/
// kernel-call-path.md, F4): the call runs from a kernel thread of the module, one at a time
// (kmod/kthread_call.c), so nothing of one tenant's may hold that thread. The parameters are
// copied into the call's sealed copy and back in the tenant's own context, killably; the thread
// faults only on that copy; a caller waiting for its turn can be killed. The fabric controls:
// vgpu_fabric.cc. Linked into vgpu_gtest (guest.cmake).
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "held_fault.h"
#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// The held tenant's UVM_MM_INITIALIZE (held_fault.h): Prepare opens its files in the slot and
// writes the parameters into the page, Call makes the call on them.
struct HeldMmInitialize {
  const ScopedSlot& slot;
  int mm = -1;  // in the held tenant

  bool Prepare(void* page) {
    const int va = OpenUvm(slot);
    mm = open(("/dev/vgpu-uvm" + std::to_string(slot.id())).c_str(), O_RDWR | O_CLOEXEC);
    *static_cast<uvm_mm_initialize_params*>(page) = {va, ~0u};
    return va >= 0 && mm >= 0;
  }
  bool Call(void* page) const {
    return ioctl(mm, UVM_MM_INITIALIZE, page) == 0 &&
           static_cast<uvm_mm_initialize_params*>(page)->rmStatus == NV_OK;
  }
};

// Issue 17, no tenant stalls another slot's control: a tenant whose UVM_MM_INITIALIZE parameters
// fault until a release it controls (held_fault.h) must not hold up another slot's
// UVM_MM_INITIALIZE (every new CUDA process on the node makes one), and must stay killable.
TEST(CallPath, AFaultOfOneTenantsMmInitializeHoldsUpNoOtherSlot) {
  ScopedSlot held_slot(64 * kMiB, "held", VGPU_SLOT_F_UVM),
      other_slot(64 * kMiB, "other", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(held_slot.ok() && other_slot.ok());
  const std::string other_path = "/dev/vgpu-uvm" + std::to_string(other_slot.id());
  HeldMmInitialize held{held_slot};
  held_fault::NoSlotWaitsOnAnothersFault(
      "UVM_MM_INITIALIZE", [&](void* page) { return held.Prepare(page); },
      [&](void* page) { return held.Call(page); },
      [&] {
        const int va = OpenUvm(other_slot);
        return va >= 0 && MmInitializeOnce(other_path, va) == 1;
      });
}

// A process making one UVM_MM_INITIALIZE in the slot: exit 0 if it succeeded.
pid_t ForkMmInitialize(const ScopedSlot& slot) {
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  const pid_t pid = fork();
  if (pid == 0) {
    const int va = OpenUvm(slot);
    _exit(va >= 0 && MmInitializeOnce("/dev/vgpu-uvm" + std::to_string(slot.id()), va) == 1 ? 0
                                                                                            : 1);
  }
  return pid;
}

// A caller queued on the kernel thread behind another slot's UVM_MM_INITIALIZE can be killed: its
// call is taken off the queue, and the driver never sees it. nvsim's uvm_mm_initialize_delay_us
// keeps the first slot's call running in the thread meanwhile; that call still succeeds.
TEST(CallPath, ACallerQueuedBehindAnotherSlotsMmInitializeIsKillable) {
  ScopedSlot running_slot(64 * kMiB, "running", VGPU_SLOT_F_UVM);
  ScopedSlot queued_slot(64 * kMiB, "queued", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(running_slot.ok() && queued_slot.ok());
  const auto settle = std::chrono::milliseconds(DebianKernel() ? 300 : 3000);
  ASSERT_TRUE(WriteNvsimParam("uvm_mm_initialize_delay_us", DebianKernel() ? 4000000 : 20000000));
  const uint64_t calls_before = ReadNvsimParam("uvm_mm_initialize_calls");
  const pid_t running = ForkMmInitialize(running_slot);
  ASSERT_GT(running, 0);
  std::this_thread::sleep_for(settle);  // its call runs in the thread
  const pid_t queued = ForkMmInitialize(queued_slot);
  ASSERT_GT(queued, 0);
  std::this_thread::sleep_for(settle);  // its call waits behind it
  const auto t0 = held_fault::Clock::now();
  kill(queued, SIGKILL);
  int status = held_fault::ReapWithin(queued, std::chrono::seconds(2));
  const double waited = held_fault::Seconds(held_fault::Clock::now() - t0);
  const bool died = status != -1;
  if (!died) status = held_fault::Reap(queued);
  const int running_status = held_fault::Reap(running);
  WriteNvsimParam("uvm_mm_initialize_delay_us", 0);
  const uint64_t calls = ReadNvsimParam("uvm_mm_initialize_calls") - calls_before;
  std::printf(
      "a caller queued behind another slot's UVM_MM_INITIALIZE, SIGKILLed: %s after %.3f "
      "s; the driver saw %llu of the 2 calls; the running call: %s\n",
      died ? "exited" : "had not exited", waited, static_cast<unsigned long long>(calls),
      held_fault::Describe(running_status).c_str());
  std::fflush(stdout);
  EXPECT_TRUE(died) << "a caller queued on the kernel thread could not be killed";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << held_fault::Describe(status);
  EXPECT_EQ(calls, 1u) << "the killed caller's call reached the driver";
  EXPECT_TRUE(WIFEXITED(running_status) && WEXITSTATUS(running_status) == 0)
      << "the running call failed: " << held_fault::Describe(running_status);
}

// The parameters' page is lost again after the call started, while it waits for its turn (here
// the userfaultfd write-protects it then, as a sibling's munmap or a page dropped by its handler
// would): the thread must not wait on the fault (it touches only the call's sealed copy; until
// 6713f1d it ran with page faults disabled), the caller then waits on its own fault, at the copy
// back, and another slot's call goes through meanwhile. Once released, the call succeeds.
TEST(CallPath, APageLostWhileTheCallIsQueuedHoldsUpNoOtherSlot) {
  ScopedSlot running_slot(64 * kMiB, "running", VGPU_SLOT_F_UVM);
  ScopedSlot held_slot(64 * kMiB, "held", VGPU_SLOT_F_UVM);
  ScopedSlot other_slot(64 * kMiB, "other", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(running_slot.ok() && held_slot.ok() && other_slot.ok());
  const auto settle = std::chrono::milliseconds(300);
  ASSERT_TRUE(WriteNvsimParam("uvm_mm_initialize_delay_us", 1000000));
  const pid_t running = ForkMmInitialize(running_slot);
  ASSERT_GT(running, 0);
  std::this_thread::sleep_for(settle);  // its call runs in the thread for 1 s
  HeldMmInitialize tenant{held_slot};
  held_fault::HeldCall held([&](void* page) { return tenant.Prepare(page); },
                            [&](void* page) { return tenant.Call(page); },
                            /*protect=*/false);
  if (held.Unsupported()) {
    held_fault::Reap(running);
    WriteNvsimParam("uvm_mm_initialize_delay_us", 0);
    GTEST_SKIP() << "this kernel has no userfaultfd";
  }
  ASSERT_TRUE(held.Started()) << held_fault::Describe(held.status());
  std::this_thread::sleep_for(settle);  // its call waits behind the running one, faulted in
  ASSERT_TRUE(held.Protect());
  // The thread reaches the held call once the running one ends.
  const bool faulted = held.Faulted();
  WriteNvsimParam("uvm_mm_initialize_delay_us", 0);
  const auto t0 = held_fault::Clock::now();
  const pid_t other = ForkMmInitialize(other_slot);
  ASSERT_GT(other, 0);
  int status = held_fault::ReapWithin(other, held_fault::kBound);
  const double waited = held_fault::Seconds(held_fault::Clock::now() - t0);
  const bool in_time = status != -1;
  const int held_status = held.ReleaseAndReap();
  if (!in_time) status = held_fault::Reap(other);
  const int running_status = held_fault::Reap(running);
  std::printf(
      "page lost while queued: fault pending %d; another slot's call %s after %.3f s (%s); "
      "the held call, released: %s; the running call: %s\n",
      faulted, in_time ? "returned" : "had not returned", waited,
      held_fault::Describe(status).c_str(), held_fault::Describe(held_status).c_str(),
      held_fault::Describe(running_status).c_str());
  std::fflush(stdout);
  EXPECT_TRUE(faulted) << "the held call never wrote into its parameters";
  EXPECT_TRUE(in_time) << "another slot's call waited on one tenant's fault";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << held_fault::Describe(status);
  EXPECT_TRUE(WIFEXITED(held_status) && WEXITSTATUS(held_status) == 0)
      << "the held call failed once released: " << held_fault::Describe(held_status);
  EXPECT_TRUE(WIFEXITED(running_status) && WEXITSTATUS(running_status) == 0);
}

}  // namespace
}  // namespace vgpu_test

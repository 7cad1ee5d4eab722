// A tenant's call held on a fault of its own parameters, and the checks that it holds up no
// other slot (issue 17: no tenant can stall another slot's control; docs/security/
// kernel-call-path.md, F4). UVM_MM_INITIALIZE and the fabric controls run from the module's
// kernel threads, one call at a time of each kind (kmod/kthread_call.c). The held tenant's
// parameters sit on a page that a userfaultfd write-protects after they are written: the
// module's copy of them into the call's seal passes, and the first write into them (the copy
// back after the call; before 6713f1d the caller's fault-in, the thread's store of the fd
// number, the driver's copy-out) faults and waits for a release that only the test gives, as a
// fault on a userfaultfd range whose handler never answers, or on a FUSE mapping, waits. Root in
// the guest may take kernel-mode faults with userfaultfd (CAP_SYS_PTRACE). Every guest kernel
// has CONFIG_USERFAULTFD (tests/vm/kdebug/debug.config too); on a kernel without it the checks
// skip.
#pragma once

#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace held_fault {

using Clock = std::chrono::steady_clock;

// How long another slot's call, or the held tenant's death, may take. The call itself takes
// milliseconds; a call queued behind the held one never finishes before the release.
inline constexpr auto kBound = std::chrono::seconds(5);

// Child exit codes.
inline constexpr int kCallOk = 0, kCallFailed = 1, kSetupFailed = 2, kNoUserfaultfd = 77;

// The pid's exit status if it exits within `bound` (reaped), else -1 (still running).
inline int ReapWithin(pid_t pid, Clock::duration bound) {
  const auto end = Clock::now() + bound;
  do {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (Clock::now() < end);
  return -1;
}

inline int Reap(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, 0) == pid ? status : -1;
}

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A tenant process whose call runs on parameters that fault until Release(). The page is mapped
// before the fork, so it has the same address in the tenant; the test holds a copy of the
// tenant's userfaultfd (pidfd_getfd), so it sees the pending fault and can release it even while
// the tenant sleeps in the call.
class HeldCall {
 public:
  // prepare(page) writes the parameters into the page (in the tenant process; false: setup
  // failed); call(page) makes the call and says whether it succeeded. `protect`: the page faults
  // from the start, else only after Protect().
  HeldCall(const std::function<bool(void*)>& prepare, const std::function<bool(void*)>& call,
           bool protect = true)
      : protect_(protect) {
    page_ = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int p[2];
    if (page_ == MAP_FAILED || pipe(p)) return;
    std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
    pid_ = fork();
    if (pid_ == 0) {
      close(p[0]);
      _exit(RunTenant(p[1], prepare, call));
    }
    close(p[1]);
    int uffd = -1;
    const bool got = pid_ > 0 && read(p[0], &uffd, sizeof(uffd)) == sizeof(uffd);
    close(p[0]);
    if (!got) {
      status_ = pid_ > 0 ? Reap(pid_) : -1;
      pid_ = -1;
      return;
    }
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd >= 0) {
      uffd_ = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, uffd, 0));
      close(pidfd);
    }
  }
  ~HeldCall() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      ReleaseAndReap();
    }
    if (uffd_ >= 0) close(uffd_);
    if (page_ != MAP_FAILED) munmap(page_, kPage);
  }
  HeldCall(const HeldCall&) = delete;
  HeldCall& operator=(const HeldCall&) = delete;

  // This kernel has no userfaultfd.
  bool Unsupported() const {
    return pid_ < 0 && status_ != -1 && WIFEXITED(status_) &&
           WEXITSTATUS(status_) == kNoUserfaultfd;
  }
  bool Started() const { return pid_ > 0 && uffd_ >= 0; }
  int status() const { return status_; }
  pid_t pid() const { return pid_; }

  // A fault on the page is pending: the tenant, or a kernel thread on its behalf, waits on it.
  bool Faulted() const {
    pollfd pfd{uffd_, POLLIN, 0};
    return poll(&pfd, 1, static_cast<int>(kBound / std::chrono::milliseconds(1))) == 1;
  }
  // Write-protects the page: the next write into it faults.
  bool Protect() const { return WriteProtect(uffd_, UFFDIO_WRITEPROTECT_MODE_WP); }
  // Lifts the write protection and wakes whoever waits on the page.
  void Release() const { WriteProtect(uffd_, 0); }
  // The tenant's exit status if it exits within `bound`, else -1.
  int ExitWithin(Clock::duration bound) {
    const int status = ReapWithin(pid_, bound);
    if (status != -1) pid_ = -1;
    return status;
  }
  int ReleaseAndReap() {
    Release();
    const int status = Reap(pid_);
    pid_ = -1;
    return status;
  }

 private:
  static constexpr size_t kPage = 4096;
  void* page_ = MAP_FAILED;
  pid_t pid_ = -1;
  int uffd_ = -1;
  int status_ = -1;
  bool protect_;

  bool WriteProtect(int uffd, uint64_t mode) const {
    uffdio_writeprotect wp{{reinterpret_cast<uintptr_t>(page_), kPage}, mode};
    return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) == 0;
  }

  int RunTenant(int report, const std::function<bool(void*)>& prepare,
                const std::function<bool(void*)>& call) {
    if (!prepare(page_)) return kSetupFailed;  // written: present in the tenant's mm
    const int uffd = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (uffd < 0) return errno == ENOSYS ? kNoUserfaultfd : kSetupFailed;
    uffdio_api api{UFFD_API, 0, 0};
    uffdio_register reg{{reinterpret_cast<uintptr_t>(page_), kPage}, UFFDIO_REGISTER_MODE_WP, 0};
    if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
        (protect_ && !WriteProtect(uffd, UFFDIO_WRITEPROTECT_MODE_WP)))
      return kSetupFailed;
    if (write(report, &uffd, sizeof(uffd)) != sizeof(uffd)) return kSetupFailed;
    close(report);
    return call(page_) ? kCallOk : kCallFailed;
  }
};

inline std::string Describe(int status) {
  if (status == -1) return "still in the call";
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

// The checks of the top comment for one kind of call: `prepare` and `call` are the held tenant's
// (in slot A: prepare(page) writes the parameters, call(page) makes the call, each true on
// success), `other` is the same call by a process of slot B (true on success).
inline void NoSlotWaitsOnAnothersFault(const char* what, const std::function<bool(void*)>& prepare,
                                       const std::function<bool(void*)>& call,
                                       const std::function<bool()>& other) {
  {
    HeldCall held(prepare, call);
    if (held.Unsupported()) GTEST_SKIP() << "this kernel has no userfaultfd";
    ASSERT_TRUE(held.Started()) << "held tenant: " << Describe(held.status());
    ASSERT_TRUE(held.Faulted()) << "the held call never wrote into its parameters";
    const auto t0 = Clock::now();
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) _exit(other() ? kCallOk : kCallFailed);
    ASSERT_GT(pid, 0);
    int status = ReapWithin(pid, kBound);
    const double waited = Seconds(Clock::now() - t0);
    const bool in_time = status != -1;
    const int held_status = held.ReleaseAndReap();  // then the other call, if it was queued
    if (!in_time) status = Reap(pid);
    std::printf(
        "%s: another slot's call %s after %.3f s while a tenant's call waited on a fault "
        "of its parameters (then: %s); the tenant, its page released: %s\n",
        what, in_time ? "returned" : "had not returned", waited, Describe(status).c_str(),
        Describe(held_status).c_str());
    std::fflush(stdout);
    EXPECT_TRUE(in_time) << "another slot's call waited on one tenant's fault";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kCallOk) << Describe(status);
    EXPECT_TRUE(WIFEXITED(held_status) && WEXITSTATUS(held_status) == kCallOk)
        << "the held call failed once its page was released: " << Describe(held_status);
  }
  {
    HeldCall held(prepare, call);
    ASSERT_TRUE(held.Started()) << "held tenant: " << Describe(held.status());
    ASSERT_TRUE(held.Faulted()) << "the held call never wrote into its parameters";
    const auto t0 = Clock::now();
    kill(held.pid(), SIGKILL);
    int status = held.ExitWithin(kBound);
    const double waited = Seconds(Clock::now() - t0);
    const bool died = status != -1;
    if (!died) status = held.ReleaseAndReap();
    std::printf("%s: the held tenant, SIGKILLed, %s after %.3f s (then: %s)\n", what,
                died ? "exited" : "had not exited", waited, Describe(status).c_str());
    std::fflush(stdout);
    EXPECT_TRUE(died) << "a tenant waiting on its own fault in the call could not be killed";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << Describe(status);
  }
}

}  // namespace held_fault
}  // namespace vgpu_test

#include "shim/preload/ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace vgpu::shim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vshim-ledger-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/ledger";
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  std::unique_ptr<SharedLedger> Open(ProcStartFn fn = ProcStartTime) {
    std::string err;
    auto l = SharedLedger::Open(path_, &err, fn);
    EXPECT_NE(l, nullptr) << err;
    return l;
  }
  std::string dir_, path_;
};

TEST_F(LedgerTest, ChargesUpToTheQuotaExactly) {
  auto l = Open();
  ASSERT_TRUE(l->Attach());
  EXPECT_EQ(l->TryCharge(3 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(l->TryCharge(kGiB, 4 * kGiB), 0);     // exactly at quota
  EXPECT_EQ(l->TryCharge(1, 4 * kGiB), -ENOSPC);  // one byte over
  EXPECT_EQ(l->Charged(), 4 * kGiB);
  l->Uncharge(kGiB);
  EXPECT_EQ(l->Charged(), 3 * kGiB);
  l->Uncharge(10 * kGiB);  // never below zero
  EXPECT_EQ(l->Charged(), 0u);
  l->ForceCharge(5 * kGiB);  // the driver allocated beyond the reservation
  EXPECT_EQ(l->Charged(), 5 * kGiB);
  EXPECT_EQ(l->Peak(), 5 * kGiB);
  EXPECT_EQ(l->TryCharge(1, 4 * kGiB), -ENOSPC);
  EXPECT_EQ(l->TryCharge(kGiB, 0), 0);                     // quota 0 = unlimited
  EXPECT_EQ(l->TryCharge(UINT64_MAX, 8 * kGiB), -ENOSPC);  // no wraparound
}

TEST_F(LedgerTest, UnattachedProcessIsRefused) {
  auto l = Open();
  EXPECT_EQ(l->TryCharge(1, 0), -ENOSPC);
}

TEST_F(LedgerTest, RefusesAFileOfAnotherVersion) {
  { auto l = Open(); }
  int fd = open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint32_t v = 99;
  ASSERT_EQ(pwrite(fd, &v, sizeof v, offsetof(LedgerFile, version)), 4);
  close(fd);
  std::string err;
  EXPECT_EQ(SharedLedger::Open(path_, &err), nullptr);
  EXPECT_NE(err.find("has version 99"), std::string::npos) << err;
}

// Fake processes: pid -> start time; absent = dead.
std::map<pid_t, uint64_t> fake_procs;
std::optional<uint64_t> FakeStart(pid_t pid) {
  auto it = fake_procs.find(pid);
  if (it == fake_procs.end()) {
    return std::nullopt;
  }
  return it->second;
}

TEST_F(LedgerTest, MembersShareOneQuotaAndDeadOnesAreReaped) {
  fake_procs = {{100, 1}, {200, 2}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  ASSERT_TRUE(a->Attach(100));
  ASSERT_TRUE(b->Attach(200));
  EXPECT_EQ(a->TryCharge(3 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(b->TryCharge(2 * kGiB, 4 * kGiB), -ENOSPC);  // slot-wide, not per process
  EXPECT_EQ(b->TryCharge(kGiB, 4 * kGiB), 0);
  EXPECT_EQ(a->Charged(), 4 * kGiB);
  EXPECT_EQ(b->ChargedBy(100), 3 * kGiB);
  EXPECT_TRUE(b->IsMember(100));

  fake_procs.erase(100);  // killed: its entry is reaped at the next refusal
  EXPECT_EQ(b->TryCharge(2 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(b->Charged(), 3 * kGiB);
  EXPECT_FALSE(b->IsMember(100));
}

TEST_F(LedgerTest, PidReuseIsDetectedByStartTime) {
  fake_procs = {{300, 10}, {400, 1}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  ASSERT_TRUE(a->Attach(300));
  ASSERT_TRUE(b->Attach(400));
  ASSERT_EQ(a->TryCharge(4 * kGiB, 4 * kGiB), 0);
  fake_procs[300] = 11;  // pid 300 died and was reused by another process
  EXPECT_EQ(b->TryCharge(kGiB, 4 * kGiB), 0);
  EXPECT_EQ(b->ChargedBy(300), 0u);
}

TEST_F(LedgerTest, ReattachAfterExecResetsTheCharge) {
  fake_procs = {{500, 7}};
  auto before = Open(FakeStart);
  ASSERT_TRUE(before->Attach(500));
  ASSERT_EQ(before->TryCharge(2 * kGiB, 0), 0);
  auto after = Open(FakeStart);  // same pid and start time: the image after exec
  ASSERT_TRUE(after->Attach(500));
  EXPECT_EQ(after->Charged(), 0u);
}

// Real processes: a child charges, is SIGKILLed, and its memory returns to the slot.
TEST_F(LedgerTest, SigkilledProcessChargeReturnsToTheSlot) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string err;
    auto l = SharedLedger::Open(path_, &err);
    char ok = (l && l->Attach() && l->TryCharge(3 * kGiB, 4 * kGiB) == 0) ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) {
      _exit(2);
    }
    pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  EXPECT_EQ(parent->ChargedBy(child), 3 * kGiB);
  EXPECT_EQ(parent->TryCharge(2 * kGiB, 4 * kGiB), -ENOSPC);  // child alive: shared quota
  EXPECT_EQ(parent->Charged(), 3 * kGiB);  // the child is watched through a pidfd from here
  EXPECT_EQ(parent->Charged(), 3 * kGiB);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Not yet waited for: a zombie counts as dead (its files are closed).
  for (int i = 0; i < 200; ++i) {
    if (!ProcStartTime(child)) {
      break;
    }
    usleep(5000);
  }
  usleep(2000);                      // a poll that found it alive is trusted for 1 ms (ledger.h)
  EXPECT_EQ(parent->Charged(), 0u);  // the view sees it at once
  EXPECT_EQ(parent->TryCharge(2 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(parent->Charged(), 2 * kGiB);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(ready[0]);
  close(ready[1]);
}

// The application closes the pidfd the ledger watches a member through, and the number is
// reused by a plain file (which always polls readable): the live member must not be reaped,
// and the ledger must go back to watching it.
TEST_F(LedgerTest, ApplicationClosingOurPidfdDoesNotReapALiveMember) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::string err;
    auto l = SharedLedger::Open(path_, &err);
    char ok = (l && l->Attach() && l->TryCharge(kGiB, 0) == 0) ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) {
      _exit(2);
    }
    pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  EXPECT_EQ(parent->Charged(), kGiB);  // opens the pidfd
  auto find_pidfd = [] {
    for (int fd = 3; fd < 1024; ++fd) {
      char link[64], target[64] = {};
      snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      if (readlink(link, target, sizeof target - 1) > 0 && strstr(target, "pidfd") != nullptr) {
        return fd;
      }
    }
    return -1;
  };
  int pidfd = find_pidfd();
  ASSERT_GE(pidfd, 0) << "no pidfd open (pidfd_open unavailable?)";
  ASSERT_EQ(close(pidfd), 0);
  int impostor = open("/dev/null", O_RDONLY);
  ASSERT_EQ(impostor, pidfd);
  for (int i = 0; i < 3; ++i) {
    usleep(1500);                                        // past the 1 ms trust window
    EXPECT_EQ(parent->Charged(), kGiB) << "read " << i;  // reaps through /proc: still alive
  }
  EXPECT_GE(find_pidfd(), 0) << "the member is not watched again";
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  usleep(1500);
  EXPECT_EQ(parent->Charged(), 0u);
  close(impostor);
  close(ready[0]);
  close(ready[1]);
}

// A process that dies holding the ledger's mutex must not wedge the slot.
TEST_F(LedgerTest, DeathWhileHoldingTheLockDoesNotWedge) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = open(path_.c_str(), O_RDWR);
    void* p = mmap(nullptr, sizeof(LedgerFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      _exit(2);
    }
    pthread_mutex_lock(&static_cast<LedgerFile*>(p)->mu);
    _exit(0);  // dies holding it
  }
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  alarm(10);  // a wedge fails the test instead of hanging CTest
  EXPECT_EQ(parent->TryCharge(kGiB, 4 * kGiB), 0);
  EXPECT_EQ(parent->Charged(), kGiB);
  alarm(0);
}

TEST_F(LedgerTest, ForkChildBecomesItsOwnMember) {
  auto l = Open();
  ASSERT_TRUE(l->Attach());
  ASSERT_EQ(l->TryCharge(kGiB, 4 * kGiB), 0);
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    l->MarkForked();
    bool ok = l->TryCharge(2 * kGiB, 4 * kGiB) == 0 && l->ChargedBy(getpid()) == 2 * kGiB &&
              l->ChargedBy(getppid()) == kGiB;
    char c = ok ? 'y' : 'n';
    if (write(done[1], &c, 1) != 1) {
      _exit(3);
    }
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(done[0], &c, 1), 1);
  EXPECT_EQ(c, 'y');
  EXPECT_EQ(l->Charged(), 3 * kGiB);
  kill(child, SIGKILL);
  int status;
  waitpid(child, &status, 0);
  EXPECT_EQ(l->TryCharge(3 * kGiB, 4 * kGiB), 0);  // child's 2 GiB reaped
  close(done[0]);
  close(done[1]);
}

// Sums stop at high_water: members above a freed entry still count, reaps lower the bound,
// and the next member takes the lowest free entry below it.
TEST_F(LedgerTest, HighWaterBoundsTheSumWithoutMissingAMember) {
  fake_procs = {{11, 1}, {12, 1}, {13, 1}, {14, 1}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  auto c = Open(FakeStart);
  ASSERT_TRUE(a->Attach(11));
  ASSERT_TRUE(b->Attach(12));
  ASSERT_TRUE(c->Attach(13));
  int fd = open(path_.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  auto* f = static_cast<LedgerFile*>(
      mmap(nullptr, sizeof(LedgerFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(f, MAP_FAILED);
  EXPECT_EQ(f->high_water, 3u);
  b->Detach();  // a hole at entry 1
  ASSERT_EQ(c->TryCharge(3 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(a->TryCharge(2 * kGiB, 4 * kGiB), -ENOSPC);  // c's charge, past the hole, counts
  EXPECT_EQ(a->Charged(), 3 * kGiB);
  fake_procs.erase(13);  // c dies: the reap frees entry 2 and lowers the bound to a's entry
  EXPECT_EQ(a->TryCharge(2 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(f->high_water, 1u);
  auto d = Open(FakeStart);
  ASSERT_TRUE(d->Attach(14));  // takes entry 1, raising the bound first
  EXPECT_EQ(f->high_water, 2u);
  EXPECT_EQ(d->TryCharge(3 * kGiB, 4 * kGiB), -ENOSPC);
  EXPECT_EQ(d->TryCharge(2 * kGiB, 4 * kGiB), 0);
  EXPECT_EQ(a->Charged(), 4 * kGiB);
  // A bound written out of range (a corrupted file) is clamped, not followed.
  f->high_water = 1u << 30;
  EXPECT_EQ(a->Charged(), 4 * kGiB);
  munmap(f, sizeof(LedgerFile));
}

TEST(ProcStartTime, ReadsOwnAndRejectsMissing) {
  EXPECT_TRUE(ProcStartTime(getpid()).has_value());
  EXPECT_FALSE(ProcStartTime(0x7ffffff0).has_value());
}

}  // namespace
}  // namespace vgpu::shim

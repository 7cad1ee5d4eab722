#include "shim/preload/ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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
  // A process of the slot: a child that runs `in_child` (on the ledger state it inherits, or on
  // its own), reports the result through a pipe and waits to be killed. Its pid once it reported
  // success; -1 otherwise (a failure recorded, the child gone).
  pid_t StartChild(const std::function<bool()>& in_child) {
    int ready[2];
    if (pipe(ready) != 0) {
      ADD_FAILURE() << "pipe: " << strerror(errno);
      return -1;
    }
    const pid_t child = fork();
    if (child == 0) {
      const char ok = in_child() ? 'y' : 'n';
      if (write(ready[1], &ok, 1) != 1) {
        _exit(2);
      }
      pause();
      _exit(0);
    }
    char ok = 0;
    const bool reported = child > 0 && read(ready[0], &ok, 1) == 1;
    close(ready[0]);
    close(ready[1]);
    EXPECT_TRUE(reported) << "the child did not start or report";
    EXPECT_EQ(ok, 'y') << "the child's part failed";
    if (reported && ok == 'y') {
      return child;
    }
    if (child > 0) {
      KillChild(child);
    }
    return -1;
  }
  // A child that opens the ledger itself (not the parent's mapping), attaches and charges.
  pid_t StartChargingChild(uint64_t bytes, uint64_t quota) {
    return StartChild([this, bytes, quota] {
      std::string err;
      auto l = SharedLedger::Open(path_, &err);
      return l && l->Attach() && l->TryCharge(bytes, quota) == 0;
    });
  }
  static void KillChild(pid_t child) {
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status;
    ASSERT_EQ(waitpid(child, &status, 0), child);
  }
  // A process that maps the ledger file, takes its mutex, runs `in_lock` and dies holding it.
  void DieHoldingTheLock(const std::function<void(LedgerFile*)>& in_lock) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      int fd = open(path_.c_str(), O_RDWR);
      auto* f = static_cast<LedgerFile*>(
          mmap(nullptr, sizeof(LedgerFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      if (f == MAP_FAILED) {
        _exit(2);
      }
      pthread_mutex_lock(&f->mu);
      in_lock(f);
      _exit(0);  // dies holding it
    }
    int status;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
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
  const pid_t child = StartChargingChild(3 * kGiB, 4 * kGiB);
  ASSERT_GT(child, 0);
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
}

// The application closes the pidfd the ledger watches a member through, and the number is
// reused by a plain file (which always polls readable): the live member must not be reaped,
// and the ledger must go back to watching it.
TEST_F(LedgerTest, ApplicationClosingOurPidfdDoesNotReapALiveMember) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  const pid_t child = StartChargingChild(kGiB, 0);
  ASSERT_GT(child, 0);
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
  KillChild(child);
  usleep(1500);
  EXPECT_EQ(parent->Charged(), 0u);
  close(impostor);
}

// A process that dies holding the ledger's mutex must not wedge the slot.
TEST_F(LedgerTest, DeathWhileHoldingTheLockDoesNotWedge) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  ASSERT_NO_FATAL_FAILURE(DieHoldingTheLock([](LedgerFile*) {}));
  alarm(10);  // a wedge fails the test instead of hanging CTest
  EXPECT_EQ(parent->TryCharge(kGiB, 4 * kGiB), 0);
  EXPECT_EQ(parent->Charged(), kGiB);
  alarm(0);
}

TEST_F(LedgerTest, ForkChildBecomesItsOwnMember) {
  auto l = Open();
  ASSERT_TRUE(l->Attach());
  ASSERT_EQ(l->TryCharge(kGiB, 4 * kGiB), 0);
  const pid_t child = StartChild([&l] {
    l->MarkForked();
    return l->TryCharge(2 * kGiB, 4 * kGiB) == 0 && l->ChargedBy(getpid()) == 2 * kGiB &&
           l->ChargedBy(getppid()) == kGiB;
  });
  ASSERT_GT(child, 0);
  EXPECT_EQ(l->Charged(), 3 * kGiB);
  KillChild(child);
  EXPECT_EQ(l->TryCharge(3 * kGiB, 4 * kGiB), 0);  // child's 2 GiB reaped
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

// A version-2 ledger (smaller entries, no compute counters) in use by an older shim: refused
// with a message naming both versions, and left exactly as it was (not grown, not rewritten).
TEST_F(LedgerTest, RefusesAnOlderVersionFileWithoutTouchingIt) {
  int fd = open(path_.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  const size_t v2_size = sizeof(LedgerFile) - LedgerFile::kMaxEntries * 16 - 48;
  std::string v2(v2_size, '\0');
  const uint64_t magic = LedgerFile::kMagic;
  const uint32_t version = 2;
  memcpy(v2.data(), &magic, 8);
  memcpy(v2.data() + 8, &version, 4);
  v2[200] = 0x5a;  // some member's data
  ASSERT_EQ(write(fd, v2.data(), v2.size()), static_cast<ssize_t>(v2.size()));
  std::string err;
  EXPECT_EQ(SharedLedger::Open(path_, &err), nullptr);
  EXPECT_NE(err.find("has version 2"), std::string::npos) << err;
  EXPECT_NE(err.find("version " + std::to_string(LedgerFile::kVersion)), std::string::npos) << err;
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), v2_size) << "not resized";
  std::string back(v2_size, 'x');
  ASSERT_EQ(pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(v2_size));
  EXPECT_EQ(back, v2) << "not rewritten";
  close(fd);
}

// Each member publishes its own cumulative counters; the slot's totals are their sum, the
// share is the last one written, and a sample naming no process counts once for the slot
// however many members publish it.
TEST_F(LedgerTest, ComputeCountersSumOverMembersAndUnattributedCountsOnce) {
  fake_procs = {{100, 1}, {200, 2}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  ASSERT_TRUE(a->Attach(100));
  ASSERT_TRUE(b->Attach(200));
  const LedgerBusySample s1[] = {{10, 5}, {20, 6}};
  const LedgerBusySample s2[] = {{10, 5}, {20, 6}, {30, 7}};
  a->PublishCompute(1000, 400, 290, 295, s1, 2);
  b->PublishCompute(2000, 600, 310, 315, s2, 3);
  LedgerComputeTotals t = a->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 1000u + 2000u + 5 + 6 + 7);
  EXPECT_EQ(t.throttled_ns, 1000u);
  EXPECT_EQ(t.achieved_share_1s_pm, 310u);
  EXPECT_EQ(t.achieved_share_10s_pm, 315u) << "the 10 s share of the same writer";
  a->PublishCompute(1500, 500, 300, 305, s2, 3);  // cumulative: replaces, and 10..30 are counted
  t = b->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 1500u + 2000u + 18);
  EXPECT_EQ(t.throttled_ns, 1100u);
  EXPECT_EQ(t.achieved_share_1s_pm, 300u);
  EXPECT_EQ(t.achieved_share_10s_pm, 305u);
  a->PublishCompute(1200, 450, 300, 305, nullptr, 0);  // never backwards
  EXPECT_EQ(b->ComputeTotals().gpu_busy_ns, 1500u + 2000u + 18);
  auto outsider = Open(FakeStart);  // not attached: publishes nothing
  outsider->PublishCompute(1'000'000, 1'000'000, 1000, 1005, nullptr, 0);
  EXPECT_EQ(b->ComputeTotals().throttled_ns, 1100u);
}

// A member that leaves (killed and reaped, clean exit, exec) takes its charge with it but not
// its counters: they move to the file's accumulators, so the slot's totals never go down.
TEST_F(LedgerTest, LeavingMembersCountersStayInTheTotals) {
  fake_procs = {{100, 1}, {200, 2}, {300, 3}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  ASSERT_TRUE(a->Attach(100));
  ASSERT_TRUE(b->Attach(200));
  a->PublishCompute(1000, 400, 250, 255, nullptr, 0);
  b->PublishCompute(2000, 600, 0, 5, nullptr, 0);
  a->PublishCompute(1000, 400, 250, 255, nullptr, 0);  // a wrote the share last
  int fd = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto* f = static_cast<const LedgerFile*>(
      mmap(nullptr, sizeof(LedgerFile), PROT_READ, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(f, MAP_FAILED);
  const uint64_t seq0 = f->seq;

  fake_procs.erase(100);  // killed
  EXPECT_EQ(b->Reap(), 1);
  LedgerComputeTotals t = b->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 3000u);
  EXPECT_EQ(t.throttled_ns, 1000u);
  EXPECT_EQ(t.achieved_share_1s_pm, 0u) << "its writer is gone: no stale share";
  EXPECT_EQ(t.achieved_share_10s_pm, 0u);
  EXPECT_EQ(f->reaped_busy_ns, 1000u);
  EXPECT_EQ(f->seq, seq0 + 2) << "the move was bracketed, and seq is even again";

  b->Detach();  // clean exit
  t = b->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 3000u);
  EXPECT_EQ(t.throttled_ns, 1000u);

  auto c = Open(FakeStart);
  ASSERT_TRUE(c->Attach(300));
  c->PublishCompute(50, 5, 100, 105, nullptr, 0);
  auto c_after_exec = Open(FakeStart);  // same pid and start time: c's image after exec
  ASSERT_TRUE(c_after_exec->Attach(300));
  EXPECT_EQ(c_after_exec->ComputeTotals().gpu_busy_ns, 3050u) << "the old image's counters stay";
  c_after_exec->PublishCompute(7, 1, 100, 105, nullptr, 0);  // the new image counts from zero
  t = c_after_exec->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 3057u);
  EXPECT_EQ(t.throttled_ns, 1006u);
  munmap(const_cast<LedgerFile*>(f), sizeof(LedgerFile));
}

// A live member reaped by mistake is re-added at its next write; what it had published is in
// the accumulators already, so its new entry holds only what came after (no double count).
TEST_F(LedgerTest, WronglyReapedMemberIsNotCountedTwice) {
  fake_procs = {{100, 1}, {200, 2}};
  auto a = Open(FakeStart);
  auto b = Open(FakeStart);
  ASSERT_TRUE(a->Attach(100));
  ASSERT_TRUE(b->Attach(200));
  a->PublishCompute(1000, 100, 300, 305, nullptr, 0);
  fake_procs.erase(100);
  ASSERT_EQ(b->Reap(), 1);
  fake_procs[100] = 1;  // it was alive after all
  a->PublishCompute(1500, 150, 300, 305, nullptr, 0);
  const LedgerComputeTotals t = b->ComputeTotals();
  EXPECT_EQ(t.gpu_busy_ns, 1500u);
  EXPECT_EQ(t.throttled_ns, 150u);
  EXPECT_TRUE(b->IsMember(100));
}

// A holder killed while moving counters (seq odd) does not leave readers retrying forever:
// the next locker evens seq.
TEST_F(LedgerTest, DeathWhileMovingCountersLeavesSeqEven) {
  auto parent = Open();
  ASSERT_TRUE(parent->Attach());
  // Dies holding the lock, seq odd: a move under way.
  ASSERT_NO_FATAL_FAILURE(DieHoldingTheLock([](LedgerFile* f) { f->seq++; }));
  alarm(10);
  parent->PublishCompute(10, 1, 100, 105, nullptr, 0);
  alarm(0);
  int fd = open(path_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  uint64_t seq = 1;
  ASSERT_EQ(pread(fd, &seq, sizeof seq, offsetof(LedgerFile, seq)), 8);
  close(fd);
  EXPECT_EQ(seq % 2, 0u);
  EXPECT_EQ(parent->ComputeTotals().gpu_busy_ns, 10u);
}

TEST(ProcStartTime, ReadsOwnAndRejectsMissing) {
  EXPECT_TRUE(ProcStartTime(getpid()).has_value());
  EXPECT_FALSE(ProcStartTime(0x7ffffff0).has_value());
}

}  // namespace
}  // namespace vgpu::shim

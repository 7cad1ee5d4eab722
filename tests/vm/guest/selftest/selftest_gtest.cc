// Proves a static GoogleTest binary runs in the guest, against /dev/vmselftest.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <vector>

#include "tests/vm/selftest/vmselftest_uapi.h"

namespace {

class VmSelftest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = open("/dev/vmselftest", O_RDWR);
    ASSERT_GE(fd_, 0) << "errno " << errno;
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
  }
  int fd_ = -1;
};

TEST_F(VmSelftest, EchoAddsOne) {
  vmselftest_echo e{};
  e.in = 99;
  ASSERT_EQ(ioctl(fd_, VMSELFTEST_IOC_ECHO, &e), 0);
  EXPECT_EQ(e.out, 100u);
}

TEST_F(VmSelftest, CountsCallsFromManyThreads) {
  vmselftest_echo first{};
  ASSERT_EQ(ioctl(fd_, VMSELFTEST_IOC_ECHO, &first), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < 100; ++i) {
        vmselftest_echo e{};
        ASSERT_EQ(ioctl(fd_, VMSELFTEST_IOC_ECHO, &e), 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  vmselftest_echo last{};
  ASSERT_EQ(ioctl(fd_, VMSELFTEST_IOC_ECHO, &last), 0);
  EXPECT_EQ(last.calls, first.calls + 401);
}

TEST_F(VmSelftest, BadPointerIsEfault) {
  errno = 0;
  EXPECT_EQ(ioctl(fd_, VMSELFTEST_IOC_ECHO, reinterpret_cast<void*>(8)), -1);
  EXPECT_EQ(errno, EFAULT);
}

}  // namespace

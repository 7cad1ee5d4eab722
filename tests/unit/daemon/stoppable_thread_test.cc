// StoppableThread (daemon/common): the wake-up the control API and the kubelet.sock watcher
// rely on to stop a thread blocked in poll(), and what each wait answers.
#include "vgpu/stoppable_thread.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace vgpu {
namespace {

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~Pipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int read_end() const { return fds_[0]; }
  void Write() { ASSERT_EQ(::write(fds_[1], "x", 1), 1); }

 private:
  int fds_[2] = {-1, -1};
};

TEST(StoppableThread, StopWakesABodyBlockedWithoutATimeout) {
  Pipe pipe;  // never written: only Stop() can end the wait
  StoppableThread thread;
  std::atomic<int> answer{-1};
  ASSERT_TRUE(thread.Start([&] { answer = thread.WaitReadable(pipe.read_end()); }).ok());
  auto begin = std::chrono::steady_clock::now();
  thread.Stop();
  EXPECT_EQ(answer.load(), 0) << "a stopped wait answers false";
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
}

TEST(StoppableThread, ReadableFdEndsTheWaitWithTrue) {
  Pipe pipe;
  pipe.Write();
  StoppableThread thread;
  std::atomic<int> untimed{-1}, timed{-1};
  ASSERT_TRUE(thread
                  .Start([&] {
                    untimed = thread.WaitReadable(pipe.read_end());
                    timed = thread.WaitReadableFor(pipe.read_end(), 5000);
                  })
                  .ok());
  while (timed.load() < 0) {  // Stop() first would win: it is checked before the fd
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  thread.Stop();
  EXPECT_EQ(untimed.load(), 1);
  EXPECT_EQ(timed.load(), 1);
}

TEST(StoppableThread, TimedWaitAnswersFalseAfterItsTimeout) {
  Pipe pipe;
  StoppableThread thread;
  std::atomic<int> answer{-1};
  ASSERT_TRUE(thread.Start([&] { answer = thread.WaitReadableFor(pipe.read_end(), 20); }).ok());
  while (answer.load() < 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(answer.load(), 0);
  thread.Stop();
}

TEST(StoppableThread, StopBeforeStartAndTwiceIsSafe) {
  StoppableThread never_started;
  never_started.Stop();
  never_started.Stop();
  StoppableThread thread;
  ASSERT_TRUE(thread.Start([] {}).ok());
  thread.Stop();
  thread.Stop();
}

}  // namespace
}  // namespace vgpu

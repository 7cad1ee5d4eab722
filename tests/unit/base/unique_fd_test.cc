#include "vgpu/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include <gtest/gtest.h>

namespace vgpu {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFdTest, ClosesWhatItHoldsOnResetAndDestruction) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    UniqueFd read_end(fds[0]);
    UniqueFd write_end(fds[1]);
    EXPECT_TRUE(read_end.valid());
    EXPECT_EQ(read_end.get(), fds[0]);
    read_end.reset();
    EXPECT_FALSE(read_end.valid());
    EXPECT_FALSE(IsOpen(fds[0]));
    read_end.reset();  // twice: nothing to close
    EXPECT_TRUE(IsOpen(fds[1]));
  }
  EXPECT_FALSE(IsOpen(fds[1]));
}

TEST(UniqueFdTest, MoveHandsOverAndReleaseKeepsTheFdOpen) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd a(fds[0]);
  UniqueFd b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(b.get(), fds[0]);
  UniqueFd c(fds[1]);
  c = std::move(b);  // closes what c held (fds[1]), takes fds[0]
  EXPECT_FALSE(IsOpen(fds[1]));
  EXPECT_EQ(c.get(), fds[0]);
  const int raw = c.release();
  EXPECT_FALSE(c.valid());
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

}  // namespace
}  // namespace vgpu

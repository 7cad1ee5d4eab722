#include "shim/base/fd_table.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

namespace vgpu::shim {
namespace {

TEST(ClassifyPath, KnowsEveryNvidiaNode) {
  EXPECT_EQ(ClassifyPath("/dev/nvidiactl", "/dev"), DevKind::kCtl);
  EXPECT_EQ(ClassifyPath("/dev/nvidia0", "/dev"), DevKind::kGpu);
  EXPECT_EQ(ClassifyPath("/dev/nvidia17", "/dev"), DevKind::kGpu);
  EXPECT_EQ(ClassifyPath("/dev/nvidia-uvm", "/dev"), DevKind::kUvm);
  EXPECT_EQ(ClassifyPath("/dev/nvidia-uvm-tools", "/dev"), DevKind::kUvmTools);
  EXPECT_EQ(ClassifyPath("/dev/nvidia-caps/nvidia-cap1", "/dev"), DevKind::kOther);
  EXPECT_EQ(ClassifyPath("/dev/nvidia-modeset", "/dev"), DevKind::kOther);
}

TEST(ClassifyPath, RefusesLookalikes) {
  EXPECT_EQ(ClassifyPath("/dev/nvidia0x", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("/dev/nvidiactl2", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("/dev/nvidia", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("/devx/nvidiactl", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("nvidiactl", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("/tmp/nvidiactl", "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath(nullptr, "/dev"), DevKind::kNone);
  EXPECT_EQ(ClassifyPath("/tmp/fake/nvidiactl", "/tmp/fake"), DevKind::kCtl);
}

TEST(FdTable, SetGetClearAndLazyClassification) {
  auto table = std::make_unique<FdTable>();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // Never seen: classified from /proc/self/fd (a pipe is not an NVIDIA node) and cached.
  EXPECT_EQ(table->Get(fds[0]), DevKind::kNone);
  table->Set(fds[1], DevKind::kCtl);
  EXPECT_EQ(table->Get(fds[1]), DevKind::kCtl);
  EXPECT_EQ(table->Clear(fds[1]), DevKind::kCtl);
  EXPECT_EQ(table->Get(fds[1]), DevKind::kNone);  // reclassified after clear
  EXPECT_EQ(table->Get(-1), DevKind::kNone);
  EXPECT_EQ(table->Clear(FdTable::kMaxTracked + 5), DevKind::kUnknown);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace vgpu::shim

// A fresh $VGPU_DEV_DIR for the end-to-end tests that run a program under a preload library
// against the fake driver (libvshim-fakenv.so): empty stand-ins for the driver's nodes
// (nvidiactl, nvidia0, nvidia-uvm) in a temporary directory, removed after the test.
#pragma once

#include <gtest/gtest.h>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

namespace vgpu::test {

class FakeDeviceDirTest : public ::testing::Test {
 protected:
  // The directory is /tmp/<prefix>-XXXXXX.
  explicit FakeDeviceDirTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    std::string tmpl = "/tmp/" + prefix_ + "-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    for (const char* node : {"nvidiactl", "nvidia0", "nvidia-uvm"}) {
      std::ofstream(dir_ + "/" + node) << "";
    }
  }
  void TearDown() override {
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }

  std::string dir_;

 private:
  std::string prefix_;
};

}  // namespace vgpu::test

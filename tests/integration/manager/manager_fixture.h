// The fixture every manager scenario starts from: a fresh directory, a fake kubelet and the real
// vgpu-manager in it, both started by StartBoth(); on failure the manager's log is printed, and
// the directory is removed either way.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "fake_kubelet.h"
#include "manager_process.h"

namespace vgpu::testing {

inline constexpr const char* kCore = "tencent.com/vcuda-core";
inline constexpr const char* kMem = "tencent.com/vcuda-memory";
inline constexpr const char* kGpu = "tencent.com/vcuda-gpu";

class ManagerFixture : public ::testing::Test {
 protected:
  // `dir_template` is a mkdtemp(3) template: the prefix names the suite in /tmp.
  explicit ManagerFixture(std::string dir_template) {
    dir_ = ::mkdtemp(dir_template.data());
    kubelet_ = std::make_unique<FakeKubelet>(dir_);
    manager_ = std::make_unique<ManagerProcess>(VGPU_MANAGER_BIN, dir_);
  }
  ~ManagerFixture() override {
    manager_.reset();
    kubelet_.reset();
    if (::testing::Test::HasFailure()) {
      std::ifstream log(dir_ + "/manager.log");
      std::cerr << "---- manager log ----\n" << log.rdbuf() << "---- end ----\n";
    }
    std::filesystem::remove_all(dir_);
  }

  // Kubelet first, then the manager; waits for all three resources and their device lists.
  void StartBoth(const std::vector<std::string>& flags = {},
                 const std::vector<std::string>& env = {}) {
    using namespace std::chrono_literals;
    kubelet_->Start();
    auto since = std::chrono::steady_clock::now();
    ASSERT_TRUE(manager_->Start(flags, env)) << "manager did not start";
    for (const char* r : {kCore, kMem, kGpu}) {
      ASSERT_TRUE(kubelet_->WaitForRegistration(r, since, 10s)) << r;
      ASSERT_TRUE(kubelet_->WaitForDevices(r, 10s)) << r;
    }
  }

  std::string dir_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<ManagerProcess> manager_;
};

}  // namespace vgpu::testing

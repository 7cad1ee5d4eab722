// Every DRA scenario starts from: a fresh directory, a local fake API server, the real
// vgpu-manager in --kubelet-api=dra mode against it (shim enforcement, the two-GPU fixture),
// and a fake kubelet registered with it. The manager's log is printed when a test fails.
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

#include "fake_api_server.h"
#include "fake_dra_kubelet.h"
#include "manager_process.h"

namespace vgpu::testing {

inline constexpr const char* kDriver = "gpu.vgpu.io";
inline constexpr const char* kNode = "node-a";
inline constexpr uint64_t kGiB = 1ull << 30;

class DraFixture : public ::testing::Test {
 protected:
  DraFixture() {
    std::string tmpl = "/tmp/vgpu-dra-XXXXXX";
    dir_ = ::mkdtemp(tmpl.data());
    api_ = std::make_unique<FakeApiServer>();
    api_->WriteKubeconfig(dir_ + "/kubeconfig");
    manager_ = std::make_unique<ManagerProcess>(VGPU_MANAGER_BIN, dir_);
    kubelet_ = std::make_unique<FakeDraKubelet>(KubeletDir());
  }
  ~DraFixture() override {
    kubelet_.reset();
    manager_.reset();
    if (::testing::Test::HasFailure()) {
      std::ifstream log(dir_ + "/manager.log");
      std::cerr << "---- manager log ----\n" << log.rdbuf() << "---- end ----\n";
    }
    std::filesystem::remove_all(dir_);
  }

  std::string KubeletDir() const { return dir_ + "/kubelet"; }
  std::string CdiDir() const { return dir_ + "/cdi"; }

  std::vector<std::string> Flags() const {
    return {"--kubelet-api=dra", "--kubelet-dir=" + KubeletDir(),
            "--kubeconfig=" + dir_ + "/kubeconfig", "--hostname-override=" + std::string(kNode),
            "--cdi-spec-dir=" + CdiDir()};
  }

  // Starts (or restarts) the manager and registers the fake kubelet with it.
  void StartManager(const std::vector<std::string>& env = {}) {
    std::vector<std::string> e = env;
    e.push_back("VGPU_DRA_RESYNC_MS=200");
    ASSERT_TRUE(manager_->Start(Flags(), e)) << "manager did not start";
    kubelet_ = std::make_unique<FakeDraKubelet>(KubeletDir());
    ASSERT_TRUE(kubelet_->Register(kDriver, std::chrono::seconds(10))) << "no registration";
  }

  // A shared-device claim on `gpu` for `memory` bytes and `cores` percent.
  nlohmann::json ShareClaim(const std::string& name, const std::string& uid, int gpu,
                            const std::string& memory, const std::string& cores,
                            nlohmann::json config = nlohmann::json::array()) {
    nlohmann::json results =
        nlohmann::json::array({{{"device", "gpu-" + std::to_string(gpu) + "-share"},
                                {"shareID", "share-" + uid},
                                {"consumedCapacity", {{"memory", memory}, {"cores", cores}}}}});
    return MakeClaim("default", name, uid, kDriver, kNode, results, config);
  }
  // A claim's opaque config for this driver with `settings` (apiVersion and kind filled in).
  static nlohmann::json GpuConfig(nlohmann::json settings) {
    settings["apiVersion"] = "gpu.vgpu.io/v1alpha1";
    settings["kind"] = "GpuConfig";
    return nlohmann::json::array(
        {{{"source", "FromClaim"},
          {"opaque", {{"driver", kDriver}, {"parameters", std::move(settings)}}}}});
  }
  nlohmann::json WholeClaim(const std::string& name, const std::string& uid, int gpu) {
    return MakeClaim("default", name, uid, kDriver, kNode,
                     nlohmann::json::array({{{"device", "gpu-" + std::to_string(gpu)}}}));
  }

  // Waits until the fake API server holds `n` slices of ours.
  bool WaitForSlices(size_t n, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (api_->Slices().size() == n) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Slots whose name belongs to claim `uid`, from the control API.
  std::vector<nlohmann::json> ClaimSlots(const std::string& uid) {
    std::vector<nlohmann::json> out;
    for (const auto& s : manager_->Slots()) {
      if (s["name"].get<std::string>().starts_with("dra-" + uid + "-")) {
        out.push_back(s);
      }
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<ManagerProcess> manager_;
  std::unique_ptr<FakeDraKubelet> kubelet_;
};

}  // namespace vgpu::testing

// The kubelet's side of a DRA plugin on real unix sockets, for the plugin's tests: it finds the
// plugin's registration socket in <kubelet-dir>/plugins_registry/ (the kubelet's plugin
// watcher), calls GetInfo and checks it as the kubelet does (type DRAPlugin, a service it
// knows), answers NotifyRegistrationStatus, then calls NodePrepareResources /
// NodeUnprepareResources (v1 or v1beta1) and keeps a NodeWatchResources stream open.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace vgpu::testing {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

struct ClaimId {
  std::string ns, name, uid;
};

class FakeDraKubelet {
 public:
  explicit FakeDraKubelet(std::string kubelet_dir) : dir_(std::move(kubelet_dir)) {}
  ~FakeDraKubelet();

  // Waits for <dir>/plugins_registry/<driver>-reg.sock, GetInfo, NotifyRegistrationStatus.
  bool Register(const std::string& driver, std::chrono::milliseconds timeout);
  const pluginregistration::PluginInfo& info() const { return info_; }

  grpc::Status Prepare(const std::vector<ClaimId>& claims, drav1::NodePrepareResourcesResponse* out,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));
  grpc::Status PrepareV1beta1(const std::vector<ClaimId>& claims,
                              drav1beta1::NodePrepareResourcesResponse* out);
  grpc::Status Unprepare(const std::vector<ClaimId>& claims,
                         drav1::NodeUnprepareResourcesResponse* out);

  // Opens NodeWatchResources; WaitForHealth returns the latest message once `n` have arrived.
  void WatchHealth();
  bool WaitForHealth(int n, std::chrono::milliseconds timeout,
                     v1::NodeWatchResourcesResponse* latest);

 private:
  std::string dir_;
  pluginregistration::PluginInfo info_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::ClientContext> watch_ctx_;
  std::thread watcher_;
  std::mutex mu_;
  std::condition_variable cv_;
  int health_messages_ = 0;
  v1::NodeWatchResourcesResponse latest_;
};

}  // namespace vgpu::testing

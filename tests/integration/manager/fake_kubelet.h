// A fake kubelet speaking the real protocols on real unix sockets, for the manager's
// integration tests (docs/reference/device-plugin-api.md §7.1):
//   * serves v1beta1.Registration on <dir>/kubelet.sock; on Register it dials the plugin's
//     socket, calls GetDevicePluginOptions and keeps a ListAndWatch stream open, as the kubelet's
//     device manager does (§2.1);
//   * admits containers like the kubelet: per resource, GetPreferredAllocation over the healthy
//     unassigned IDs, then one Allocate per (container, resource), then PreStartContainer;
//   * serves v1.PodResourcesLister/List on <dir>/pod-resources.sock from its assignments;
//   * restarts like the kubelet: removes every socket in the directory, re-creates kubelet.sock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace vgpu::testing {

using SteadyTime = std::chrono::steady_clock::time_point;

struct Admission {
  bool ok = false;
  std::string error;                                    // what `kubectl describe pod` would show
  std::map<std::string, std::vector<std::string>> ids;  // resource -> IDs
  std::map<std::string, v1beta1::ContainerAllocateResponse> responses;  // resource -> resp
};

class FakeKubelet {
 public:
  explicit FakeKubelet(std::string dir);
  ~FakeKubelet();

  void Start();  // registration + pod-resources servers
  // Kubelet restart: stop serving, delete every socket in the directory, serve again.
  SteadyTime Restart();
  void Stop();

  std::string KubeletSocket() const { return dir_ + "/kubelet.sock"; }
  std::string PodResourcesSocket() const { return dir_ + "/pod-resources.sock"; }

  // Waits until `resource` registered at or after `since`; returns when it did.
  bool WaitForRegistration(const std::string& resource, SteadyTime since,
                           std::chrono::milliseconds timeout, SteadyTime* when = nullptr);
  // Waits until ListAndWatch delivered a list for `resource` (after registration).
  bool WaitForDevices(const std::string& resource, std::chrono::milliseconds timeout);
  std::vector<v1beta1::Device> Devices(const std::string& resource);

  // The kubelet's admission of one container. `order` lists the resources in the order the
  // kubelet calls them (it iterates a Go map: random, §2.5).
  Admission Admit(const std::string& pod, const std::string& container,
                  const std::vector<std::pair<std::string, int>>& order);
  // Raw calls, as the kubelet would make them.
  grpc::Status Allocate(const std::string& resource, const std::vector<std::string>& ids,
                        v1beta1::AllocateResponse* out);
  grpc::Status PreStart(const std::string& resource, const std::vector<std::string>& ids);
  // pod-resources bookkeeping.
  void Assign(const std::string& pod, const std::string& container, const std::string& resource,
              const std::vector<std::string>& ids);
  void RemovePod(const std::string& pod);

 private:
  class RegistrationService;
  class PodResourcesService;
  struct Endpoint {
    std::string socket;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
    std::unique_ptr<grpc::ClientContext> watch_ctx;
    std::thread watcher;
    SteadyTime registered;
    std::vector<v1beta1::Device> devices;
    bool have_devices = false;
  };
  void OnRegister(const v1beta1::RegisterRequest& req);
  void StopEndpoints();
  v1beta1::DevicePlugin::Stub* StubFor(const std::string& resource);
  void StartServers();
  void StopServers();

  std::string dir_;
  std::unique_ptr<RegistrationService> registration_;
  std::unique_ptr<PodResourcesService> pod_resources_;
  std::unique_ptr<grpc::Server> registration_server_;
  std::unique_ptr<grpc::Server> pod_resources_server_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Endpoint>> endpoints_;  // by resource; guarded by mu_
  // pod -> container -> resource -> IDs; guarded by mu_
  std::map<std::string, std::map<std::string, std::map<std::string, std::vector<std::string>>>>
      assigned_;
  friend class PodResourcesService;
};

}  // namespace vgpu::testing

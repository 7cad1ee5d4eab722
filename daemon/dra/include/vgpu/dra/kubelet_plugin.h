// The DRA kubelet plugin's two unix sockets (docs/dra.md has the contract):
//
//   <kubelet-dir>/plugins_registry/<driver>-reg.sock
//       pluginregistration.Registration: GetInfo -> {type "DRAPlugin", name <driver>,
//       endpoint <service socket>, supported_versions ["v1.DRAPlugin", "v1beta1.DRAPlugin",
//       "v1.DRAResourceHealth"]}; NotifyRegistrationStatus is logged and counted.
//   <kubelet-dir>/plugins/<driver>/dra.sock
//       k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and ...v1beta1.DRAPlugin (the same calls
//       under two package names; the kubelet picks the newest it knows), and
//       v1.DRAResourceHealth/NodeWatchResources: every device of the node with its GPU's health
//       from daemon/health, sent again on each change and every 10 s (the kubelet marks a
//       device Unknown after health_check_timeout_seconds without news).
//
// The service socket is listening before the registration socket appears, because the kubelet
// dials the endpoint as soon as it has read GetInfo.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "vgpu/dra/claim_service.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/status.h"

namespace grpc {
class Server;
}

namespace vgpu::dra {

struct KubeletPluginOptions {
  std::string driver_name;
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string pool_name;  // the node's pool (device health identifiers)
  int64_t health_timeout_s = 30;
};

class KubeletPlugin {
 public:
  KubeletPlugin(KubeletPluginOptions options, ClaimService& claims,
                const manager::SlotManager& slots);
  ~KubeletPlugin();

  Status Serve();
  void Stop();

  std::string RegistrationSocket() const;
  std::string ServiceSocket() const;
  // NotifyRegistrationStatus calls that said registered / not.
  uint64_t registrations() const { return registered_; }

 private:
  KubeletPluginOptions options_;
  ClaimService& claims_;
  const manager::SlotManager& slots_;
  std::atomic<uint64_t> registered_{0};
  std::atomic<bool> stopping_{false};
  struct Services;
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> service_server_;
  std::unique_ptr<grpc::Server> registration_server_;
};

}  // namespace vgpu::dra

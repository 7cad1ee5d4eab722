// vgpu-manager --kubelet-api=dra: everything the DRA kubelet plugin adds on top of the slot
// manager, built and started in one call from main.cc's services step. It owns the API client
// (in-cluster service account or --kubeconfig), the claim preparer and service, the slice
// publisher and the two kubelet sockets.
//
// Why a mode of vgpu-manager and not a second binary: the plugin needs every start-up step the
// device plugin has (volumes, enforcement backend, topology, checkpoint, XID health, metrics,
// control API), on the same slot manager; only the kubelet-facing step differs. One binary
// keeps one image, one flag set and one checkpoint format, and the mode flag makes it plain
// that a node runs one of the two: both at once would let the device plugin and the DRA
// scheduler book the same GPU memory twice, since neither sees the other's bookings.
#pragma once

#include <memory>
#include <string>

#include "vgpu/config/config.h"
#include "vgpu/dra/claim_preparer.h"
#include "vgpu/dra/claim_service.h"
#include "vgpu/dra/kube_client.h"
#include "vgpu/dra/kubelet_plugin.h"
#include "vgpu/dra/slice_publisher.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/status.h"

namespace vgpu::dra {

class DraNode {
 public:
  DraNode(const config::Config& config, manager::SlotManager& slots);
  ~DraNode();

  // API endpoint, node name, preparer, publisher (first sync in the background), sockets.
  Status Start();
  void Stop();

 private:
  const config::Config& config_;
  manager::SlotManager& slots_;
  std::unique_ptr<KubeApi> api_;
  std::unique_ptr<ClaimPreparer> preparer_;
  std::unique_ptr<ClaimService> claims_;
  std::unique_ptr<SlicePublisher> publisher_;
  std::unique_ptr<KubeletPlugin> plugin_;
};

// The node's name: --hostname-override, else the host name.
std::string NodeName(const config::Config& config);

}  // namespace vgpu::dra

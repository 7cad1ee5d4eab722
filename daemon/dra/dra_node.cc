#include "vgpu/dra/dra_node.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/manager/log.h"

namespace vgpu::dra {

std::string NodeName(const config::Config& config) {
  if (!config.hostname_override.empty()) {
    return config.hostname_override;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

DraNode::DraNode(const config::Config& config, manager::SlotManager& slots)
    : config_(config), slots_(slots) {}

DraNode::~DraNode() { Stop(); }

Status DraNode::Start() {
  Result<labels::KubeEndpoint> endpoint =
      config_.incluster_mode        ? labels::InClusterEndpoint()
      : !config_.kubeconfig.empty() ? labels::KubeconfigEndpoint(config_.kubeconfig)
                                    : Result<labels::KubeEndpoint>(FailedPreconditionError(
                                          "a DRA plugin reads claims and writes ResourceSlices: "
                                          "give --kubeconfig or --incluster-mode"));
  if (!endpoint.ok()) {
    return endpoint.status();
  }
  api_ = std::make_unique<CurlKubeApi>(*endpoint);
  std::string node = NodeName(config_);
  std::string node_uid;
  // The Node's uid makes it the slices' owner, so they go when the Node object does. Not
  // fatal: without it the slices are still correct, only not garbage-collected with the node.
  if (auto r = api_->Call("GET", "/api/v1/nodes/" + node); r.ok() && r->status == 200) {
    auto doc = nlohmann::json::parse(r->body, nullptr, false);
    if (!doc.is_discarded() && doc.contains("metadata")) {
      node_uid = doc["metadata"].value("uid", "");
    }
  } else {
    manager::LogWarn("event=dra_node_lookup_failed node=" + node + " error=\"" +
                     (r.ok() ? ApiMessage(*r) : r.status().ToString()) + "\"");
  }
  PreparerOptions po;
  if (!config_.cdi_kind.empty()) {
    po.cdi_kind = config_.cdi_kind;
  }
  po.cdi_spec_dir = config_.cdi_spec_dir;
  preparer_ = std::make_unique<ClaimPreparer>(slots_, po);
  if (Status s = preparer_->RewriteSpecs(); !s.ok()) {
    manager::LogWarn("event=dra_cdi_specs_not_rewritten error=\"" + s.ToString() + "\"");
  }
  PlanOptions plan;
  plan.driver_name = config_.dra_driver_name;
  plan.pool_name = node;
  plan.gpus = &slots_.gpus();
  plan.default_managed_policy = config_.managed_policy == "refuse"
                                    ? slots::ManagedPolicy::kRefuse
                                    : slots::ManagedPolicy::kAllowUncounted;
  claims_ = std::make_unique<ClaimService>(*api_, *preparer_, plan);
  PublisherOptions pub;
  pub.slices = {config_.dra_driver_name, node, node_uid, config_.memory_unit_bytes};
  if (const char* resync = std::getenv("VGPU_DRA_RESYNC_MS"); resync != nullptr) {
    pub.resync = std::chrono::milliseconds(std::atoi(resync));  // tests: see a wipe sooner
  }
  publisher_ = std::make_unique<SlicePublisher>(*api_, slots_, pub);
  publisher_->Start();
  KubeletPluginOptions ko;
  ko.driver_name = config_.dra_driver_name;
  ko.kubelet_dir = config_.kubelet_dir;
  ko.pool_name = node;
  plugin_ = std::make_unique<KubeletPlugin>(ko, *claims_, slots_);
  VGPU_RETURN_IF_ERROR(plugin_->Serve());
  manager::LogInfo("event=startup step=services kubelet_api=dra driver=" + config_.dra_driver_name +
                   " node=" + node + " registration_socket=" + plugin_->RegistrationSocket() +
                   " service_socket=" + plugin_->ServiceSocket() + " cdi_kind=" + po.cdi_kind);
  return OkStatus();
}

void DraNode::Stop() {
  if (plugin_) {
    plugin_->Stop();
  }
  if (publisher_) {
    publisher_->Stop();
  }
}

}  // namespace vgpu::dra

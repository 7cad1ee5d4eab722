#include "vgpu/dra/kubelet_plugin.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "drahealth/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "vgpu/dra/device_model.h"
#include "vgpu/manager/log.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr std::chrono::seconds kHealthResend{10};

template <typename Claims>
std::vector<ClaimRef> Refs(const Claims& claims) {
  std::vector<ClaimRef> out;
  for (const auto& c : claims) {
    out.push_back({c.namespace_(), c.name(), c.uid()});
  }
  return out;
}

// NodePrepareResources / NodeUnprepareResources for one proto package (v1 or v1beta1: the
// messages are the same, only their C++ namespace differs).
template <typename Api>
class DraPluginService final : public Api::DRAPlugin::Service {
 public:
  explicit DraPluginService(ClaimService& claims) : claims_(claims) {}

  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const typename Api::NodePrepareResourcesRequest* req,
                                    typename Api::NodePrepareResourcesResponse* resp) override {
    for (const ClaimAnswer& a : claims_.Prepare(Refs(req->claims()))) {
      auto& entry = (*resp->mutable_claims())[a.uid];
      entry.set_error(a.error);
      for (const PreparedDevice& d : a.devices) {
        auto* dev = entry.add_devices();
        dev->add_request_names(d.planned.request);
        dev->set_pool_name(d.planned.pool);
        dev->set_device_name(d.planned.device);
        dev->add_cdi_device_ids(d.cdi_id);
        if (d.planned.share_id) {
          dev->set_share_id(*d.planned.share_id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const typename Api::NodeUnprepareResourcesRequest* req,
                                      typename Api::NodeUnprepareResourcesResponse* resp) override {
    for (const ClaimAnswer& a : claims_.Unprepare(Refs(req->claims()))) {
      (*resp->mutable_claims())[a.uid].set_error(a.error);
    }
    return grpc::Status::OK;
  }

 private:
  ClaimService& claims_;
};

struct V1 {
  using DRAPlugin = drav1::DRAPlugin;
  using NodePrepareResourcesRequest = drav1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drav1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = drav1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = drav1::NodeUnprepareResourcesResponse;
};
struct V1beta1 {
  using DRAPlugin = drav1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = drav1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = drav1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = drav1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = drav1beta1::NodeUnprepareResourcesResponse;
};

class HealthService final : public v1::DRAResourceHealth::Service {
 public:
  HealthService(const KubeletPluginOptions& options, const manager::SlotManager& slots,
                const std::atomic<bool>& stopping)
      : options_(options), slots_(slots), stopping_(stopping) {}

  grpc::Status NodeWatchResources(
      grpc::ServerContext* ctx, const v1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<v1::NodeWatchResourcesResponse>* writer) override {
    uint64_t seen = 0;
    auto next = std::chrono::steady_clock::now();
    while (!stopping_ && !ctx->IsCancelled()) {
      uint64_t gen = slots_.WaitForChange(seen, std::chrono::milliseconds(200));
      if (gen == seen && std::chrono::steady_clock::now() < next) {
        continue;
      }
      seen = gen;
      next = std::chrono::steady_clock::now() + kHealthResend;
      if (!writer->Write(Snapshot())) {
        break;
      }
    }
    return grpc::Status::OK;
  }

 private:
  v1::NodeWatchResourcesResponse Snapshot() const {
    v1::NodeWatchResourcesResponse resp;
    auto health = slots_.GpuHealth();
    int64_t now = static_cast<int64_t>(std::time(nullptr));
    for (const auto& g : slots_.gpus()) {
      bool healthy = health.count(g.index) == 0 || health.at(g.index);
      for (const std::string& name : {ShareDeviceName(g.index), WholeDeviceName(g.index)}) {
        auto* d = resp.add_devices();
        d->mutable_device()->set_pool_name(options_.pool_name);
        d->mutable_device()->set_device_name(name);
        d->set_health(healthy ? v1::HEALTHY : v1::UNHEALTHY);
        d->set_last_updated_time(now);
        d->set_health_check_timeout_seconds(options_.health_timeout_s);
        if (!healthy) {
          d->set_message("critical XID on " + g.uuid + " (daemon/health)");
        }
      }
    }
    return resp;
  }

  const KubeletPluginOptions& options_;
  const manager::SlotManager& slots_;
  const std::atomic<bool>& stopping_;
};

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(const KubeletPluginOptions& options, std::string endpoint,
                      std::atomic<uint64_t>& registered)
      : options_(options), endpoint_(std::move(endpoint)), registered_(registered) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(options_.driver_name);
    info->set_endpoint(endpoint_);
    // "<last package component>.<Service>", newest first.
    info->add_supported_versions("v1.DRAPlugin");
    info->add_supported_versions("v1beta1.DRAPlugin");
    info->add_supported_versions("v1.DRAResourceHealth");
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* status,
                                        pluginregistration::RegistrationStatusResponse*) override {
    if (status->plugin_registered()) {
      ++registered_;
      manager::LogInfo("event=dra_registered driver=" + options_.driver_name +
                       " endpoint=" + endpoint_);
    } else {
      manager::LogError("event=dra_registration_refused driver=" + options_.driver_name +
                        " error=\"" + status->error() + "\"");
    }
    return grpc::Status::OK;
  }

 private:
  const KubeletPluginOptions& options_;
  std::string endpoint_;
  std::atomic<uint64_t>& registered_;
};

Result<std::unique_ptr<grpc::Server>> Listen(const std::string& path,
                                             std::vector<grpc::Service*> services) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) {
    return InternalError("creating " + fs::path(path).parent_path().string() + ": " + ec.message());
  }
  ::unlink(path.c_str());  // a socket left by an earlier run
  grpc::ServerBuilder b;
  b.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  for (grpc::Service* s : services) {
    b.RegisterService(s);
  }
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server) {
    return UnavailableError("cannot listen on " + path);
  }
  return server;
}

}  // namespace

struct KubeletPlugin::Services {
  Services(const KubeletPluginOptions& o, ClaimService& claims, const manager::SlotManager& slots,
           const std::atomic<bool>& stopping, std::string endpoint,
           std::atomic<uint64_t>& registered)
      : v1(claims),
        v1beta1(claims),
        health(o, slots, stopping),
        registration(o, std::move(endpoint), registered) {}
  DraPluginService<V1> v1;
  DraPluginService<V1beta1> v1beta1;
  HealthService health;
  RegistrationService registration;
};

KubeletPlugin::KubeletPlugin(KubeletPluginOptions options, ClaimService& claims,
                             const manager::SlotManager& slots)
    : options_(std::move(options)), claims_(claims), slots_(slots) {}

KubeletPlugin::~KubeletPlugin() { Stop(); }

std::string KubeletPlugin::RegistrationSocket() const {
  return options_.kubelet_dir + "/plugins_registry/" + options_.driver_name + "-reg.sock";
}

std::string KubeletPlugin::ServiceSocket() const {
  return options_.kubelet_dir + "/plugins/" + options_.driver_name + "/dra.sock";
}

Status KubeletPlugin::Serve() {
  stopping_ = false;
  services_ = std::make_unique<Services>(options_, claims_, slots_, stopping_, ServiceSocket(),
                                         registered_);
  auto service = Listen(ServiceSocket(), {&services_->v1, &services_->v1beta1, &services_->health});
  if (!service.ok()) {
    return service.status();
  }
  service_server_ = std::move(*service);
  auto reg = Listen(RegistrationSocket(), {&services_->registration});
  if (!reg.ok()) {
    return reg.status();
  }
  registration_server_ = std::move(*reg);
  return OkStatus();
}

void KubeletPlugin::Stop() {
  stopping_ = true;
  // Registration first: the kubelet stops using a plugin whose registration socket is gone.
  for (auto* s : {&registration_server_, &service_server_}) {
    if (*s) {
      (*s)->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      s->reset();
    }
  }
  std::error_code ec;
  fs::remove(RegistrationSocket(), ec);
  fs::remove(ServiceSocket(), ec);
}

}  // namespace vgpu::dra

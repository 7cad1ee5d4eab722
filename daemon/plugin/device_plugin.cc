#include "vgpu/plugin/device_plugin.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <mutex>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "vgpu/manager/log.h"

namespace vgpu::plugin {

int ToGrpcCode(StatusCode code) { return static_cast<int>(code); }

namespace {

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) {
    return grpc::Status::OK;
  }
  return grpc::Status(static_cast<grpc::StatusCode>(ToGrpcCode(s.code())), s.message());
}

v1beta1::DevicePluginOptions Options() {
  v1beta1::DevicePluginOptions o;
  o.set_pre_start_required(true);
  o.set_get_preferred_allocation_available(true);
  return o;
}

std::string FirstIds(const google::protobuf::RepeatedPtrField<std::string>& ids) {
  std::string out;
  for (int i = 0; i < ids.size() && i < 3; ++i) {
    out += (i ? "," : "") + ids[i];
  }
  if (ids.size() > 3) {
    out += ",...";
  }
  return out;
}

}  // namespace

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(const PluginOptions& options, manager::SlotManager& slots)
      : options_(options), slots_(slots) {}

  void Shutdown() { stopping_ = true; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    *out = Options();
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    // Always the full list; re-sent whenever health or availability changes (§2.3). The
    // stream stays open until the kubelet goes away or we stop.
    uint64_t seen = 0;
    std::string last;
    while (!stopping_ && !ctx->IsCancelled()) {
      uint64_t gen = slots_.Generation();
      if (gen != seen) {
        seen = gen;
        v1beta1::ListAndWatchResponse resp;
        int unhealthy = 0;
        for (const auto& d : slots_.Devices(options_.kind)) {
          auto* dev = resp.add_devices();
          dev->set_id(d.id);
          dev->set_health(d.healthy ? "Healthy" : "Unhealthy");
          unhealthy += d.healthy ? 0 : 1;
          if (d.numa >= 0) {
            dev->mutable_topology()->add_nodes()->set_id(d.numa);
          }
        }
        std::string bytes = resp.SerializeAsString();
        if (bytes != last) {
          if (!writer->Write(resp)) {
            return grpc::Status::OK;
          }
          last = std::move(bytes);
          manager::LogInfo("event=list_and_watch resource=" + options_.resource +
                           " devices=" + std::to_string(resp.devices_size()) +
                           " unhealthy=" + std::to_string(unhealthy));
        }
      }
      slots_.WaitForChange(seen, std::chrono::milliseconds(200));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* resp) override {
    for (const auto& cr : req->container_requests()) {
      std::vector<std::string> avail(cr.available_deviceids().begin(),
                                     cr.available_deviceids().end());
      std::vector<std::string> must(cr.must_include_deviceids().begin(),
                                    cr.must_include_deviceids().end());
      auto picked = slots_.Preferred(options_.kind, avail, must, cr.allocation_size());
      if (!picked.ok()) {
        return ToGrpc(picked.status());
      }
      auto* out = resp->add_container_responses();
      for (const auto& id : *picked) {
        out->add_deviceids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* resp) override {
    if (req->container_requests_size() == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "AllocateRequest has no containers");
    }
    for (const auto& cr : req->container_requests()) {
      std::vector<std::string> ids(cr.devices_ids().begin(), cr.devices_ids().end());
      auto grant = slots_.Allocate(options_.kind, ids);
      if (!grant.ok()) {
        manager::LogWarn("event=allocate_refused resource=" + options_.resource + " ids=" +
                         FirstIds(cr.devices_ids()) + " count=" + std::to_string(ids.size()) +
                         " error=\"" + grant.status().message() + "\"");
        return grpc::Status(static_cast<grpc::StatusCode>(ToGrpcCode(grant.status().code())),
                            options_.resource + ": " + grant.status().message());
      }
      auto* out = resp->add_container_responses();
      for (const auto& [k, v] : grant->edits.envs) {
        (*out->mutable_envs())[k] = v;
      }
      for (const auto& m : grant->edits.mounts) {
        auto* mount = out->add_mounts();
        mount->set_host_path(m.host_path);
        mount->set_container_path(m.container_path);
        mount->set_read_only(m.read_only);
      }
      for (const auto& d : grant->edits.devices) {
        auto* spec = out->add_devices();
        spec->set_host_path(d.host_path);
        spec->set_container_path(d.container_path);
        spec->set_permissions(d.permissions);
      }
      for (const auto& [k, v] : grant->annotations) {
        (*out->mutable_annotations())[k] = v;
      }
      for (const auto& name : grant->cdi_devices) {
        out->add_cdi_devices()->set_name(name);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest* req,
                                 v1beta1::PreStartContainerResponse*) override {
    std::vector<std::string> ids(req->devices_ids().begin(), req->devices_ids().end());
    Status s = slots_.PreStart(options_.kind, ids);
    if (!s.ok()) {
      manager::LogWarn("event=prestart_refused resource=" + options_.resource +
                       " ids=" + FirstIds(req->devices_ids()) + " error=\"" + s.message() + "\"");
      return grpc::Status(static_cast<grpc::StatusCode>(ToGrpcCode(s.code())),
                          options_.resource + ": " + s.message());
    }
    return grpc::Status::OK;
  }

 private:
  PluginOptions options_;
  manager::SlotManager& slots_;
  std::atomic<bool> stopping_{false};
};

PluginServer::PluginServer(PluginOptions options, manager::SlotManager& slots)
    : options_(std::move(options)), slots_(slots) {}

PluginServer::~PluginServer() { Stop(); }

std::string PluginServer::SocketPath() const {
  return options_.socket_dir + "/" + options_.endpoint;
}

Status PluginServer::Serve() {
  Stop();
  std::string path = SocketPath();
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("remove stale socket " + path, errno);
  }
  service_ = std::make_unique<DevicePluginService>(options_, slots_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    service_.reset();
    return UnavailableError("cannot listen on " + path +
                            " (is --device-plugin-path writable and mounted?)");
  }
  // Never tell the kubelet about a socket that does not answer.
  auto channel = grpc::CreateChannel("unix://" + path, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ctx.set_wait_for_ready(true);
  v1beta1::Empty empty;
  v1beta1::DevicePluginOptions opts;
  grpc::Status s = stub->GetDevicePluginOptions(&ctx, empty, &opts);
  if (!s.ok()) {
    Stop();
    return UnavailableError("self-dial of " + path + " failed: " + s.error_message());
  }
  return OkStatus();
}

Status PluginServer::Register(const std::string& kubelet_socket,
                              std::chrono::milliseconds timeout) const {
  auto channel =
      grpc::CreateChannel("unix://" + kubelet_socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  ctx.set_wait_for_ready(true);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(options_.endpoint);
  req.set_resource_name(options_.resource);
  *req.mutable_options() = Options();
  v1beta1::Empty empty;
  grpc::Status s = stub->Register(&ctx, req, &empty);
  if (!s.ok()) {
    return UnavailableError("registering " + options_.resource + " with the kubelet at " +
                            kubelet_socket + ": " + s.error_message());
  }
  return OkStatus();
}

void PluginServer::Stop() {
  if (service_ != nullptr) {
    service_->Shutdown();  // ends ListAndWatch loops so Shutdown does not wait on them
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
    std::error_code ec;
    std::filesystem::remove(SocketPath(), ec);
  }
  service_.reset();
}

}  // namespace vgpu::plugin

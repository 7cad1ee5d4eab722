#include "fake_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace vgpu::testing {

namespace fs = std::filesystem;

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet& k) : k_(k) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    // The kubelet's checks (§2.1 step 3).
    if (req->version() != "v1beta1") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "requested API version " + req->version() + " is not supported");
    }
    const std::string& name = req->resource_name();
    if (name.find('/') == std::string::npos || name.starts_with("kubernetes.io/")) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the ResourceName is invalid");
    }
    k_.OnRegister(*req);
    return grpc::Status::OK;
  }

 private:
  FakeKubelet& k_;
};

class FakeKubelet::PodResourcesService final : public v1::PodResourcesLister::Service {
 public:
  explicit PodResourcesService(FakeKubelet& k) : k_(k) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    std::lock_guard lock(k_.mu_);
    for (const auto& [pod, containers] : k_.assigned_) {
      auto* p = resp->add_pod_resources();
      p->set_name(pod);
      p->set_namespace_("default");
      for (const auto& [ctr, resources] : containers) {
        auto* c = p->add_containers();
        c->set_name(ctr);
        for (const auto& [res, ids] : resources) {
          auto* d = c->add_devices();
          d->set_resource_name(res);
          for (const auto& id : ids) {
            d->add_device_ids(id);
          }
        }
      }
    }
    return grpc::Status::OK;
  }

 private:
  FakeKubelet& k_;
};

FakeKubelet::FakeKubelet(std::string dir) : dir_(std::move(dir)) {}

FakeKubelet::~FakeKubelet() { Stop(); }

void FakeKubelet::StartServers() {
  registration_ = std::make_unique<RegistrationService>(*this);
  pod_resources_ = std::make_unique<PodResourcesService>(*this);
  grpc::ServerBuilder rb;
  rb.AddListeningPort("unix://" + KubeletSocket(), grpc::InsecureServerCredentials());
  rb.RegisterService(registration_.get());
  registration_server_ = rb.BuildAndStart();
  grpc::ServerBuilder pb;
  pb.AddListeningPort("unix://" + PodResourcesSocket(), grpc::InsecureServerCredentials());
  pb.RegisterService(pod_resources_.get());
  pod_resources_server_ = pb.BuildAndStart();
}

void FakeKubelet::StopServers() {
  for (auto* s : {&registration_server_, &pod_resources_server_}) {
    if (*s) {
      (*s)->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
      (*s)->Wait();
      s->reset();
    }
  }
}

void FakeKubelet::Start() { StartServers(); }

SteadyTime FakeKubelet::Restart() {
  StopServers();
  StopEndpoints();
  // CleanupPluginDirectory: every socket in the directory goes (§2.2).
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.is_socket()) {
      fs::remove(e.path(), ec);
    }
  }
  SteadyTime at = std::chrono::steady_clock::now();
  StartServers();
  return at;
}

void FakeKubelet::StopEndpoints() {
  std::map<std::string, std::unique_ptr<Endpoint>> old;
  {
    std::lock_guard lock(mu_);
    old.swap(endpoints_);
  }
  for (auto& [res, ep] : old) {
    ep->watch_ctx->TryCancel();
    if (ep->watcher.joinable()) {
      ep->watcher.join();
    }
  }
}

void FakeKubelet::Stop() {
  StopServers();
  StopEndpoints();
}

void FakeKubelet::OnRegister(const v1beta1::RegisterRequest& req) {
  auto ep = std::make_unique<Endpoint>();
  ep->socket = dir_ + "/" + req.endpoint();
  ep->channel = grpc::CreateChannel("unix://" + ep->socket, grpc::InsecureChannelCredentials());
  ep->stub = v1beta1::DevicePlugin::NewStub(ep->channel);
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1beta1::Empty empty;
    v1beta1::DevicePluginOptions opts;
    grpc::Status s = ep->stub->GetDevicePluginOptions(&ctx, empty, &opts);
    if (!s.ok() || !opts.pre_start_required() || !opts.get_preferred_allocation_available()) {
      return;  // not registered: the test waiting for it fails
    }
  }
  ep->watch_ctx = std::make_unique<grpc::ClientContext>();
  ep->registered = std::chrono::steady_clock::now();
  Endpoint* raw = ep.get();
  std::string resource = req.resource_name();
  std::unique_ptr<Endpoint> replaced;
  {
    std::lock_guard lock(mu_);
    replaced = std::move(endpoints_[resource]);
    endpoints_[resource] = std::move(ep);
  }
  if (replaced) {
    replaced->watch_ctx->TryCancel();
    if (replaced->watcher.joinable()) {
      replaced->watcher.join();
    }
  }
  raw->watcher = std::thread([this, raw] {
    v1beta1::Empty empty;
    auto reader = raw->stub->ListAndWatch(raw->watch_ctx.get(), empty);
    v1beta1::ListAndWatchResponse resp;
    while (reader->Read(&resp)) {
      std::lock_guard lock(mu_);
      raw->devices.assign(resp.devices().begin(), resp.devices().end());
      raw->have_devices = true;
      cv_.notify_all();
    }
    (void)reader->Finish();
  });
  cv_.notify_all();
}

bool FakeKubelet::WaitForRegistration(const std::string& resource, SteadyTime since,
                                      std::chrono::milliseconds timeout, SteadyTime* when) {
  std::unique_lock lock(mu_);
  bool ok = cv_.wait_for(lock, timeout, [&] {
    auto it = endpoints_.find(resource);
    return it != endpoints_.end() && it->second->registered >= since;
  });
  if (ok && when != nullptr) {
    *when = endpoints_[resource]->registered;
  }
  return ok;
}

bool FakeKubelet::WaitForDevices(const std::string& resource, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = endpoints_.find(resource);
    return it != endpoints_.end() && it->second->have_devices;
  });
}

std::vector<v1beta1::Device> FakeKubelet::Devices(const std::string& resource) {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? std::vector<v1beta1::Device>{} : it->second->devices;
}

v1beta1::DevicePlugin::Stub* FakeKubelet::StubFor(const std::string& resource) {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? nullptr : it->second->stub.get();
}

grpc::Status FakeKubelet::Allocate(const std::string& resource, const std::vector<std::string>& ids,
                                   v1beta1::AllocateResponse* out) {
  auto* stub = StubFor(resource);
  if (stub == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "cannot allocate unregistered device " + resource);
  }
  grpc::ClientContext ctx;  // the kubelet sets no deadline on Allocate (§2.5); tests need one
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1beta1::AllocateRequest req;
  auto* cr = req.add_container_requests();
  for (const auto& id : ids) {
    cr->add_devices_ids(id);
  }
  return stub->Allocate(&ctx, req, out);
}

grpc::Status FakeKubelet::PreStart(const std::string& resource,
                                   const std::vector<std::string>& ids) {
  auto* stub = StubFor(resource);
  if (stub == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "unregistered " + resource);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1beta1::PreStartContainerRequest req;
  for (const auto& id : ids) {
    req.add_devices_ids(id);
  }
  v1beta1::PreStartContainerResponse resp;
  return stub->PreStartContainer(&ctx, req, &resp);
}

void FakeKubelet::Assign(const std::string& pod, const std::string& container,
                         const std::string& resource, const std::vector<std::string>& ids) {
  std::lock_guard lock(mu_);
  assigned_[pod][container][resource] = ids;
}

void FakeKubelet::RemovePod(const std::string& pod) {
  std::lock_guard lock(mu_);
  assigned_.erase(pod);
}

Admission FakeKubelet::Admit(const std::string& pod, const std::string& container,
                             const std::vector<std::pair<std::string, int>>& order) {
  Admission out;
  for (const auto& [resource, count] : order) {
    std::set<std::string> taken;
    {
      std::lock_guard lock(mu_);
      for (const auto& [p, cs] : assigned_) {
        for (const auto& [c, rs] : cs) {
          if (auto it = rs.find(resource); it != rs.end()) {
            taken.insert(it->second.begin(), it->second.end());
          }
        }
      }
    }
    std::vector<std::string> available;
    for (const auto& d : Devices(resource)) {
      if (d.health() == "Healthy" && taken.count(d.id()) == 0) {
        available.push_back(d.id());
      }
    }
    if (static_cast<int>(available.size()) < count) {
      out.error = "Insufficient " + resource;
      return out;
    }
    std::vector<std::string> chosen;
    if (auto* stub = StubFor(resource)) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      v1beta1::PreferredAllocationRequest req;
      auto* cr = req.add_container_requests();
      for (const auto& id : available) {
        cr->add_available_deviceids(id);
      }
      cr->set_allocation_size(count);
      v1beta1::PreferredAllocationResponse resp;
      if (stub->GetPreferredAllocation(&ctx, req, &resp).ok() &&
          resp.container_responses_size() == 1) {
        std::set<std::string> avail(available.begin(), available.end());
        for (const auto& id : resp.container_responses(0).deviceids()) {
          if (avail.count(id) != 0 && static_cast<int>(chosen.size()) < count) {
            chosen.push_back(id);
          }
        }
      }
    }
    for (const auto& id : available) {  // the kubelet fills up from the rest
      if (static_cast<int>(chosen.size()) >= count) {
        break;
      }
      if (std::find(chosen.begin(), chosen.end(), id) == chosen.end()) {
        chosen.push_back(id);
      }
    }
    v1beta1::AllocateResponse resp;
    grpc::Status s = Allocate(resource, chosen, &resp);
    if (!s.ok()) {
      out.error = "UnexpectedAdmissionError: Allocate failed due to " + s.error_message();
      return out;
    }
    if (resp.container_responses_size() == 0) {
      out.error = "no containers return in allocation response";
      return out;
    }
    Assign(pod, container, resource, chosen);
    out.ids[resource] = chosen;
    out.responses[resource] = resp.container_responses(0);
  }
  for (const auto& [resource, count] : order) {
    grpc::Status s = PreStart(resource, out.ids[resource]);
    if (!s.ok()) {
      out.error = "device plugin PreStartContainer rpc failed with err: " + s.error_message();
      return out;
    }
  }
  out.ok = true;
  return out;
}

}  // namespace vgpu::testing

#include "fake_dra_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>

namespace vgpu::testing {

namespace {

std::shared_ptr<grpc::Channel> Dial(const std::string& path) {
  return grpc::CreateChannel("unix://" + path, grpc::InsecureChannelCredentials());
}

template <typename Req>
void Fill(Req& req, const std::vector<ClaimId>& claims) {
  for (const auto& c : claims) {
    auto* claim = req.add_claims();
    claim->set_namespace_(c.ns);
    claim->set_name(c.name);
    claim->set_uid(c.uid);
  }
}

std::unique_ptr<grpc::ClientContext> Deadline(std::chrono::milliseconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

}  // namespace

FakeDraKubelet::~FakeDraKubelet() {
  if (watch_ctx_) {
    watch_ctx_->TryCancel();
  }
  if (watcher_.joinable()) {
    watcher_.join();
  }
}

bool FakeDraKubelet::Register(const std::string& driver, std::chrono::milliseconds timeout) {
  const std::string reg = dir_ + "/plugins_registry/" + driver + "-reg.sock";
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(reg)) {
      auto stub = pluginregistration::Registration::NewStub(Dial(reg));
      pluginregistration::InfoRequest req;
      auto ctx = Deadline(std::chrono::seconds(2));
      if (stub->GetInfo(ctx.get(), req, &info_).ok()) {
        // The kubelet's checks: the type, and a service version it knows.
        const auto& v = info_.supported_versions();
        bool known = std::find(v.begin(), v.end(), "v1.DRAPlugin") != v.end() ||
                     std::find(v.begin(), v.end(), "v1beta1.DRAPlugin") != v.end();
        pluginregistration::RegistrationStatus st;
        st.set_plugin_registered(info_.type() == "DRAPlugin" && known);
        if (!st.plugin_registered()) {
          st.set_error("not a DRA plugin of a known version");
        }
        pluginregistration::RegistrationStatusResponse ignored;
        auto ctx2 = Deadline(std::chrono::seconds(2));
        stub->NotifyRegistrationStatus(ctx2.get(), st, &ignored);
        channel_ = Dial(info_.endpoint());
        return st.plugin_registered();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

grpc::Status FakeDraKubelet::Prepare(const std::vector<ClaimId>& claims,
                                     drav1::NodePrepareResourcesResponse* out,
                                     std::chrono::milliseconds timeout) {
  drav1::NodePrepareResourcesRequest req;
  Fill(req, claims);
  auto ctx = Deadline(timeout);
  return drav1::DRAPlugin::NewStub(channel_)->NodePrepareResources(ctx.get(), req, out);
}

grpc::Status FakeDraKubelet::PrepareV1beta1(const std::vector<ClaimId>& claims,
                                            drav1beta1::NodePrepareResourcesResponse* out) {
  drav1beta1::NodePrepareResourcesRequest req;
  Fill(req, claims);
  auto ctx = Deadline(std::chrono::seconds(10));
  return drav1beta1::DRAPlugin::NewStub(channel_)->NodePrepareResources(ctx.get(), req, out);
}

grpc::Status FakeDraKubelet::Unprepare(const std::vector<ClaimId>& claims,
                                       drav1::NodeUnprepareResourcesResponse* out) {
  drav1::NodeUnprepareResourcesRequest req;
  Fill(req, claims);
  auto ctx = Deadline(std::chrono::seconds(10));
  return drav1::DRAPlugin::NewStub(channel_)->NodeUnprepareResources(ctx.get(), req, out);
}

void FakeDraKubelet::WatchHealth() {
  watch_ctx_ = std::make_unique<grpc::ClientContext>();
  watcher_ = std::thread([this, channel = channel_] {
    auto stub = v1::DRAResourceHealth::NewStub(channel);
    v1::NodeWatchResourcesRequest req;
    auto reader = stub->NodeWatchResources(watch_ctx_.get(), req);
    v1::NodeWatchResourcesResponse msg;
    while (reader->Read(&msg)) {
      std::lock_guard lock(mu_);
      latest_ = msg;
      ++health_messages_;
      cv_.notify_all();
    }
    reader->Finish();
  });
}

bool FakeDraKubelet::WaitForHealth(int n, std::chrono::milliseconds timeout,
                                   v1::NodeWatchResourcesResponse* latest) {
  std::unique_lock lock(mu_);
  bool ok = cv_.wait_for(lock, timeout, [&] { return health_messages_ >= n; });
  *latest = latest_;
  return ok;
}

}  // namespace vgpu::testing

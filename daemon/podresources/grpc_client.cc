#include <grpcpp/grpcpp.h>

#include <mutex>

#include "podresources/v1/api.grpc.pb.h"
#include "vgpu/podresources/pod_resources.h"

namespace vgpu::podresources {
namespace {

class GrpcPodResourcesClient final : public PodResourcesSource {
 public:
  GrpcPodResourcesClient(std::string socket_path, std::chrono::milliseconds timeout)
      : socket_path_(std::move(socket_path)), timeout_(timeout) {}

  Result<std::vector<ContainerAssignment>> List() override {
    std::shared_ptr<grpc::Channel> channel;
    {
      std::lock_guard lock(mu_);
      if (channel_ == nullptr || channel_->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE ||
          channel_->GetState(false) == GRPC_CHANNEL_SHUTDOWN) {
        channel_ =
            grpc::CreateChannel("unix://" + socket_path_, grpc::InsecureChannelCredentials());
      }
      channel = channel_;
    }
    auto stub = v1::PodResourcesLister::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    v1::ListPodResourcesRequest req;
    v1::ListPodResourcesResponse resp;
    grpc::Status s = stub->List(&ctx, req, &resp);
    if (!s.ok()) {
      return UnavailableError("pod-resources List on " + socket_path_ + ": " + s.error_message() +
                              " (is /var/lib/kubelet/pod-resources mounted into the manager?)");
    }
    std::vector<ContainerAssignment> out;
    for (const auto& pod : resp.pod_resources()) {
      for (const auto& ctr : pod.containers()) {
        ContainerAssignment a{pod.namespace_(), pod.name(), ctr.name(), {}};
        for (const auto& dev : ctr.devices()) {
          auto& ids = a.device_ids[dev.resource_name()];
          ids.insert(ids.end(), dev.device_ids().begin(), dev.device_ids().end());
        }
        out.push_back(std::move(a));
      }
    }
    return out;
  }

 private:
  std::string socket_path_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::shared_ptr<grpc::Channel> channel_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<PodResourcesSource> MakeGrpcPodResourcesClient(std::string socket_path,
                                                               std::chrono::milliseconds timeout) {
  return std::make_unique<GrpcPodResourcesClient>(std::move(socket_path), timeout);
}

}  // namespace vgpu::podresources

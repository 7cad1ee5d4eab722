#include "vgpu/labels/pod_reader.h"

#include <nlohmann/json.hpp>

#include "vgpu/labels/kube_http.h"

namespace vgpu::labels {
namespace {

class KubePodReader final : public podresources::PodAnnotationSource {
 public:
  KubePodReader(KubeEndpoint endpoint, std::chrono::milliseconds timeout)
      : endpoint_(std::move(endpoint)), timeout_(timeout) {}

  Result<podresources::Annotations> Get(const std::string& ns, const std::string& pod) override {
    KubeRequest req;
    req.path = "/api/v1/namespaces/" + ns + "/pods/" + pod;
    req.timeout = timeout_;
    auto resp = SendKubeRequest(endpoint_, req);
    if (!resp.ok()) {
      return resp.status();
    }
    const std::string where = "GET " + req.path + ": HTTP " + std::to_string(resp->http_status);
    switch (resp->http_status) {
      case 200:
        return ParsePodAnnotations(resp->body);
      case 403:
        return PermissionDeniedError(where + ": " + ApiMessage(resp->body) +
                                     " (does the ClusterRole allow pods get?)");
      case 404:
        return NotFoundError(where + ": " + ApiMessage(resp->body));
      default:
        return UnavailableError(where + ": " + ApiMessage(resp->body));
    }
  }

 private:
  KubeEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

Result<podresources::Annotations> ParsePodAnnotations(const std::string& pod_json) {
  nlohmann::json j = nlohmann::json::parse(pod_json, nullptr, false);
  if (!j.is_object()) {
    return DataLossError("pod: not a JSON object");
  }
  podresources::Annotations out;
  auto meta = j.find("metadata");
  if (meta == j.end() || !meta->is_object()) {
    return DataLossError("pod: no metadata");
  }
  auto ann = meta->find("annotations");
  if (ann == meta->end() || ann->is_null()) {
    return out;
  }
  if (!ann->is_object()) {
    return DataLossError("pod: metadata.annotations is not an object");
  }
  for (const auto& [k, v] : ann->items()) {
    if (v.is_string()) {
      out[k] = v.get<std::string>();
    }
  }
  return out;
}

std::unique_ptr<podresources::PodAnnotationSource> MakeKubePodReader(
    KubeEndpoint endpoint, std::chrono::milliseconds timeout) {
  return std::make_unique<KubePodReader>(std::move(endpoint), timeout);
}

}  // namespace vgpu::labels

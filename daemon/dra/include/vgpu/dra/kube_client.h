// The DRA plugin's view of the Kubernetes API: JSON request, reply. The plugin needs four verbs
// on two resources (GET resourceclaims; GET/POST/PUT/DELETE resourceslices), so this is a thin
// call over the manager's one kube client (labels::KubeHttpClient: credentials, CA, timeouts,
// one kept-alive connection), not a client library; an interface so the plugin's logic can be
// tested without a server. Retries and their policy belong to the callers (the kubelet retries
// a failed prepare, the slice publisher its sync).
#pragma once

#include <string>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/labels/kube_http.h"
#include "vgpu/status.h"

namespace vgpu::dra {

struct HttpReply {
  long status = 0;
  std::string body;
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;
  // `path` starts with "/apis/..."; `body` is JSON (empty: none). A transport failure is an
  // error; any HTTP status is a reply.
  virtual Result<HttpReply> Call(const std::string& method, const std::string& path,
                                 const std::string& body = "") = 0;
};

class CurlKubeApi final : public KubeApi {
 public:
  explicit CurlKubeApi(labels::KubeEndpoint endpoint);
  Result<HttpReply> Call(const std::string& method, const std::string& path,
                         const std::string& body) override;

 private:
  labels::KubeHttpClient client_;
};

// The API server's "message" from a Status body, or the body itself, shortened
// (labels::ApiMessage).
std::string ApiMessage(const HttpReply& reply);

}  // namespace vgpu::dra

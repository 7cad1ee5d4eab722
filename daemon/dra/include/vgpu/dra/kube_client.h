// One Kubernetes API request at a time over libcurl (Debian's libcurl4-openssl-dev), with the
// endpoint and credentials daemon/labels reads (in-cluster service account or kubeconfig). The
// DRA plugin needs four verbs on two resources (GET resourceclaims; GET/POST/PUT/DELETE
// resourceslices), so this is a thin request/response call, not a client library; retries and
// their policy belong to the callers (the kubelet retries a failed prepare, the slice publisher
// its sync). The connection is kept alive between calls (HTTP keep-alive on one handle).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "vgpu/labels/kube_endpoint.h"
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
  ~CurlKubeApi() override;
  Result<HttpReply> Call(const std::string& method, const std::string& path,
                         const std::string& body) override;

 private:
  labels::KubeEndpoint endpoint_;
  std::mutex mu_;  // one request at a time on the one handle
  void* curl_ = nullptr;
};

// The API server's "message" from a Status body, or the body itself, shortened.
std::string ApiMessage(const HttpReply& reply);

}  // namespace vgpu::dra

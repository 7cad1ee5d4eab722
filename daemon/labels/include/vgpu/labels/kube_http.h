// HTTP requests to the Kubernetes API server with an endpoint's credentials (bearer token,
// client certificate, CA), through libcurl: the one client of the manager, used by the node
// labeler (PATCH), the pod reader (GET) and the DRA plugin (daemon/dra: claims and slices).
// Retries are the caller's.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/status.h"

namespace vgpu::labels {

struct KubeRequest {
  std::string method = "GET";
  std::string path;          // "/api/v1/nodes/n1"
  std::string content_type;  // with a body
  std::string body;
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

struct KubeResponse {
  long http_status = 0;
  std::string body;
};

// One connection to the API server, kept alive between requests (HTTP keep-alive on one libcurl
// handle, so a request on a hot path does not pay a TCP and TLS handshake); one request at a
// time. Nagle is off (libcurl's default, kept) and "Expect: 100-continue" is never sent, so a
// request with a body is one round trip.
class KubeHttpClient {
 public:
  explicit KubeHttpClient(KubeEndpoint endpoint);
  ~KubeHttpClient();
  KubeHttpClient(const KubeHttpClient&) = delete;
  KubeHttpClient& operator=(const KubeHttpClient&) = delete;

  // UNAVAILABLE when the server was not reached (the transport's error); otherwise the
  // response, whatever its HTTP status.
  Result<KubeResponse> Send(const KubeRequest& request);

 private:
  const KubeEndpoint endpoint_;
  std::mutex mu_;  // one request at a time on the one handle
  void* curl_ = nullptr;
};

// One request on a connection of its own (callers that ask rarely).
Result<KubeResponse> SendKubeRequest(const KubeEndpoint& endpoint, const KubeRequest& request);

// The API server's Status message, when the body is a metav1.Status; else its first 200 bytes.
std::string ApiMessage(const std::string& body);

}  // namespace vgpu::labels

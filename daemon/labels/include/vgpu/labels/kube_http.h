// One HTTP request to the Kubernetes API server with an endpoint's credentials (bearer token,
// client certificate, CA), through libcurl. Shared by the node labeler (PATCH) and the pod
// reader (GET); retries are the caller's.
#pragma once

#include <chrono>
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

// UNAVAILABLE when the server was not reached (the transport's error); otherwise the response,
// whatever its HTTP status.
Result<KubeResponse> SendKubeRequest(const KubeEndpoint& endpoint, const KubeRequest& request);

// The API server's Status message, when the body is a metav1.Status; else its first 200 bytes.
std::string ApiMessage(const std::string& body);

}  // namespace vgpu::labels

#include "vgpu/dra/kube_client.h"

namespace vgpu::dra {

CurlKubeApi::CurlKubeApi(labels::KubeEndpoint endpoint) : client_(std::move(endpoint)) {}

Result<HttpReply> CurlKubeApi::Call(const std::string& method, const std::string& path,
                                    const std::string& body) {
  labels::KubeRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  request.content_type = body.empty() ? "" : "application/json";
  auto response = client_.Send(request);
  if (!response.ok()) {
    return response.status();
  }
  return HttpReply{response->http_status, std::move(response->body)};
}

std::string ApiMessage(const HttpReply& reply) { return labels::ApiMessage(reply.body); }

}  // namespace vgpu::dra

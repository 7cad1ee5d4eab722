#include "vgpu/labels/kube_http.h"

#include <curl/curl.h>

#include <mutex>
#include <nlohmann/json.hpp>

namespace vgpu::labels {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string ApiMessage(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

Result<KubeResponse> SendKubeRequest(const KubeEndpoint& endpoint, const KubeRequest& request) {
  GlobalInitOnce();
  const std::string url = endpoint.server + request.path;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  std::string content_type = "Content-Type: " + request.content_type;
  if (!request.content_type.empty()) headers = curl_slist_append(headers, content_type.c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  std::string auth;
  if (!endpoint.token.empty()) {
    auth = "Authorization: Bearer " + endpoint.token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  KubeResponse out;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "vgpu-manager");
  if (!endpoint.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, endpoint.ca_file.c_str());
  curl_blob ca{const_cast<char*>(endpoint.ca_pem.data()), endpoint.ca_pem.size(), CURL_BLOB_COPY};
  if (!endpoint.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  if (endpoint.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!endpoint.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, endpoint.client_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, endpoint.client_key_file.c_str());
  }
  curl_blob cert{const_cast<char*>(endpoint.client_cert_pem.data()),
                 endpoint.client_cert_pem.size(), CURL_BLOB_COPY};
  curl_blob key{const_cast<char*>(endpoint.client_key_pem.data()), endpoint.client_key_pem.size(),
                CURL_BLOB_COPY};
  if (!endpoint.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return UnavailableError(request.method + " " + url + ": " + curl_easy_strerror(rc));
  }
  return out;
}

}  // namespace vgpu::labels

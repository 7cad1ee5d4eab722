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

KubeHttpClient::KubeHttpClient(KubeEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  GlobalInitOnce();
  curl_ = curl_easy_init();
}

KubeHttpClient::~KubeHttpClient() {
  if (curl_ != nullptr) {
    curl_easy_cleanup(static_cast<CURL*>(curl_));
  }
}

Result<KubeResponse> KubeHttpClient::Send(const KubeRequest& request) {
  std::lock_guard lock(mu_);
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return InternalError("curl_easy_init failed");
  curl_easy_reset(curl);  // keeps the connection cache, drops the last request's options
  const std::string url = endpoint_.server + request.path;
  curl_slist* headers = nullptr;
  std::string content_type = "Content-Type: " + request.content_type;
  if (!request.content_type.empty()) headers = curl_slist_append(headers, content_type.c_str());
  headers = curl_slist_append(headers, "Accept: application/json");
  // libcurl would otherwise ask before sending a large body and wait up to a second for the
  // server's "100 Continue"; the API server takes every body anyway.
  headers = curl_slist_append(headers, "Expect:");
  std::string auth;
  if (!endpoint_.token.empty()) {
    auth = "Authorization: Bearer " + endpoint_.token;
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
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "vgpu-manager");
  if (!endpoint_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, endpoint_.ca_file.c_str());
  curl_blob ca{const_cast<char*>(endpoint_.ca_pem.data()), endpoint_.ca_pem.size(), CURL_BLOB_COPY};
  if (!endpoint_.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  if (endpoint_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!endpoint_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, endpoint_.client_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, endpoint_.client_key_file.c_str());
  }
  curl_blob cert{const_cast<char*>(endpoint_.client_cert_pem.data()),
                 endpoint_.client_cert_pem.size(), CURL_BLOB_COPY};
  curl_blob key{const_cast<char*>(endpoint_.client_key_pem.data()), endpoint_.client_key_pem.size(),
                CURL_BLOB_COPY};
  if (!endpoint_.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    return UnavailableError(request.method + " " + url + ": " + curl_easy_strerror(rc));
  }
  return out;
}

Result<KubeResponse> SendKubeRequest(const KubeEndpoint& endpoint, const KubeRequest& request) {
  return KubeHttpClient(endpoint).Send(request);
}

}  // namespace vgpu::labels

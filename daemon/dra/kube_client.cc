#include "vgpu/dra/kube_client.h"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace vgpu::dra {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

}  // namespace

CurlKubeApi::CurlKubeApi(labels::KubeEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

CurlKubeApi::~CurlKubeApi() {
  if (curl_ != nullptr) {
    curl_easy_cleanup(static_cast<CURL*>(curl_));
  }
}

Result<HttpReply> CurlKubeApi::Call(const std::string& method, const std::string& path,
                                    const std::string& body) {
  std::lock_guard lock(mu_);
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) {
    return InternalError("curl_easy_init failed");
  }
  curl_easy_reset(curl);  // keeps the connection cache, drops the last call's options
  const std::string url = endpoint_.server + path;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json");
  std::string auth;
  if (!endpoint_.token.empty()) {
    auth = "Authorization: Bearer " + endpoint_.token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  HttpReply reply;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "vgpu-manager-dra");
  if (!endpoint_.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, endpoint_.ca_file.c_str());
  }
  curl_blob ca{const_cast<char*>(endpoint_.ca_pem.data()), endpoint_.ca_pem.size(), CURL_BLOB_COPY};
  if (!endpoint_.ca_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  }
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
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    return UnavailableError(method + " " + url + ": " + curl_easy_strerror(rc));
  }
  return reply;
}

std::string ApiMessage(const HttpReply& reply) {
  auto doc = nlohmann::json::parse(reply.body, nullptr, false);
  if (!doc.is_discarded() && doc.is_object() && doc.contains("message") &&
      doc["message"].is_string()) {
    return doc["message"].get<std::string>();
  }
  return "HTTP " + std::to_string(reply.status) + " " + reply.body.substr(0, 200);
}

}  // namespace vgpu::dra

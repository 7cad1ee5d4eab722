#include "vgpu/labels/node_labeler.h"

#include <curl/curl.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace vgpu::labels {
namespace {

using nlohmann::json;

bool LabelNameOk(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool DnsSubdomainOk(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return false;
      }
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The API server's Status message, when the body is a metav1.Status.
std::string ApiMessage(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return body.substr(0, 200);
}

}  // namespace

Status ValidateLabel(std::string_view key, std::string_view value) {
  std::string_view name = key;
  if (size_t slash = key.find('/'); slash != std::string_view::npos) {
    if (!DnsSubdomainOk(key.substr(0, slash))) {
      return InvalidArgumentError("--node-labels: key '" + std::string(key) +
                                  "': prefix is not a DNS subdomain");
    }
    name = key.substr(slash + 1);
  }
  if (!LabelNameOk(name)) {
    return InvalidArgumentError(
        "--node-labels: key '" + std::string(key) +
        "': name must be 1-63 of [A-Za-z0-9._-], alphanumeric at both ends");
  }
  if (!value.empty() && !LabelNameOk(value)) {
    return InvalidArgumentError(
        "--node-labels: value '" + std::string(value) + "' of '" + std::string(key) +
        "': must be empty or 1-63 of [A-Za-z0-9._-], alphanumeric at both ends");
  }
  return OkStatus();
}

Result<LabelSet> ParseNodeLabelsFlag(std::string_view flag) {
  LabelSet labels;
  while (!flag.empty()) {
    size_t comma = flag.find(',');
    std::string_view item = flag.substr(0, comma);
    flag = comma == std::string_view::npos ? std::string_view() : flag.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("--node-labels: '" + std::string(item) + "' is not key=value");
    }
    std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    VGPU_RETURN_IF_ERROR(ValidateLabel(key, value));
    labels[key] = value;
  }
  return labels;
}

std::string LabelPatchBody(const LabelSet& labels) {
  json l = json::object();
  for (const auto& [k, v] : labels) l[k] = v ? json(*v) : json(nullptr);
  return json{{"metadata", {{"labels", l}}}}.dump();
}

NodeLabeler::NodeLabeler(KubeEndpoint endpoint, LabelerOptions options)
    : endpoint_(std::move(endpoint)), options_(std::move(options)) {
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  }
}

Status NodeLabeler::Apply(const std::string& node_name, const LabelSet& labels,
                          PatchOutcome* outcome) {
  for (const auto& [k, v] : labels) VGPU_RETURN_IF_ERROR(ValidateLabel(k, v.value_or("")));
  GlobalInitOnce();
  const std::string url = endpoint_.server + "/api/v1/nodes/" + node_name;
  const std::string body = LabelPatchBody(labels);
  PatchOutcome local;
  PatchOutcome& out = outcome ? *outcome : local;
  out = {};
  std::chrono::milliseconds backoff = options_.initial_backoff;
  Status last = UnavailableError("no attempt made");
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    out.attempts = attempt;
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return InternalError("curl_easy_init failed");
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/strategic-merge-patch+json");
    headers = curl_slist_append(headers, "Accept: application/json");
    std::string auth;
    if (!endpoint_.token.empty()) {
      auth = "Authorization: Bearer " + endpoint_.token;
      headers = curl_slist_append(headers, auth.c_str());
    }
    std::string response;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PATCH");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "vgpu-manager");
    if (!endpoint_.ca_file.empty())
      curl_easy_setopt(curl, CURLOPT_CAINFO, endpoint_.ca_file.c_str());
    curl_blob ca{const_cast<char*>(endpoint_.ca_pem.data()), endpoint_.ca_pem.size(),
                 CURL_BLOB_COPY};
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
    curl_blob key{const_cast<char*>(endpoint_.client_key_pem.data()),
                  endpoint_.client_key_pem.size(), CURL_BLOB_COPY};
    if (!endpoint_.client_cert_pem.empty()) {
      curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
    }
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    out.http_status = status;

    const std::string where = "PATCH " + url;
    if (rc != CURLE_OK) {
      last = UnavailableError(where + ": " + curl_easy_strerror(rc));
    } else if (status >= 200 && status < 300) {
      return OkStatus();
    } else if (status == 429 || status >= 500) {
      last = UnavailableError(where + ": HTTP " + std::to_string(status) + ": " +
                              ApiMessage(response));
    } else {
      const std::string msg =
          where + ": HTTP " + std::to_string(status) + ": " + ApiMessage(response);
      switch (status) {
        case 401:
          return Status(StatusCode::kUnauthenticated, msg);
        case 403:
          return PermissionDeniedError(msg + " (does the ClusterRole allow nodes patch?)");
        case 404:
          return NotFoundError(msg + " (is --hostname-override the Node's name?)");
        default:
          return InvalidArgumentError(msg);
      }
    }
    if (attempt < options_.max_attempts) {
      options_.sleep(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }
  return last.Annotate("after " + std::to_string(options_.max_attempts) + " attempts");
}

}  // namespace vgpu::labels

#include "vgpu/labels/node_labeler.h"

#include "vgpu/labels/kube_http.h"

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
  const std::string url = endpoint_.server + "/api/v1/nodes/" + node_name;
  const std::string body = LabelPatchBody(labels);
  PatchOutcome local;
  PatchOutcome& out = outcome ? *outcome : local;
  out = {};
  std::chrono::milliseconds backoff = options_.initial_backoff;
  Status last = UnavailableError("no attempt made");
  KubeRequest req;
  req.method = "PATCH";
  req.path = "/api/v1/nodes/" + node_name;
  req.content_type = "application/strategic-merge-patch+json";
  req.body = body;
  req.timeout = options_.request_timeout;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    out.attempts = attempt;
    auto sent = SendKubeRequest(endpoint_, req);
    const long status = sent.ok() ? sent->http_status : 0;
    const std::string response = sent.ok() ? sent->body : "";
    out.http_status = status;

    const std::string where = "PATCH " + url;
    if (!sent.ok()) {
      last = sent.status();
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

// --node-labels: publishes the node's vgpu labels on its Node object with one PATCH
// (PATCH /api/v1/nodes/{name}, Content-Type application/strategic-merge-patch+json, body
// {"metadata":{"labels":{...}}}; a label set to null is removed), through libcurl, retried with
// exponential backoff on transport errors, 429 and 5xx. Permanent answers (401, 403, 404, 422)
// are not retried. The manager logs a failure as a warning and carries on: labels are a
// convenience for schedulers and dashboards, never a reason to stop serving GPUs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "vgpu/labels/kube_endpoint.h"
#include "vgpu/status.h"

namespace vgpu::labels {

// Value nullopt removes the label.
using LabelSet = std::map<std::string, std::optional<std::string>>;

// Parses "--node-labels=key=value,key2=value2" and checks key and value syntax the way the API
// server does (prefix a DNS subdomain <= 253, name <= 63 [A-Za-z0-9._-] alnum at both ends).
Result<LabelSet> ParseNodeLabelsFlag(std::string_view flag);
Status ValidateLabel(std::string_view key, std::string_view value);

// The body of the PATCH.
std::string LabelPatchBody(const LabelSet& labels);

struct LabelerOptions {
  int max_attempts = 6;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(16)};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
  // Injected so tests need not wait (STYLE.md: injected time).
  std::function<void(std::chrono::milliseconds)> sleep;
};

struct PatchOutcome {
  int attempts = 0;
  long http_status = 0;  // last HTTP status, 0 when the server was never reached
};

class NodeLabeler {
 public:
  NodeLabeler(KubeEndpoint endpoint, LabelerOptions options = {});
  // PATCHes the labels onto node `node_name`. UNAVAILABLE after the last retry,
  // PERMISSION_DENIED/UNAUTHENTICATED/NOT_FOUND/INVALID_ARGUMENT for permanent answers
  // (carrying the API server's message).
  Status Apply(const std::string& node_name, const LabelSet& labels,
               PatchOutcome* outcome = nullptr);

 private:
  KubeEndpoint endpoint_;
  LabelerOptions options_;
};

}  // namespace vgpu::labels

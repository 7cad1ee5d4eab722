// Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): HELP and TYPE lines once per
// family, all samples of a family together, label values escaped (\\, \", \n).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vgpu/metrics/stats_source.h"

namespace vgpu::metrics {

inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Escapes a label value: backslash, double quote and line feed, per the format spec.
std::string EscapeLabelValue(std::string_view value);
// Escapes HELP text: backslash and line feed only (quotes stay as they are).
std::string EscapeHelp(std::string_view help);
// Formats a sample value: integers without a fraction, NaN and +Inf/-Inf spelled as the spec does.
std::string FormatValue(double value);

using Labels = std::vector<std::pair<std::string_view, std::string>>;

class ExpositionWriter {
 public:
  // Starts a family; every Sample() until the next Family() must belong to it.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  void Sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// Self-observation of the exporter, rendered with the node snapshot.
struct ExporterCounters {
  uint64_t samples = 0;
  uint64_t sample_failures = 0;
  double last_sample_unix_seconds = 0;
};

// Renders the node's metrics. node_name labels every series (the manager's --hostname-override).
std::string RenderNodeMetrics(std::string_view node_name, const NodeSnapshot& snapshot,
                              const ExporterCounters& self);

}  // namespace vgpu::metrics

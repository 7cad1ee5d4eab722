#include "vgpu/metrics/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace vgpu::metrics {
namespace {

// The text format's escapes: backslash and newline everywhere, the double quote in label values
// only (HELP text is not quoted).
std::string Escape(std::string_view text, bool in_quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && in_quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) { return Escape(value, /*in_quotes=*/true); }

std::string EscapeHelp(std::string_view help) { return Escape(help, /*in_quotes=*/false); }

std::string FormatValue(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  // Counters and byte counts are integers; print them exactly (up to 2^53) without an exponent.
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) {
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    return buf;
  }
  return std::string(buf, end);
}

void ExpositionWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void ExpositionWriter::Sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, val] : labels) {
      if (!first) {
        out_ += ',';
      }
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += EscapeLabelValue(val);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

namespace {

// One row per per-slot family: the table is the list of what a slot exports.
struct SlotFamily {
  std::string_view name;
  std::string_view type;
  std::string_view help;
  double (*value)(const SlotStats&);
};

constexpr SlotFamily kSlotFamilies[] = {
    {"vgpu_slot_memory_quota_bytes", "gauge", "Video memory quota of the slot.",
     [](const SlotStats& s) { return static_cast<double>(s.memory_quota_bytes); }},
    {"vgpu_slot_memory_charged_bytes", "gauge",
     "Video memory currently charged to the slot (physical allocations the driver reported).",
     [](const SlotStats& s) { return static_cast<double>(s.memory_charged_bytes); }},
    {"vgpu_slot_memory_peak_bytes", "gauge",
     "Highest video memory ever charged to the slot at once.",
     [](const SlotStats& s) { return static_cast<double>(s.memory_peak_bytes); }},
    {"vgpu_slot_memory_denials_total", "counter",
     "Allocations refused because they would exceed the slot's memory quota.",
     [](const SlotStats& s) { return static_cast<double>(s.memory_denials); }},
    {"vgpu_slot_core_share_ratio", "gauge", "Configured compute share of the slot (1 = whole GPU).",
     [](const SlotStats& s) { return s.core_share_ratio; }},
    {"vgpu_slot_core_achieved_ratio", "gauge",
     "The slot's share of the GPU's throughput over the last 1 s, as its compute controller "
     "measures it: GPU time weighted by the SM clock it ran at against the clock the slot's "
     "saturating work sustains (what a cap holds; plain GPU time where no clock is known).",
     [](const SlotStats& s) { return s.core_achieved_ratio; }},
    {"vgpu_slot_core_achieved_10s_ratio", "gauge",
     "The same share of the GPU's throughput over the last 10 s.",
     [](const SlotStats& s) { return s.core_achieved_10s_ratio; }},
    {"vgpu_slot_busy_seconds_total", "counter",
     "GPU time the slot's work ran (time, not clock-weighted).",
     [](const SlotStats& s) { return s.busy_seconds; }},
    {"vgpu_slot_throttled_seconds_total", "counter",
     "Time the slot's channels were held off the GPU to enforce its share.",
     [](const SlotStats& s) { return s.throttled_seconds; }},
};

Labels SlotLabels(std::string_view node, const SlotStats& s) {
  return {{"node", std::string(node)},    {"gpu_uuid", s.gpu_uuid}, {"slot", s.slot},
          {"namespace", s.pod_namespace}, {"pod", s.pod},           {"container", s.container}};
}

std::string HexNumber(uint32_t n) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", n);
  return buf;
}

}  // namespace

std::string RenderNodeMetrics(std::string_view node_name, const NodeSnapshot& snapshot,
                              const ExporterCounters& self) {
  ExpositionWriter w;
  const std::string node(node_name);

  for (const SlotFamily& family : kSlotFamilies) {
    w.Family(family.name, family.type, family.help);
    for (const SlotStats& slot : snapshot.slots) {
      w.Sample(family.name, SlotLabels(node_name, slot), family.value(slot));
    }
  }
  w.Family("vgpu_slot_unknown_ioctls_total", "counter",
           "Ioctls the filter refused because its ABI table did not know them, by table "
           "(kind) and number.");
  for (const SlotStats& slot : snapshot.slots) {
    for (const UnknownIoctlCount& unknown : slot.unknown_ioctls) {
      Labels labels = SlotLabels(node_name, slot);
      labels.emplace_back("kind", unknown.kind);
      labels.emplace_back("number", HexNumber(unknown.number));
      w.Sample("vgpu_slot_unknown_ioctls_total", labels, static_cast<double>(unknown.count));
    }
  }

  w.Family("vgpu_gpu_healthy", "gauge",
           "1 if the GPU is healthy (no critical XID since the last "
           "successful re-probe), 0 otherwise.");
  for (const GpuStats& gpu : snapshot.gpus) {
    w.Sample("vgpu_gpu_healthy", {{"node", node}, {"gpu_uuid", gpu.uuid}}, gpu.healthy ? 1 : 0);
  }
  w.Family("vgpu_gpu_slots", "gauge", "Slots placed on the GPU.");
  for (const GpuStats& gpu : snapshot.gpus) {
    w.Sample("vgpu_gpu_slots", {{"node", node}, {"gpu_uuid", gpu.uuid}}, gpu.slots);
  }
  w.Family("vgpu_gpu_memory_committed_bytes", "gauge",
           "Sum of the memory quotas of the slots placed on the GPU.");
  for (const GpuStats& gpu : snapshot.gpus) {
    w.Sample("vgpu_gpu_memory_committed_bytes", {{"node", node}, {"gpu_uuid", gpu.uuid}},
             static_cast<double>(gpu.memory_committed_bytes));
  }

  const Labels node_labels = {{"node", node}};
  const NodeEnforcement& e = snapshot.enforcement;
  if (!e.mode.empty()) {
    w.Family("vgpu_node_enforcement_info", "gauge",
             "The enforcement in force on the node (mode module or shim; hard: whether a "
             "process in a container can escape it), always 1.");
    w.Sample("vgpu_node_enforcement_info",
             {{"node", node}, {"mode", e.mode}, {"hard", e.hard ? "true" : "false"}}, 1);
    w.Family("vgpu_node_enforcement_hard", "gauge",
             "1 if the node's limits are enforced by vgpu.ko (hard), 0 if by the shim (soft).");
    w.Sample("vgpu_node_enforcement_hard", node_labels, e.hard ? 1 : 0);
    w.Family("vgpu_node_shim_fallback", "gauge",
             "1 if --enforcement=auto fell back to the shim because vgpu.ko was not usable.");
    w.Sample("vgpu_node_shim_fallback", node_labels, e.shim_fallback ? 1 : 0);
  }
  if (e.module_install_ok >= 0) {
    w.Family("vgpu_node_module_install_ok", "gauge",
             "1 if the module installer built and loaded vgpu.ko on this node, 0 if it failed "
             "(its reason is in its pod's log and in the manager's start-up log).");
    w.Sample("vgpu_node_module_install_ok", node_labels, e.module_install_ok);
  }
  w.Family("vgpu_allocations_total", "counter", "Allocate calls the device plugin answered.");
  w.Sample("vgpu_allocations_total", node_labels,
           static_cast<double>(snapshot.counters.allocations));
  w.Family("vgpu_allocation_failures_total", "counter",
           "Allocate calls the device plugin refused.");
  w.Sample("vgpu_allocation_failures_total", node_labels,
           static_cast<double>(snapshot.counters.allocation_failures));
  w.Family("vgpu_registrations_total", "counter",
           "Registrations with the kubelet, including re-registrations after a kubelet restart.");
  w.Sample("vgpu_registrations_total", node_labels,
           static_cast<double>(snapshot.counters.registrations));

  w.Family("vgpu_metrics_samples_total", "counter", "Snapshots the exporter took.");
  w.Sample("vgpu_metrics_samples_total", node_labels, static_cast<double>(self.samples));
  w.Family("vgpu_metrics_sample_failures_total", "counter",
           "Snapshots that failed; the exporter keeps serving the last good one.");
  w.Sample("vgpu_metrics_sample_failures_total", node_labels,
           static_cast<double>(self.sample_failures));
  w.Family("vgpu_metrics_last_sample_timestamp_seconds", "gauge",
           "Unix time of the last good snapshot.");
  w.Sample("vgpu_metrics_last_sample_timestamp_seconds", node_labels,
           self.last_sample_unix_seconds);
  return w.text();
}

}  // namespace vgpu::metrics

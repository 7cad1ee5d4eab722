#include "vgpu/slots/slot_config_file.h"

#include <charconv>
#include <map>

namespace vgpu::slots {
namespace {

template <typename T>
Status ParseNumber(std::string_view key, std::string_view value, T& out) {
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
    return InvalidArgumentError(std::string(key) + ": not a number '" + std::string(value) + "'");
  }
  return OkStatus();
}

}  // namespace

std::string FormatSlotConfigFile(const SlotConfig& c) {
  std::string out = "# vgpu slot config, written by vgpu-manager, read by libvgpu-shim.so\n";
  out += "version=" + std::to_string(kSlotConfigVersion) + "\n";
  out += "slot_id=" + std::to_string(c.id) + "\n";
  out += "slot_name=" + c.name + "\n";
  out += "gpu_index=" + std::to_string(c.gpu) + "\n";
  out += "gpu_uuid=" + c.gpu_uuid + "\n";
  out += "memory_quota_bytes=" + std::to_string(c.memory_quota_bytes) + "\n";
  out += "compute_share_percent=" + std::to_string(c.compute_share_percent) + "\n";
  out += "managed_policy=" + std::string(ManagedPolicyName(c.managed_policy)) + "\n";
  out += "unknown_policy=" + std::string(UnknownPolicyName(c.unknown_policy)) + "\n";
  out += std::string("exclusive=") + (c.exclusive ? "1" : "0") + "\n";
  return out;
}

Result<SlotConfig> ParseSlotConfigFile(std::string_view text) {
  std::map<std::string, std::string, std::less<>> kv;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("line " + std::to_string(line_no) + ": expected key=value");
    }
    kv[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  for (const char* required : {"version", "slot_id", "slot_name", "gpu_index", "memory_quota_bytes",
                               "compute_share_percent", "managed_policy", "unknown_policy"}) {
    if (kv.find(required) == kv.end()) {
      return InvalidArgumentError(std::string("missing key ") + required);
    }
  }
  int version = 0;
  VGPU_RETURN_IF_ERROR(ParseNumber("version", kv["version"], version));
  if (version != kSlotConfigVersion) {
    return InvalidArgumentError("version: unsupported " + kv["version"]);
  }
  SlotConfig c;
  VGPU_RETURN_IF_ERROR(ParseNumber("slot_id", kv["slot_id"], c.id));
  c.name = kv["slot_name"];
  VGPU_RETURN_IF_ERROR(ParseNumber("gpu_index", kv["gpu_index"], c.gpu));
  c.gpu_uuid = kv["gpu_uuid"];
  VGPU_RETURN_IF_ERROR(
      ParseNumber("memory_quota_bytes", kv["memory_quota_bytes"], c.memory_quota_bytes));
  VGPU_RETURN_IF_ERROR(
      ParseNumber("compute_share_percent", kv["compute_share_percent"], c.compute_share_percent));
  if (c.compute_share_percent < 1 || c.compute_share_percent > 100) {
    return InvalidArgumentError("compute_share_percent: must be 1..100, got " +
                                kv["compute_share_percent"]);
  }
  auto managed = ParseManagedPolicy(kv["managed_policy"]);
  if (!managed.ok()) {
    return managed.status().Annotate("managed_policy");
  }
  c.managed_policy = *managed;
  auto unknown = ParseUnknownPolicy(kv["unknown_policy"]);
  if (!unknown.ok()) {
    return unknown.status().Annotate("unknown_policy");
  }
  c.unknown_policy = *unknown;
  c.exclusive = kv["exclusive"] == "1";
  return c;
}

}  // namespace vgpu::slots

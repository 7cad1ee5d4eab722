#include "vgpu/slots/slot_config_file.h"

#include <map>
#include <vector>

#include "vgpu/text.h"

namespace vgpu::slots {
namespace {

template <typename T>
Status ParseField(std::string_view key, std::string_view value, T& out) {
  std::optional<T> number = ParseNumber<T>(value);
  if (!number) {
    return InvalidArgumentError(std::string(key) + ": not a number '" + std::string(value) + "'");
  }
  out = *number;
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
  out += std::string("exclusive=") + (c.exclusive ? "1" : "0") + "\n";
  out += "ledger=" + std::string(kLedgerContainerDir) + "/" + std::string(kLedgerFileName) + "\n";
  AppendSettingsText(c, out);
  return out;
}

Result<SlotConfig> ParseSlotConfigFile(std::string_view text) {
  std::map<std::string, std::string, std::less<>> kv;
  const std::vector<std::string_view> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.empty() || line[0] == '#') {
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("line " + std::to_string(i + 1) + ": expected key=value");
    }
    kv[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  auto it = kv.find("version");
  if (it == kv.end()) {
    return InvalidArgumentError("missing key version");
  }
  int version = 0;
  VGPU_RETURN_IF_ERROR(ParseField("version", it->second, version));
  if (version != kSlotConfigVersion) {
    return InvalidArgumentError("version: unsupported " + it->second + " (this manager writes " +
                                std::to_string(kSlotConfigVersion) + ")");
  }
  for (std::string_view required : {"slot_id", "slot_name", "gpu_index", "gpu_uuid", "exclusive"}) {
    if (kv.find(required) == kv.end()) {
      return InvalidArgumentError("missing key " + std::string(required));
    }
  }
  SlotConfig c;
  VGPU_RETURN_IF_ERROR(ParseField("slot_id", kv["slot_id"], c.id));
  c.name = kv["slot_name"];
  VGPU_RETURN_IF_ERROR(ParseField("gpu_index", kv["gpu_index"], c.gpu));
  c.gpu_uuid = kv["gpu_uuid"];
  if (kv["exclusive"] != "0" && kv["exclusive"] != "1") {
    return InvalidArgumentError("exclusive: must be 0 or 1, got '" + kv["exclusive"] + "'");
  }
  c.exclusive = kv["exclusive"] == "1";
  for (std::string_view key : SettingKeys()) {
    auto v = kv.find(key);
    if (v == kv.end()) {
      return InvalidArgumentError("missing key " + std::string(key));
    }
    VGPU_RETURN_IF_ERROR(SetSettingFromText(c, key, v->second));
  }
  return c;
}

}  // namespace vgpu::slots

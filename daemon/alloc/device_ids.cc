#include "vgpu/alloc/device_ids.h"

#include <algorithm>

#include "vgpu/enum_names.h"
#include "vgpu/text.h"

namespace vgpu::alloc {
namespace {

// A number as FormatDeviceId writes it: no leading zero, so each ID has one spelling.
bool ParseU32(std::string_view s, uint32_t& out) {
  if (s.size() > 1 && s[0] == '0') {
    return false;
  }
  std::optional<uint32_t> number = ParseNumber<uint32_t>(s);
  if (!number) {
    return false;
  }
  out = *number;
  return true;
}

constexpr EnumName<ResourceKind> kResourceKindNames[] = {
    {ResourceKind::kCore, "vcuda-core"},
    {ResourceKind::kMemory, "vcuda-memory"},
    {ResourceKind::kWholeGpu, "vcuda-gpu"},
};
static_assert(ListsEach(kResourceKindNames, ResourceKind::kCore, ResourceKind::kWholeGpu));

}  // namespace

std::string_view ResourceKindName(ResourceKind kind) {
  return NameOf(kind, kResourceKindNames, "unknown");
}

std::string FormatDeviceId(const DeviceId& id) {
  if (id.kind == ResourceKind::kWholeGpu) {
    return "vcuda-gpu" + std::to_string(id.gpu);
  }
  return std::string(ResourceKindName(id.kind)) + "-gpu" + std::to_string(id.gpu) + "-" +
         std::to_string(id.unit);
}

Result<DeviceId> ParseDeviceId(std::string_view text, ResourceKind expected) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("device ID '" + std::string(text) + "' is not a " +
                                std::string(ResourceKindName(expected)) +
                                " ID: " + std::string(why));
  };
  DeviceId id{expected, 0, 0};
  if (expected == ResourceKind::kWholeGpu) {
    constexpr std::string_view prefix = "vcuda-gpu";
    if (!text.starts_with(prefix) || !ParseU32(text.substr(prefix.size()), id.gpu)) {
      return bad("expected vcuda-gpu<N>");
    }
    return id;
  }
  std::string prefix = std::string(ResourceKindName(expected)) + "-gpu";
  if (!text.starts_with(prefix)) {
    return bad("expected " + prefix + "<N>-<unit>");
  }
  std::string_view rest = text.substr(prefix.size());
  size_t dash = rest.find('-');
  if (dash == std::string_view::npos || !ParseU32(rest.substr(0, dash), id.gpu) ||
      !ParseU32(rest.substr(dash + 1), id.unit)) {
    return bad("expected " + prefix + "<N>-<unit>");
  }
  return id;
}

Result<IdSet> ParseIdSet(const std::vector<std::string>& ids, ResourceKind kind) {
  if (ids.empty()) {
    return InvalidArgumentError(std::string("no ") + std::string(ResourceKindName(kind)) +
                                " device IDs in the request");
  }
  IdSet set{kind, 0, {}};
  std::string first;
  for (const std::string& text : ids) {
    auto id = ParseDeviceId(text, kind);
    if (!id.ok()) {
      return id.status();
    }
    if (first.empty()) {
      first = text;
      set.gpu = id->gpu;
    } else if (id->gpu != set.gpu) {
      return InvalidArgumentError(std::string(ResourceKindName(kind)) + " IDs span GPUs: " + first +
                                  " is on gpu" + std::to_string(set.gpu) + " but " + text +
                                  " is on gpu" + std::to_string(id->gpu) +
                                  "; one container gets one GPU's share");
    }
    set.units.push_back(id->unit);
  }
  std::sort(set.units.begin(), set.units.end());
  auto dup = std::adjacent_find(set.units.begin(), set.units.end());
  if (dup != set.units.end()) {
    return InvalidArgumentError("device ID " + FormatDeviceId({kind, set.gpu, *dup}) +
                                " appears twice in one request");
  }
  return set;
}

// Built by appending to a std::string: `"literal" + std::to_string(...)` (operator+ on a const
// char* and a temporary string) trips GCC 12's false -Wrestrict at -O3 (GCC bug 105329), which
// -Werror turns into a failed Release build.
std::string SlotKey(uint32_t gpu, const std::vector<uint32_t>& units) {
  std::string key = "g";
  key += std::to_string(gpu);
  key += "-m";
  key += std::to_string(units.empty() ? 0 : units.front());
  key += "-n";
  key += std::to_string(units.size());
  return key;
}

std::string WholeGpuSlotKey(uint32_t gpu) {
  std::string key = "g";
  key += std::to_string(gpu);
  key += "-whole";
  return key;
}

}  // namespace vgpu::alloc

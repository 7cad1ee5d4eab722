// The C++ face of uapi/vgpu_slot_fields.h: a slot's settings as one struct, their value names,
// and the two codecs every daemon-side reader and writer uses, text ("key=value" lines: the
// slot config file libvgpu-shim.so reads) and JSON (checkpoint, control API, vgpuctl). Nothing
// here names a setting: every member, key, range and default comes from the schema's rows.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

#include "uapi/vgpu_slot_fields.h"
#include "vgpu/status.h"

namespace vgpu {

// The schema's enums (their values are the uapi's, so they go on the wire as they are).
enum class ComputeMode : uint32_t {
  kCap = VGPU_COMPUTE_CAP,        // hard limit, even on an idle GPU
  kWeight = VGPU_COMPUTE_WEIGHT,  // work-conserving share under contention
};
enum class ManagedPolicy : uint32_t {
  kDefault = VGPU_MANAGED_UNSPEC,  // the filter core decides: refuse under a quota
  kRefuse = VGPU_MANAGED_REFUSE,
  kAllowUncounted = VGPU_MANAGED_ALLOW_UNCOUNTED,
};
enum class UnknownPolicy : uint32_t {
  kRefuse = VGPU_UNKNOWN_REFUSE,
  kAllowLog = VGPU_UNKNOWN_ALLOW_LOG,
};

namespace slot_schema {
using u32 = uint32_t;  // the schema's wire types, as C++ types
using u64 = uint64_t;
}  // namespace slot_schema

// One member per schema row, named and defaulted as the row says.
struct SlotSettings {
#define VGPU_SETTING_MEMBER(field, wire, unit, def, min, max, attr, env) \
  slot_schema::wire field = def;
  VGPU_SLOT_NUMBERS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
#define VGPU_SETTING_MEMBER(field, type, values, def, max, attr, env) \
  type field = static_cast<type>(def);
  VGPU_SLOT_ENUMS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER

  bool operator==(const SlotSettings&) const = default;
};

// A number setting's valid range, inclusive.
template <typename T>
struct SettingRange {
  T min;
  T max;
};
// Every number setting's range by the setting's name, as its schema row gives it
// (setting_range::compute_ref_clock_mhz.max): readers that check a figure before it becomes a
// setting use these, never a range of their own.
namespace setting_range {
#define VGPU_SETTING_RANGE(field, wire, unit, def, min, max, attr, env) \
  inline constexpr SettingRange<slot_schema::wire> field{min, max};
VGPU_SLOT_NUMBERS(VGPU_SETTING_RANGE)
#undef VGPU_SETTING_RANGE
}  // namespace setting_range

// "cap", "refuse", "allow-log", ...; "default" for ManagedPolicy::kDefault.
std::string_view SettingValueName(ComputeMode v);
std::string_view SettingValueName(ManagedPolicy v);
std::string_view SettingValueName(UnknownPolicy v);
// The name of a raw uapi value of enum setting `field` ("unset" for a value the schema does
// not list, e.g. 0 from a module that predates the setting).
std::string_view SettingValueName(std::string_view field, uint32_t value);
// Parses a value name of the enum setting named `field`; the error names the field and the
// valid names.
Result<ComputeMode> ParseComputeMode(std::string_view text);
Result<ManagedPolicy> ParseManagedPolicy(std::string_view text);
Result<UnknownPolicy> ParseUnknownPolicy(std::string_view text);

// Every setting's key, in schema order.
std::span<const std::string_view> SettingKeys();

// Text codec: "key=value\n" per setting, in schema order (numbers in decimal, enums by name).
void AppendSettingsText(const SlotSettings& s, std::string& out);
// Sets the setting named `key` from its text. NotFound when `key` names no setting; otherwise
// an InvalidArgument error naming the key, the value and what is valid.
Status SetSettingFromText(SlotSettings& s, std::string_view key, std::string_view value);

// JSON codec: one member per setting, the same keys (numbers as numbers, enums by name).
void SettingsToJson(const SlotSettings& s, nlohmann::json& object);
// Reads every setting from `object`: a missing key is an error when `require_all`, else keeps
// the value in `s`. Errors name the key.
Status SettingsFromJson(const nlohmann::json& object, SlotSettings& s, bool require_all);

}  // namespace vgpu

#include "vgpu/slot_settings.h"

#include <array>
#include <nlohmann/json.hpp>

#include "vgpu/enum_names.h"
#include "vgpu/text.h"

namespace vgpu {
namespace {

using ValueName = EnumName<uint32_t>;

template <typename E>
struct EnumTable;  // the schema's value list of enum setting E

#define VGPU_VALUE_NAME(value, name) ValueName{value, name},
#define VGPU_ENUM_TABLE(field, type, values, def, max, attr, env)     \
  template <>                                                         \
  struct EnumTable<type> {                                            \
    static constexpr std::string_view kField = #field;                \
    static constexpr uint32_t kDefault = def;                         \
    static constexpr ValueName kValues[] = {values(VGPU_VALUE_NAME)}; \
  };
VGPU_SLOT_ENUMS(VGPU_ENUM_TABLE)
#undef VGPU_ENUM_TABLE
#undef VGPU_VALUE_NAME

template <typename E>
std::string_view NameOf(E v) {
  // 0 names the default only for a setting whose default is decided elsewhere (_UNSPEC);
  // otherwise it is a value the schema does not list (a module predating the setting).
  const std::string_view unlisted = static_cast<uint32_t>(v) == 0 && EnumTable<E>::kDefault == 0
                                        ? VGPU_SLOT_ENUM_DEFAULT_NAME
                                        : "unset";
  return vgpu::NameOf(static_cast<uint32_t>(v), EnumTable<E>::kValues, unlisted);
}

template <typename E>
Result<E> ParseEnum(std::string_view text) {
  std::string valid;
  if (EnumTable<E>::kDefault == 0) {  // the default decided elsewhere has a name too
    if (text == VGPU_SLOT_ENUM_DEFAULT_NAME) {
      return static_cast<E>(0);
    }
    valid = VGPU_SLOT_ENUM_DEFAULT_NAME;
  }
  for (const ValueName& n : EnumTable<E>::kValues) {
    if (n.name == text) {
      return static_cast<E>(n.value);
    }
    valid += (valid.empty() ? "" : " | ") + std::string(n.name);
  }
  return InvalidArgumentError(std::string(EnumTable<E>::kField) + ": '" + std::string(text) +
                              "' is not one of " + valid);
}

template <typename T>
Status ParseInRange(std::string_view key, std::string_view text, T min, T max, T& out) {
  const std::optional<T> number = ParseNumber<T>(text);
  if (!number || *number < min || *number > max) {
    return InvalidArgumentError(std::string(key) + ": '" + std::string(text) +
                                "' is not a number in " + std::to_string(min) + ".." +
                                std::to_string(max));
  }
  out = *number;
  return OkStatus();
}

template <typename T>
Status CheckRange(std::string_view key, T v, T min, T max) {
  if (v < min || v > max) {
    return InvalidArgumentError(std::string(key) + ": " + std::to_string(v) + " is not in " +
                                std::to_string(min) + ".." + std::to_string(max));
  }
  return OkStatus();
}

}  // namespace

std::string_view SettingValueName(ComputeMode v) { return NameOf(v); }
std::string_view SettingValueName(ManagedPolicy v) { return NameOf(v); }
std::string_view SettingValueName(UnknownPolicy v) { return NameOf(v); }

std::string_view SettingValueName(std::string_view field, uint32_t value) {
#define VGPU_NAME_BY_FIELD(f, type, values, def, max, attr, env) \
  if (field == #f) {                                             \
    return NameOf(static_cast<type>(value));                     \
  }
  VGPU_SLOT_ENUMS(VGPU_NAME_BY_FIELD)
#undef VGPU_NAME_BY_FIELD
  return "unset";
}

Result<ComputeMode> ParseComputeMode(std::string_view text) { return ParseEnum<ComputeMode>(text); }
Result<ManagedPolicy> ParseManagedPolicy(std::string_view text) {
  return ParseEnum<ManagedPolicy>(text);
}
Result<UnknownPolicy> ParseUnknownPolicy(std::string_view text) {
  return ParseEnum<UnknownPolicy>(text);
}

std::span<const std::string_view> SettingKeys() {
#define VGPU_KEY(field, ...) std::string_view(#field),
  static constexpr std::string_view kKeys[] = {VGPU_SLOT_NUMBERS(VGPU_KEY)
                                                   VGPU_SLOT_ENUMS(VGPU_KEY)};
#undef VGPU_KEY
  return kKeys;
}

void AppendSettingsText(const SlotSettings& s, std::string& out) {
#define VGPU_NUMBER_TEXT(field, wire, unit, def, min, max, attr, env) \
  out += #field "=" + std::to_string(s.field) + "\n";
  VGPU_SLOT_NUMBERS(VGPU_NUMBER_TEXT)
#undef VGPU_NUMBER_TEXT
#define VGPU_ENUM_TEXT(field, type, values, def, max, attr, env) \
  out += #field "=" + std::string(NameOf(s.field)) + "\n";
  VGPU_SLOT_ENUMS(VGPU_ENUM_TEXT)
#undef VGPU_ENUM_TEXT
}

Status SetSettingFromText(SlotSettings& s, std::string_view key, std::string_view value) {
#define VGPU_NUMBER_FROM_TEXT(field, wire, ...)                                     \
  if (key == #field) {                                                              \
    return ParseInRange<slot_schema::wire>(#field, value, setting_range::field.min, \
                                           setting_range::field.max, s.field);      \
  }
  VGPU_SLOT_NUMBERS(VGPU_NUMBER_FROM_TEXT)
#undef VGPU_NUMBER_FROM_TEXT
#define VGPU_ENUM_FROM_TEXT(field, type, values, def, max, attr, env) \
  if (key == #field) {                                                \
    auto v = ParseEnum<type>(value);                                  \
    if (!v.ok()) {                                                    \
      return v.status();                                              \
    }                                                                 \
    s.field = *v;                                                     \
    return OkStatus();                                                \
  }
  VGPU_SLOT_ENUMS(VGPU_ENUM_FROM_TEXT)
#undef VGPU_ENUM_FROM_TEXT
  return NotFoundError("'" + std::string(key) + "' is not a slot setting");
}

void SettingsToJson(const SlotSettings& s, nlohmann::json& object) {
#define VGPU_NUMBER_JSON(field, wire, unit, def, min, max, attr, env) object[#field] = s.field;
  VGPU_SLOT_NUMBERS(VGPU_NUMBER_JSON)
#undef VGPU_NUMBER_JSON
#define VGPU_ENUM_JSON(field, type, values, def, max, attr, env) \
  object[#field] = std::string(NameOf(s.field));
  VGPU_SLOT_ENUMS(VGPU_ENUM_JSON)
#undef VGPU_ENUM_JSON
}

Status SettingsFromJson(const nlohmann::json& object, SlotSettings& s, bool require_all) {
  if (!object.is_object()) {
    return InvalidArgumentError("slot settings: not a JSON object");
  }
  auto missing = [&](std::string_view key) -> Status {
    return require_all ? InvalidArgumentError(std::string(key) + ": required") : OkStatus();
  };
#define VGPU_NUMBER_FROM_JSON(field, wire, ...)                                             \
  if (auto it = object.find(#field); it == object.end()) {                                  \
    VGPU_RETURN_IF_ERROR(missing(#field));                                                  \
  } else if (!it->is_number_unsigned()) {                                                   \
    return InvalidArgumentError(#field ": must be an unsigned number, got " + it->dump());  \
  } else {                                                                                  \
    slot_schema::wire v = it->get<slot_schema::wire>();                                     \
    if (it->get<uint64_t>() != v) {                                                         \
      return InvalidArgumentError(#field ": " + it->dump() + " does not fit " #wire);       \
    }                                                                                       \
    VGPU_RETURN_IF_ERROR(CheckRange<slot_schema::wire>(#field, v, setting_range::field.min, \
                                                       setting_range::field.max));          \
    s.field = v;                                                                            \
  }
  VGPU_SLOT_NUMBERS(VGPU_NUMBER_FROM_JSON)
#undef VGPU_NUMBER_FROM_JSON
#define VGPU_ENUM_FROM_JSON(field, type, values, def, max, attr, env)            \
  if (auto it = object.find(#field); it == object.end()) {                       \
    VGPU_RETURN_IF_ERROR(missing(#field));                                       \
  } else if (!it->is_string()) {                                                 \
    return InvalidArgumentError(#field ": must be a string, got " + it->dump()); \
  } else {                                                                       \
    auto v = ParseEnum<type>(it->get<std::string>());                            \
    if (!v.ok()) {                                                               \
      return v.status();                                                         \
    }                                                                            \
    s.field = *v;                                                                \
  }
  VGPU_SLOT_ENUMS(VGPU_ENUM_FROM_JSON)
#undef VGPU_ENUM_FROM_JSON
  return OkStatus();
}

}  // namespace vgpu

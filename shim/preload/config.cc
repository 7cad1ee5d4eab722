#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "vgpu/enum_names.h"

namespace vgpu::shim {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) {
    return "";
  }
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::optional<uint64_t> ParseU64(const std::string& s) {
  if (s.empty() || s[0] < '0' || s[0] > '9') {
    return std::nullopt;
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') {
    return std::nullopt;
  }
  return v;
}

std::optional<bool> ParseBool(const std::string& s) {
  if (s == "1" || s == "true" || s == "yes") {
    return true;
  }
  if (s == "0" || s == "false" || s == "no") {
    return false;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> ParseBytes(const std::string& text) {
  std::string s = Trim(text);
  if (s.empty()) {
    return std::nullopt;
  }
  int shift = 0;
  char last = s.back();
  if (last == 'B' || last == 'b') {
    s.pop_back();
    if (s.empty()) {
      return std::nullopt;
    }
    last = s.back();
    if (last == 'i') {  // KiB, MiB, GiB, TiB
      s.pop_back();
      if (s.empty()) {
        return std::nullopt;
      }
      last = s.back();
    }
  }
  switch (last) {
    case 'K':
    case 'k':
      shift = 10;
      break;
    case 'M':
    case 'm':
      shift = 20;
      break;
    case 'G':
    case 'g':
      shift = 30;
      break;
    case 'T':
    case 't':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift != 0) {
    s.pop_back();
  }
  auto v = ParseU64(s);
  if (!v) {
    return std::nullopt;
  }
  if (shift != 0 && *v > (UINT64_MAX >> shift)) {
    return std::nullopt;
  }
  return *v << shift;
}

namespace {

bool InRange(uint64_t v, uint64_t min, uint64_t max) { return v >= min && v <= max; }

// Keys the settings had before uapi/vgpu_slot_fields.h, and their names now.
constexpr struct {
  const char* key;
  const char* now;
} kRetiredKeys[] = {
    {"memory_quota", "mem_quota"},
    {"memory_quota_bytes", "mem_quota"},
    {"compute_share_percent", "compute_share"},
    {"managed", "managed_policy"},
    {"policy", "unknown_policy"},
};

// Applies `key` if it is a slot setting: sets *handled and returns "" or the error.
std::string ApplySetting(SlotConfig& cfg, const std::string& key, const std::string& value,
                         bool* handled) {
  *handled = true;
  auto bad = [&](const std::string& want) {
    return "bad value '" + value + "' for " + key + " (want " + want + ")";
  };
  // A u64 setting counts bytes and may carry a binary suffix; a u32 is a plain decimal.
#define VGPU_NUMBER_SETTING(field, wire, unit, def, min, max, attr, env)     \
  if (key == #field) {                                                       \
    const bool bytes = sizeof(slot_schema::wire) == 8;                       \
    std::optional<uint64_t> v = bytes ? ParseBytes(value) : ParseU64(value); \
    if (!v || !InRange(*v, min, max)) {                                      \
      return bad(bytes ? std::string("bytes, optionally with K/M/G/T")       \
                       : std::string("a number in ")                         \
                             .append(std::to_string(min))                    \
                             .append("..")                                   \
                             .append(std::to_string(max)));                  \
    }                                                                        \
    cfg.field = static_cast<slot_schema::wire>(*v);                          \
    return "";                                                               \
  }
  VGPU_SLOT_NUMBERS(VGPU_NUMBER_SETTING)
#undef VGPU_NUMBER_SETTING
#define VGPU_VALUE_MATCH(v, name) \
  if (value == (name)) {          \
    *out = (v);                   \
    return "";                    \
  }                               \
  if (!want.empty()) want += '|'; \
  want += (name);
#define VGPU_ENUM_SETTING(field, type, values, def, max, attr, env) \
  if (key == #field) {                                              \
    uint32_t* out = &cfg.field;                                     \
    std::string want;                                               \
    if ((def) == 0 && value == VGPU_SLOT_ENUM_DEFAULT_NAME) {       \
      *out = 0;                                                     \
      return "";                                                    \
    }                                                               \
    values(VGPU_VALUE_MATCH) return bad(want);                      \
  }
  VGPU_SLOT_ENUMS(VGPU_ENUM_SETTING)
#undef VGPU_ENUM_SETTING
#undef VGPU_VALUE_MATCH
  *handled = false;
  return "";
}

}  // namespace

std::string ApplyConfigKey(SlotConfig& cfg, const std::string& key, const std::string& value) {
  auto bad = [&](const char* want) {
    return "bad value '" + value + "' for " + key + " (want " + want + ")";
  };
  bool handled = false;
  std::string err = ApplySetting(cfg, key, value, &handled);
  if (handled) {
    return err;
  }
  for (const auto& r : kRetiredKeys) {
    if (key == r.key) {
      return "key '" + key + "' is now '" + r.now + "' (uapi/vgpu_slot_fields.h)";
    }
  }
  if (key == "version") {
    if (value != "2") {
      return "unsupported config version '" + value +
             "' (this shim reads version 2; vgpu-manager rewrites its slot configs when it starts)";
    }
  } else if (key == "ledger") {
    if (!value.empty() && value[0] != '/') {
      return bad("an absolute path");
    }
    cfg.ledger_path = value;
  } else if (key == "log") {
    static constexpr EnumName<LogLevel> kLogLevelNames[] = {
        {LogLevel::kError, "error"},
        {LogLevel::kWarn, "warn"},
        {LogLevel::kInfo, "info"},
        {LogLevel::kDebug, "debug"},
    };
    std::optional<LogLevel> level = ValueOf(value, kLogLevelNames);
    if (!level) {
      return bad("error|warn|info|debug");
    }
    cfg.log = *level;
  } else if (key == "slot_id") {
    auto v = ParseU64(value);
    if (!v || *v > UINT32_MAX) {
      return bad("a 32-bit number");
    }
    cfg.slot_id = static_cast<uint32_t>(*v);
  } else if (key == "gpu_index") {
    auto v = ParseU64(value);
    if (!v || *v > UINT32_MAX) {
      return bad("the minor of the GPU's /dev/nvidiaN");
    }
    cfg.gpu_index = static_cast<uint32_t>(*v);
  } else if (key == "allow_unknown_driver") {
    auto v = ParseBool(value);
    if (!v) {
      return bad("0|1");
    }
    cfg.allow_unknown_driver = *v;
  } else {
    cfg.extra[key] = value;
  }
  return "";
}

std::string ParseConfigText(SlotConfig& cfg, const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    size_t hash = line.find('#');
    if (hash != std::string::npos) {
      line.resize(hash);
    }
    line = Trim(line);
    if (line.empty()) {
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return "line " + std::to_string(n) + ": expected key = value";
    }
    std::string key = Trim(line.substr(0, eq));
    std::string value = Trim(line.substr(eq + 1));
    if (key.empty()) {
      return "line " + std::to_string(n) + ": empty key";
    }
    std::string err = ApplyConfigKey(cfg, key, value);
    if (!err.empty()) {
      return "line " + std::to_string(n) + ": " + err;
    }
  }
  return "";
}

std::string LoadSlotConfig(SlotConfig& cfg, GetEnvFn getenv_fn) {
  const char* path = getenv_fn("VGPU_CONFIG");
  const bool from_file = path != nullptr && *path != '\0';
  if (from_file) {
    cfg.config_path = path;
    std::ifstream f(path);
    if (!f) {
      return std::string("cannot read VGPU_CONFIG=") + path + ": " + strerror(errno);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string err = ParseConfigText(cfg, ss.str());
    if (!err.empty()) {
      return std::string(path) + ": " + err;
    }
    if (cfg.ledger_path.empty()) {
      std::string dir = cfg.config_path;
      size_t slash = dir.rfind('/');
      dir = slash == std::string::npos ? "." : dir.substr(0, slash);
      cfg.ledger_path = dir + "/ledger";
    }
  }
  if (const char* v = getenv_fn("VGPU_LOG")) {  // verbosity only: allowed under a slot config
    std::string err = ApplyConfigKey(cfg, "log", Trim(v));
    if (!err.empty()) {
      return std::string("VGPU_LOG: ") + err;
    }
  }
  static const struct {
    const char* env;
    const char* key;  // nullptr: not the shim's, but ignored under a slot config all the same
  } kEnvKeys[] = {
#define VGPU_NUMBER_ENV(field, wire, unit, def, min, max, attr, env) {env, #field},
#define VGPU_ENUM_ENV(field, type, values, def, max, attr, env) {env, #field},
      VGPU_SLOT_NUMBERS(VGPU_NUMBER_ENV) VGPU_SLOT_ENUMS(VGPU_ENUM_ENV)
#undef VGPU_NUMBER_ENV
#undef VGPU_ENUM_ENV
          {"VGPU_LEDGER", "ledger"},
      {"VGPU_SLOT_ID", "slot_id"},
      {"VGPU_ALLOW_UNKNOWN_DRIVER", "allow_unknown_driver"},
      // Read elsewhere (shim.cc, shim/compute), named here so that the shim logs them.
      {"VGPU_SHIM_PASSTHROUGH", nullptr},
      {"VGPU_COMPUTE_FOREIGN_SHARE", nullptr},
      {"VGPU_COMPUTE_CLOCK_SCALING_PM", nullptr},
      {"VGPU_COMPUTE_SETTLE_MS", nullptr},
      {"VGPU_COMPUTE_CLOCK", nullptr},
  };
  for (const auto& e : kEnvKeys) {
    const char* v = getenv_fn(e.env);
    if (v == nullptr) {
      continue;
    }
    if (from_file) {
      // The manager's grant exports the slot's id beside its config (daemon/manager/
      // grant_builder.cc): the same id overrides nothing, so it is not reported as ignored (every
      // process of every pod logged a warning for it).
      if (e.key != nullptr && strcmp(e.key, "slot_id") == 0 &&
          Trim(v) == std::to_string(cfg.slot_id)) {
        continue;
      }
      cfg.ignored_env.push_back(e.env);
      continue;
    }
    if (e.key == nullptr) {
      continue;
    }
    std::string err = ApplyConfigKey(cfg, e.key, Trim(v));
    if (!err.empty()) {
      return std::string(e.env) + ": " + err;
    }
  }
  PublishSettings(cfg);
  return "";
}

void PublishSettings(SlotConfig& cfg) {
#define VGPU_PUBLISH_NUMBER(field, ...) cfg.extra[#field] = std::to_string(cfg.field);
  VGPU_SLOT_NUMBERS(VGPU_PUBLISH_NUMBER)
#undef VGPU_PUBLISH_NUMBER
#define VGPU_PUBLISH_ENUM(field, ...) cfg.extra[#field] = SettingValueName(#field, cfg.field);
  VGPU_SLOT_ENUMS(VGPU_PUBLISH_ENUM)
#undef VGPU_PUBLISH_ENUM
}

const char* SettingValueName(const char* field, uint32_t value) {
  const std::string f = field;
#define VGPU_VALUE_NAME(v, name) \
  if (value == (v)) {            \
    return name;                 \
  }
#define VGPU_ENUM_NAME(name_of_field, type, values, def, max, attr, env)               \
  if (f == #name_of_field) {                                                           \
    values(VGPU_VALUE_NAME) return value == 0 ? VGPU_SLOT_ENUM_DEFAULT_NAME : "unset"; \
  }
  VGPU_SLOT_ENUMS(VGPU_ENUM_NAME)
#undef VGPU_ENUM_NAME
#undef VGPU_VALUE_NAME
  return "unset";
}

}  // namespace vgpu::shim

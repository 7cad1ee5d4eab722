#include "config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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

std::string ApplyConfigKey(SlotConfig& cfg, const std::string& key, const std::string& value) {
  auto bad = [&](const char* want) {
    return "bad value '" + value + "' for " + key + " (want " + want + ")";
  };
  // Keys as vgpu-manager writes them (daemon/slots/slot_config_file.cc) are aliases.
  if (key == "memory_quota_bytes") {
    auto v = ParseU64(value);
    if (!v) {
      return bad("a number of bytes");
    }
    cfg.memory_quota = *v;
  } else if (key == "managed_policy") {
    return ApplyConfigKey(cfg, "managed", value);
  } else if (key == "unknown_policy") {
    return ApplyConfigKey(cfg, "policy", value);
  } else if (key == "version") {
    if (value != "1") {
      return "unsupported config version '" + value + "' (this shim reads version 1)";
    }
  } else if (key == "memory_quota") {
    auto v = ParseBytes(value);
    if (!v) {
      return bad("bytes, optionally with K/M/G/T");
    }
    cfg.memory_quota = *v;
  } else if (key == "managed") {
    if (value == "refuse") {
      cfg.managed = ManagedPolicy::kRefuse;
    } else if (value == "allow-uncounted" || value == "allow_uncounted") {
      cfg.managed = ManagedPolicy::kAllowUncounted;
    } else if (value == "default") {
      cfg.managed = ManagedPolicy::kDefault;
    } else {
      return bad("refuse|allow-uncounted");
    }
  } else if (key == "policy") {
    if (value == "strict" || value == "refuse") {
      cfg.unknown = UnknownPolicy::kStrict;
    } else if (value == "permissive" || value == "allow-log") {
      cfg.unknown = UnknownPolicy::kPermissive;
    } else {
      return bad("strict|permissive (or refuse|allow-log)");
    }
  } else if (key == "ledger") {
    if (!value.empty() && value[0] != '/') {
      return bad("an absolute path");
    }
    cfg.ledger_path = value;
  } else if (key == "log") {
    if (value == "error") {
      cfg.log = LogLevel::kError;
    } else if (value == "warn") {
      cfg.log = LogLevel::kWarn;
    } else if (value == "info") {
      cfg.log = LogLevel::kInfo;
    } else if (value == "debug") {
      cfg.log = LogLevel::kDebug;
    } else {
      return bad("error|warn|info|debug");
    }
  } else if (key == "slot_id") {
    auto v = ParseU64(value);
    if (!v || *v > UINT32_MAX) {
      return bad("a 32-bit number");
    }
    cfg.slot_id = static_cast<uint32_t>(*v);
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
  if (path != nullptr && *path != '\0') {
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
  static const struct {
    const char* env;
    const char* key;
  } kEnvKeys[] = {
      {"VGPU_MEMORY_QUOTA", "memory_quota"},
      {"VGPU_MANAGED", "managed"},
      {"VGPU_POLICY", "policy"},
      {"VGPU_LEDGER", "ledger"},
      {"VGPU_LOG", "log"},
      {"VGPU_SLOT_ID", "slot_id"},
      {"VGPU_ALLOW_UNKNOWN_DRIVER", "allow_unknown_driver"},
  };
  for (const auto& e : kEnvKeys) {
    const char* v = getenv_fn(e.env);
    if (v == nullptr) {
      continue;
    }
    std::string err = ApplyConfigKey(cfg, e.key, Trim(v));
    if (!err.empty()) {
      return std::string(e.env) + ": " + err;
    }
  }
  return "";
}

const char* ManagedPolicyName(ManagedPolicy p) {
  switch (p) {
    case ManagedPolicy::kRefuse:
      return "refuse";
    case ManagedPolicy::kAllowUncounted:
      return "allow-uncounted";
    case ManagedPolicy::kDefault:
      break;
  }
  return "default";
}

const char* UnknownPolicyName(UnknownPolicy p) {
  return p == UnknownPolicy::kStrict ? "strict" : "permissive";
}

}  // namespace vgpu::shim

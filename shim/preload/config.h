// The slot configuration libvgpu-shim.so runs under.
//
// Sources, later ones override earlier ones:
//   1. the file named by $VGPU_CONFIG (written by vgpu-manager in shim mode): `key = value`
//      lines, '#' starts a comment;
//   2. the environment: VGPU_MEMORY_QUOTA, VGPU_MANAGED, VGPU_POLICY, VGPU_LEDGER, VGPU_LOG,
//      VGPU_SLOT_ID, VGPU_ALLOW_UNKNOWN_DRIVER.
//
// Keys (file / env):
//   memory_quota         / VGPU_MEMORY_QUOTA          bytes, or with K/M/G/T (binary) suffix; 0 =
//   none managed              / VGPU_MANAGED               refuse | allow-uncounted (default:
//   refuse
//                                                      when a quota is set)
//   policy               / VGPU_POLICY                strict | permissive (unknown ioctls)
//   ledger               / VGPU_LEDGER                shared ledger file; default "ledger" beside
//                                                      the config file, none without a config
//   log                  / VGPU_LOG                   error | warn | info | debug (default warn)
//   slot_id              / VGPU_SLOT_ID               number used in log lines
//   allow_unknown_driver / VGPU_ALLOW_UNKNOWN_DRIVER  0 | 1
// vgpu-manager's own key names (daemon/slots/slot_config_file.cc) are read too:
//   version (must be 1), memory_quota_bytes, managed_policy, unknown_policy (refuse = strict,
//   allow-log = permissive).
// Other keys in the file are kept (`extra`) for the compute-share thread (shim/compute).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace vgpu::shim {

enum class LogLevel : int { kError = 3, kWarn = 4, kInfo = 6, kDebug = 7 };
enum class ManagedPolicy { kDefault, kRefuse, kAllowUncounted };
enum class UnknownPolicy { kStrict, kPermissive };

struct SlotConfig {
  uint32_t slot_id = 0;
  uint64_t memory_quota = 0;
  ManagedPolicy managed = ManagedPolicy::kDefault;
  UnknownPolicy unknown = UnknownPolicy::kStrict;
  bool allow_unknown_driver = false;
  LogLevel log = LogLevel::kWarn;
  std::string config_path;  // "" when none
  std::string ledger_path;  // "" = process-local accounting only
  std::map<std::string, std::string> extra;
};

// "4G", "4096M", "4294967296", "1.5G" is refused (integers only). nullopt on bad input.
std::optional<uint64_t> ParseBytes(const std::string& text);

// Applies one key; returns "" or an error naming the key and the bad value.
[[nodiscard]] std::string ApplyConfigKey(SlotConfig& cfg, const std::string& key,
                                         const std::string& value);

// Parses config-file text into `cfg`; returns "" or "line N: <error>".
[[nodiscard]] std::string ParseConfigText(SlotConfig& cfg, const std::string& text);

// Environment lookup, injectable for tests.
using GetEnvFn = const char* (*)(const char*);

// Loads file then env. Returns "" or an error; on error `cfg` holds what parsed so far, and the
// caller decides (the shim refuses every NVIDIA open rather than run unlimited).
[[nodiscard]] std::string LoadSlotConfig(SlotConfig& cfg, GetEnvFn getenv_fn);

const char* ManagedPolicyName(ManagedPolicy p);
const char* UnknownPolicyName(UnknownPolicy p);

}  // namespace vgpu::shim

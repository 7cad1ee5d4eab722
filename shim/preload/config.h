// The slot configuration libvgpu-shim.so runs under.
//
// Sources:
//   1. the file named by $VGPU_CONFIG (written by vgpu-manager in shim mode): `key = value`
//      lines, '#' starts a comment;
//   2. without $VGPU_CONFIG only: the environment (for running the shim by hand). With a slot
//      config in force, the environment cannot change it: every variable below except VGPU_LOG
//      is ignored (and named in `ignored_env`, which the shim logs), as is VGPU_SHIM_PASSTHROUGH
//      (shim.cc). A tenant sets its own environment; the slot's limits are the manager's.
//
// Keys (file / env):
//   every slot setting of uapi/vgpu_slot_fields.h, by its name and its row's env variable:
//     mem_quota       / VGPU_MEMORY_QUOTA   bytes, optionally with K/M/G/T (binary); 0 = none
//     compute_share   / VGPU_COMPUTE_SHARE  percent 1..100
//     compute_mode    / VGPU_COMPUTE_MODE   cap | weight
//     compute_ref_clock_mhz / VGPU_COMPUTE_REF_CLOCK_MHZ  0..10000 (0: unknown, the shim probes)
//     managed_policy  / VGPU_MANAGED        refuse | allow-uncounted (default: the core decides)
//     unknown_policy  / VGPU_POLICY         refuse | allow-log
//   ledger               / VGPU_LEDGER                shared ledger file (absolute path); default
//                                                     "ledger" beside the config file, none
//                                                     without a config
//   log                  / VGPU_LOG                   error | warn | info | debug (default warn)
//   slot_id              / VGPU_SLOT_ID               number used in log lines
//   gpu_index            file only: the minor of the slot GPU's /dev/nvidiaN, as vgpu-manager
//                        writes it (daemon/slots/slot_config_file.h) and vgpu.ko takes it: the
//                        shim confines the slot to that GPU (shim.cc, FindSlotGpuId); absent:
//                        not confined (logged)
//   allow_unknown_driver / VGPU_ALLOW_UNKNOWN_DRIVER  0 | 1
//   version              the manager's file format (daemon/slots/slot_config_file.h); if given,
//                        it must be 2
// Keys a setting had before the schema (memory_quota, memory_quota_bytes, compute_share_percent,
// managed, policy) are refused by name: a setting left unread must never mean "unlimited".
// Other keys are kept in `extra` for the compute-share thread (shim/compute), which reads the
// settings there too, as canonical text (PublishSettings).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "uapi/vgpu_slot_fields.h"

namespace vgpu::shim {

enum class LogLevel : int { kError = 3, kWarn = 4, kInfo = 6, kDebug = 7 };

namespace slot_schema {
using u32 = uint32_t;
using u64 = uint64_t;
}  // namespace slot_schema

struct SlotConfig {
  uint32_t slot_id = 0;
  // The slot's settings: one member per schema row, with the row's default. An enum setting
  // holds its uapi value (enum vgpu_compute_mode, vgpu_managed_policy, vgpu_unknown_policy).
#define VGPU_SETTING_MEMBER(field, wire, unit, def, min, max, attr, env) \
  slot_schema::wire field = def;
  VGPU_SLOT_NUMBERS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
#define VGPU_SETTING_MEMBER(field, type, values, def, max, attr, env) uint32_t field = def;
  VGPU_SLOT_ENUMS(VGPU_SETTING_MEMBER)
#undef VGPU_SETTING_MEMBER
  // The minor of the slot GPU's /dev/nvidiaN (the config's gpu_index); nullopt: not named.
  std::optional<uint32_t> gpu_index;
  bool allow_unknown_driver = false;
  LogLevel log = LogLevel::kWarn;
  std::string config_path;  // "" when none
  std::string ledger_path;  // "" = process-local accounting only
  std::map<std::string, std::string> extra;
  std::vector<std::string> ignored_env;  // variables set but ignored under a slot config
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

// Loads the file, or without one the environment, then publishes the settings into `extra`.
// Returns "" or an error; on error `cfg` holds what parsed so far, and the caller decides (the
// shim refuses every NVIDIA open rather than run unlimited).
[[nodiscard]] std::string LoadSlotConfig(SlotConfig& cfg, GetEnvFn getenv_fn);

// Writes every setting's canonical text ("30", "weight", ...) into cfg.extra under its name,
// where the compute-share thread reads them (vshim_config_get).
void PublishSettings(SlotConfig& cfg);

// The name of an enum setting's value ("refuse", "cap", "default" for 0), by setting name.
const char* SettingValueName(const char* field, uint32_t value);

}  // namespace vgpu::shim

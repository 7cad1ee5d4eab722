// The shim backend's slot config file: the contract between vgpu-manager and libvgpu-shim.so.
//
// Location: <virtual-manager-path>/slots/<id>/config on the host, mounted read-write at
// /etc/vgpu in the container (the shim keeps its crash-safe ledger beside it); the container
// gets VGPU_CONFIG=/etc/vgpu/config. Written atomically (temp file, fsync, rename), so a reader
// sees the old or the new file, never a torn one.
//
// Format: UTF-8 text, one `key=value` per line, no spaces around `=`, `#` starts a comment
// line, unknown keys are ignored by readers (append-only), every key below is always written:
//
//   version=1
//   slot_id=3                        decimal u32
//   slot_name=g0-m17-n8              identity key (see daemon/alloc/device_ids.h)
//   gpu_index=0                      minor of the real /dev/nvidiaN
//   gpu_uuid=GPU-...                 may be empty
//   memory_quota_bytes=2147483648    decimal u64; 0 = unlimited
//   compute_share_percent=30         decimal 1..100
//   managed_policy=refuse            refuse | allow-uncounted   (enum vgpu_managed_policy)
//   unknown_policy=refuse            refuse | allow-log         (enum vgpu_unknown_policy)
//   exclusive=0                      1 for a whole-GPU slot
#pragma once

#include <string>
#include <string_view>

#include "vgpu/slots/slot.h"
#include "vgpu/status.h"

namespace vgpu::slots {

inline constexpr int kSlotConfigVersion = 1;
inline constexpr std::string_view kSlotConfigFileName = "config";
inline constexpr std::string_view kSlotConfigContainerDir = "/etc/vgpu";
inline constexpr std::string_view kSlotConfigEnv = "VGPU_CONFIG";

std::string FormatSlotConfigFile(const SlotConfig& config);
// Errors name the line and key: "line 4: memory_quota_bytes: not a number 'x'".
Result<SlotConfig> ParseSlotConfigFile(std::string_view text);

}  // namespace vgpu::slots

// The shim backend's slot config file: the contract between vgpu-manager and libvgpu-shim.so.
//
// Location: <slot-path>/slots/<id>/config on the host, mounted read-only at
// /etc/vgpu in the container, which gets VGPU_CONFIG=/etc/vgpu/config. The shim's ledger lives
// in its own read-write directory (shim_backend.h), named by the `ledger` key. Created in place
// in the slot's new directory, before any container can see it; changed atomically (temp file,
// rename inside the slot directory's fd), so a reader sees the old or the new file, never a torn
// one.
//
// Format: UTF-8 text, one `key=value` per line, no spaces around `=`, `#` starts a comment
// line, unknown keys are ignored by readers (append-only), every key below is always written:
//
//   version=2
//   slot_id=3                        decimal u32
//   slot_name=g0-m17-n8              identity key (see daemon/alloc/device_ids.h)
//   gpu_index=0                      minor of the real /dev/nvidiaN: the GPU the shim confines
//                                    the slot to (it asks the driver's CARD_INFO for its id)
//   gpu_uuid=GPU-...                 may be empty
//   exclusive=0                      1 for a whole-GPU slot
//   ledger=/run/vgpu/ledger          the shim's ledger, as the container sees it
//   <one line per slot setting>      uapi/vgpu_slot_fields.h: mem_quota=..., compute_share=...,
//                                    compute_mode=cap|weight, managed_policy=...,
//                                    unknown_policy=...
//
// Version 1 (before the schema) spelled the share `compute_share_percent`, which no shim read,
// and the quota `memory_quota_bytes`; both sides refuse the other's version rather than run a
// slot with a setting unread.
#pragma once

#include <string>
#include <string_view>

#include "vgpu/slots/slot.h"
#include "vgpu/status.h"

namespace vgpu::slots {

inline constexpr int kSlotConfigVersion = 2;
inline constexpr std::string_view kSlotConfigFileName = "config";
inline constexpr std::string_view kSlotConfigContainerDir = "/etc/vgpu";
inline constexpr std::string_view kSlotConfigEnv = "VGPU_CONFIG";
// The shim's ledger: its own read-write directory, mounted here in the container.
inline constexpr std::string_view kLedgerContainerDir = "/run/vgpu";
inline constexpr std::string_view kLedgerFileName = "ledger";

std::string FormatSlotConfigFile(const SlotConfig& config);
// Errors name the line or key: "compute_share: '0' is not a number in 1..100". Every key the
// writer writes is required.
Result<SlotConfig> ParseSlotConfigFile(std::string_view text);

}  // namespace vgpu::slots

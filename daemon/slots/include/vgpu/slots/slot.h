// A slot is one tenant's view of one GPU: a memory quota, a compute share and two policies,
// enforced either by vgpu.ko (kmod backend, uapi/vgpu_genl.h) or by libvgpu-shim.so reading the
// slot's config directory (shim backend, slot_config_file.h). SlotBackend hides which.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/slot_settings.h"
#include "vgpu/status.h"

namespace vgpu::slots {

// The schema's enums (uapi/vgpu_slot_fields.h, daemon/common slot_settings.h).
using vgpu::ComputeMode;
using vgpu::ManagedPolicy;
using vgpu::UnknownPolicy;

// What a backend enforces for one slot: the slot's identity plus its settings (one member per
// row of uapi/vgpu_slot_fields.h: mem_quota, compute_share, compute_mode, managed_policy,
// unknown_policy).
struct SlotConfig : SlotSettings {
  uint32_t id = 0;         // assigned by the backend at creation (kmod: the module's slot id)
  std::string name;        // identity key derived from the memory IDs, e.g. "g0-m17-n8"
  uint32_t gpu = 0;        // minor of the real /dev/nvidiaN
  std::string gpu_uuid;    // informational, for env and logs
  bool exclusive = false;  // whole-GPU slot

  bool operator==(const SlotConfig&) const = default;
};

struct DeviceNode {
  std::string host_path;
  std::string container_path;
  std::string permissions = "rw";
  bool operator==(const DeviceNode&) const = default;
};

struct BindMount {
  std::string host_path;
  std::string container_path;
  bool read_only = true;
  bool operator==(const BindMount&) const = default;
};

// How a container reaches its slot: device nodes, mounts, environment.
struct ContainerEdits {
  std::vector<DeviceNode> devices;
  std::vector<BindMount> mounts;
  std::map<std::string, std::string> envs;
};

// What the enforcement backend has counted for one slot. Fields a backend does not know stay
// zero: the shim's ledger (uapi/vgpu_ledger.h, read through shim/ledger/ledger_reader.h) holds the
// charged bytes and peak and the compute counters its members' controllers publish once a second (a
// dead member's are kept in the ledger's accumulators, so the totals never go down), but not
// denials or unknown ioctls; vgpu.ko (uapi/vgpu_genl.h VGPU_STAT_*) knows them all. The compute
// counters are 0 while a slot is not under control (share 100 in cap mode).
struct SlotUsage {
  uint64_t memory_charged_bytes = 0;   // bytes charged to the slot's live processes now
  uint64_t memory_peak_bytes = 0;      // highest charge seen over the slot's life
  uint64_t memory_denials = 0;         // allocations refused for the quota (kmod only)
  uint64_t unknown_ioctls = 0;         // ioctls the ABI table does not know (kmod only)
  uint64_t gpu_busy_ns = 0;            // GPU time the slot's channel groups used
  uint64_t throttled_ns = 0;           // time gated off (shim: summed over member processes)
  uint32_t achieved_share_1s_pm = 0;   // achieved share of the GPU over the last 1 s, permille
  uint32_t achieved_share_10s_pm = 0;  // the same over the last 10 s

  bool operator==(const SlotUsage&) const = default;
};

class SlotBackend {
 public:
  virtual ~SlotBackend() = default;
  virtual std::string_view Kind() const = 0;  // "kmod" | "shim" | "fake"
  // Creates the slot described by `config` (its id is ignored) and returns the new slot's id.
  virtual Result<uint32_t> Create(const SlotConfig& config) = 0;
  // Re-creates a slot the checkpoint has and the backend lost (a shim slot dir on a tmpfs
  // after a reboot) at its recorded id where the backend can, so that grants handed out before
  // (the kubelet keeps a container's mounts) still name it; returns the id it got.
  virtual Result<uint32_t> Restore(const SlotConfig& config) { return Create(config); }
  // Replaces quota, share and policies of slot `config.id`.
  virtual Status Update(const SlotConfig& config) = 0;
  // Destroys slot `id`. A slot with processes still attached fails with kUnavailable.
  virtual Status Destroy(uint32_t id) = 0;
  // Every live slot, in id order.
  virtual Result<std::vector<SlotConfig>> List() = 0;
  // Slots the last List() found but could not read (a shim slot's config that no longer
  // parses): left out of List(), for the manager to restore from its checkpoint by id.
  virtual std::vector<uint32_t> DamagedSlots() { return {}; }
  virtual ContainerEdits Edits(const SlotConfig& config) const = 0;
  // The backend's counters for live slot `id`. A slot with nothing counted yet reads as zero
  // usage; an unreadable or corrupt source is an error naming it.
  virtual Result<SlotUsage> Usage(uint32_t id) = 0;
};

}  // namespace vgpu::slots

// Shim backend: a slot is a directory <root>/<id>/ holding the config file that
// libvgpu-shim.so reads (slot_config_file.h), mounted read-only in the container, and a
// directory <ledger_root>/<id>/ for the shim's ledger, the one place the container writes. The
// directories are the slot: they survive a manager restart, so List() is how the manager
// reattaches.
//
// The manager is privileged and the ledger directory is the tenant's: nothing here follows a
// path a tenant could have planted. Files are written through the slot directory's fd
// (openat O_CREAT|O_EXCL|O_NOFOLLOW of a fresh temp name, renameat over the target, which
// replaces a link instead of following it), read with O_NOFOLLOW, and a config that does not
// parse is reported by DamagedSlots(), never as a failure of List().
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "vgpu/slots/slot.h"

namespace vgpu::slots {

struct ShimBackendOptions {
  std::filesystem::path root;          // <virtual-manager-path>/slots
  std::string shim_library_host = {};  // host path of libvgpu-shim.so; empty = not mounted
  std::string shim_library_container = "/usr/local/vgpu/libvgpu-shim.so";
  // <virtual-manager-path>/ledgers; empty: <root>/.ledgers (never a slot id, so never listed)
  std::filesystem::path ledger_root = {};
};

class ShimSlotBackend final : public SlotBackend {
 public:
  explicit ShimSlotBackend(ShimBackendOptions options);
  std::string_view Kind() const override { return "shim"; }
  Result<uint32_t> Create(const SlotConfig& config) override;
  // At `config.id` when that directory is free (a wiped tmpfs after a reboot), else as Create.
  Result<uint32_t> Restore(const SlotConfig& config) override;
  Status Update(const SlotConfig& config) override;
  Status Destroy(uint32_t id) override;
  Result<std::vector<SlotConfig>> List() override;
  std::vector<uint32_t> DamagedSlots() override;
  ContainerEdits Edits(const SlotConfig& config) const override;
  // Reads <ledger dir>/ledger, the shim's shared ledger, read-only and without its lock (a
  // snapshot, at worst a moment stale): memory charged and peak, and the compute counters the
  // slot's controllers publish (busy, throttled, achieved share; uapi/vgpu_ledger.h).
  // Missing ledger = no process has run yet = zero. A ledger of another version is an error
  // naming both versions.
  Result<SlotUsage> Usage(uint32_t id) override;

  std::filesystem::path SlotDir(uint32_t id) const;
  std::filesystem::path LedgerDir(uint32_t id) const;
  // Where the shim keeps slot `id`'s ledger (the config's `ledger` key names it in the container).
  std::filesystem::path LedgerPath(uint32_t id) const;

 private:
  Status WriteConfig(const SlotConfig& config);
  // Makes both roots and reads which ids are taken into used_.
  Status ScanIdsLocked();
  // Slot dir, fresh ledger dir and config; at `wanted` only (kAlreadyExists when taken) or at
  // the lowest free id.
  Result<uint32_t> MakeSlotLocked(const SlotConfig& config, std::optional<uint32_t> wanted);
  std::filesystem::path LedgerRoot() const;
  ShimBackendOptions options_;
  std::mutex mu_;                  // serializes id choice and directory creation
  std::vector<uint32_t> damaged_;  // guarded by mu_: found by the last List()
  std::set<uint32_t> used_;        // guarded by mu_: slot ids whose directory exists
  bool scanned_ = false;           // guarded by mu_: used_ was read from the root
};

// How far WriteFileAtomically's write must have reached when it returns.
enum class Durability {
  // Survives power loss: the temp file is fsynced before the rename, the directory after it.
  // For what nothing else can rebuild: the checkpoint.
  kPowerLoss,
  // Survives the writer's death (SIGKILL, a restart) but not necessarily power loss: temp file
  // and rename, no flush. For files derived from the checkpoint and rewritten after a crash: a
  // shim slot's config (start-up reconciliation restores a torn or missing one from the
  // checkpoint, daemon/manager/reconcile.cc) and a DRA claim's CDI spec (every prepare rewrites
  // it, and the kubelet prepares again after a reboot). Each flush costs 0.6-3 ms on a node's
  // disk (docs/results/dra.md), on the path a pod waits on.
  kProcessDeath,
};

// Creates `path` (O_EXCL|O_NOFOLLOW: never an existing file or link) and writes `data`, without
// temp file or flush: for a file in a directory just made, that nobody else can see yet.
Status WriteNewFile(const std::filesystem::path& path, std::string_view data);

// Writes `data` to `path` atomically: a fresh temp file created in the same directory through
// the directory's fd (O_EXCL|O_NOFOLLOW: never through a link someone planted), renameat over
// `path` (a link there is replaced, not followed), flushed as `durability` says. The directory
// itself is opened with O_NOFOLLOW. Shared by the shim backend, the checkpoint and the CDI specs.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view data,
                           Durability durability = Durability::kPowerLoss);

}  // namespace vgpu::slots

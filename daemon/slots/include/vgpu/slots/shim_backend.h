// Shim backend: a slot is a directory <root>/<id>/ holding the config file that
// libvgpu-shim.so reads (slot_config_file.h). The directory is the slot: it survives a manager
// restart, so List() is how the manager reattaches.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>

#include "vgpu/slots/slot.h"

namespace vgpu::slots {

struct ShimBackendOptions {
  std::filesystem::path root;     // <virtual-manager-path>/slots
  std::string shim_library_host;  // host path of libvgpu-shim.so; empty = not mounted
  std::string shim_library_container = "/usr/local/vgpu/libvgpu-shim.so";
};

class ShimSlotBackend final : public SlotBackend {
 public:
  explicit ShimSlotBackend(ShimBackendOptions options);
  std::string_view Kind() const override { return "shim"; }
  Result<uint32_t> Create(const SlotConfig& config) override;
  Status Update(const SlotConfig& config) override;
  Status Destroy(uint32_t id) override;
  Result<std::vector<SlotConfig>> List() override;
  ContainerEdits Edits(const SlotConfig& config) const override;
  // Reads <slot dir>/ledger, the shim's shared ledger, read-only and without its lock (a
  // snapshot, at worst a moment stale): memory charged and peak, and the compute counters the
  // slot's controllers publish (busy, throttled, achieved share; uapi/vgpu_ledger.h).
  // Missing ledger = no process has run yet = zero. A ledger of another version is an error
  // naming both versions.
  Result<SlotUsage> Usage(uint32_t id) override;

  std::filesystem::path SlotDir(uint32_t id) const;
  // Where the shim keeps slot `id`'s ledger: "ledger" beside the config (shim/preload/config.cc).
  std::filesystem::path LedgerPath(uint32_t id) const;

 private:
  Status WriteConfig(const SlotConfig& config);
  ShimBackendOptions options_;
  std::mutex mu_;  // serializes id choice and directory creation
};

// Writes `data` to `path` atomically: temp file in the same directory, fsync, rename, fsync of
// the directory. Shared by the shim backend and the checkpoint.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view data);

}  // namespace vgpu::slots

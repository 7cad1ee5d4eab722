// SlotManager: the manager's state and every decision about slots. The gRPC device-plugin
// services, the standalone control API and the metrics exporter all call into it; it owns no
// sockets. Thread-safe: one mutex serializes every change (Allocate is short and never waits on
// the kubelet, shared/reference/device-plugin-api.md §2.5), and the checkpoint is written
// before any change is reported as done.
//
// Identity: the memory IDs the kubelet picked define a slot (daemon/alloc/device_ids.h), so
// Allocate needs no pod lookup; PreStartContainer links the slot to its container and core
// share through the pod-resources API, which lists both resources' IDs by then (§2.5, §2.7).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "vgpu/alloc/device_ids.h"
#include "vgpu/alloc/inventory.h"
#include "vgpu/alloc/placement.h"
#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/podresources/pod_resources.h"
#include "vgpu/slots/slot.h"
#include "vgpu/slots/slot_record.h"
#include "vgpu/status.h"

namespace vgpu::manager {

using Clock = std::function<std::chrono::steady_clock::time_point()>;
using alloc::ResourceKind;

struct ManagerOptions {
  uint64_t memory_unit_bytes = 256ull << 20;
  std::string core_resource = "tencent.com/vcuda-core";
  std::string memory_resource = "tencent.com/vcuda-memory";
  std::string gpu_resource = "tencent.com/vcuda-gpu";
  slots::ManagedPolicy managed_policy = slots::ManagedPolicy::kRefuse;
  slots::UnknownPolicy unknown_policy = slots::UnknownPolicy::kRefuse;
  std::chrono::seconds orphan_grace{30};  // --allocation-check-period
  std::string cdi_kind;                   // "vendor.com/class"; empty: no CDI names
  // With cdi_kind: each slot's edits are also written as a CDI spec (cdiVersion 0.5.0, one
  // device "slot<ID>") into this directory, so runtimes that resolve CDI names find them
  // (shared/reference/device-plugin-api.md §5); removed with the slot.
  std::string cdi_spec_dir = "/var/run/cdi";
  std::string driver_library_dir;         // mounted at /usr/local/nvidia when it exists
  slots::ContainerEdits extra;            // --extra-config, added to every container
  // Test seam for crash-consistency tests: called at named points ("after-slot-create",
  // "after-checkpoint"); the manager binary kills itself there when told to by environment.
  std::function<void(std::string_view point)> crash_point;
};

// What a container gets from one Allocate.
struct Grant {
  slots::ContainerEdits edits;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

struct DeviceEntry {
  std::string id;
  bool healthy = true;
  int numa = -1;
};

struct ReconcileReport {
  int restored = 0;   // checkpoint record with its live slot
  int recreated = 0;  // checkpoint record whose slot was gone: created again
  int adopted = 0;    // live slot missing from the checkpoint (crash between create and save)
  int relinked = 0;   // records whose owner/core share was refreshed from pod-resources
  int destroyed = 0;  // duplicate live slots removed
  bool checkpoint_found = false;
  std::string checkpoint_corrupt;  // reason, when the checkpoint was corrupt
  std::string kept_aside;
  bool pod_resources_ok = false;
  std::string ToString() const;
};

class SlotManager {
 public:
  SlotManager(ManagerOptions options, std::vector<alloc::GpuInfo> gpus, slots::SlotBackend& backend,
              checkpoint::CheckpointStore& store, podresources::PodResourcesSource* pod_resources,
              std::unique_ptr<alloc::Placer> placer, Clock clock);
  // Writes the last state out before returning.
  ~SlotManager();
  SlotManager(const SlotManager&) = delete;
  SlotManager& operator=(const SlotManager&) = delete;

  // Start-up: checkpoint + live slots + pod-resources -> one consistent state, saved.
  // Starts the checkpoint writer.
  Result<ReconcileReport> Reconcile();

  // Checkpoint writes are asynchronous on the Allocate path: the live slots (module or slot
  // directories) and the kubelet's pod-resources are the truth Reconcile rebuilds from, so the
  // checkpoint need not be durable before Allocate answers, and a coalescing writer keeps an
  // O(slots) file write off the kubelet's admission path. Waits until every change made so far
  // is on disk; false on timeout (the writer logs why it is failing).
  bool FlushCheckpoint(std::chrono::milliseconds timeout);

  const std::string& ResourceName(ResourceKind kind) const;
  uint32_t MemoryUnitsPerGpu(uint32_t gpu) const;
  // Every ID of a resource, with health (an ID is advertised unhealthy when its GPU is, or when
  // the GPU is held in the other mode: whole vs shared, so the kubelet does not pick it).
  std::vector<DeviceEntry> Devices(ResourceKind kind) const;

  Result<Grant> Allocate(ResourceKind kind, const std::vector<std::string>& ids);
  // GetPreferredAllocation: `size` IDs of `available`, all on one GPU the placer chose (or
  // the GPU of `must_include`).
  Result<std::vector<std::string>> Preferred(ResourceKind kind,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size);
  Status PreStart(ResourceKind kind, const std::vector<std::string>& ids);

  // Reclaims slots whose IDs the kubelet no longer lists for orphan_grace. Returns how many.
  Result<int> ReclaimOrphans();

  // Standalone mode: slots made by hand, with IDs taken from the same ID space.
  Result<slots::SlotRecord> CreateManual(std::optional<uint32_t> gpu, uint64_t memory_bytes,
                                         uint32_t core_percent, std::string label);
  Status DeleteSlot(uint32_t id);

  // Read-only view for metrics, the control API and tests; in id order.
  std::vector<slots::SlotRecord> Snapshot() const;
  // The enforcement backend's counters for slot `id` (metrics). Not under mu_: the backend
  // serializes itself, and a slot destroyed meanwhile just reads as an error.
  Result<slots::SlotUsage> SlotUsage(uint32_t id) const { return backend_.Usage(id); }

  struct AllocationCounters {
    uint64_t allocations = 0;          // Allocate calls that succeeded
    uint64_t allocation_failures = 0;  // Allocate calls refused
  };
  AllocationCounters Counters() const;

  // Health (from daemon/health): bumps the generation ListAndWatch waits on.
  void SetGpuHealth(uint32_t gpu, bool healthy);
  std::map<uint32_t, bool> GpuHealth() const;
  uint64_t Generation() const;
  // Waits until Generation() != seen or timeout; returns the current generation.
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const;

  const std::vector<alloc::GpuInfo>& gpus() const { return gpus_; }
  std::string_view placer_name() const { return placer_->Name(); }
  std::string_view backend_kind() const { return backend_.Kind(); }

 private:
  struct Tracked {
    slots::SlotRecord record;
    std::chrono::steady_clock::time_point created;
    std::optional<std::chrono::steady_clock::time_point> unlisted_since;
    // The checkpoint encoding of `encoded_record`; re-encoded only when record changes.
    slots::SlotRecord encoded_record;
    std::shared_ptr<const std::string> encoded;
  };

  const alloc::GpuInfo* FindGpu(uint32_t index) const;
  Result<Grant> AllocateUncounted(ResourceKind kind, const std::vector<std::string>& ids);
  // Encodes changed records and hands the state to the writer (returns at once).
  Status SaveLocked();
  // Same, and writes it before returning (start-up, standalone API).
  Status SaveNowLocked();
  std::vector<std::shared_ptr<const std::string>> EncodeLocked();
  void WriterLoop();
  Grant MakeGrant(const slots::SlotRecord& r) const;
  std::string CdiSpecPath(uint32_t slot_id) const;
  Status WriteCdiSpec(const slots::SlotRecord& r) const;
  std::vector<alloc::GpuLoad> LoadsLocked() const;
  Status DestroyLocked(uint32_t id, std::string_view reason);
  Status LinkLocked(Tracked& t, const podresources::ContainerAssignment& owner, bool* changed);
  Result<Grant> AllocateMemoryLocked(const alloc::IdSet& set, const std::vector<std::string>& ids);
  Result<Grant> AllocateWholeLocked(uint32_t gpu, const std::string& id);
  void BumpLocked();

  ManagerOptions options_;
  std::vector<alloc::GpuInfo> gpus_;
  slots::SlotBackend& backend_;
  checkpoint::CheckpointStore& store_;
  podresources::PodResourcesSource* pod_resources_;  // null in standalone mode
  std::unique_ptr<alloc::Placer> placer_;
  Clock clock_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  std::map<uint32_t, Tracked> slots_;     // by backend slot id; guarded by mu_
  std::map<uint32_t, bool> gpu_healthy_;  // guarded by mu_
  uint64_t generation_ = 1;               // guarded by mu_
  AllocationCounters counters_;           // guarded by mu_
  // Checkpoint writer. Lock order: mu_, then write_mu_ (the writer thread takes write_mu_ alone).
  std::vector<std::shared_ptr<const std::string>> pending_;  // guarded by mu_
  uint64_t save_seq_ = 0;                                    // guarded by mu_
  bool stopping_ = false;                                    // guarded by mu_
  std::condition_variable writer_wake_;
  mutable std::condition_variable written_;
  std::mutex write_mu_;                   // one writer of the file at a time
  std::atomic<uint64_t> written_seq_{0};  // highest save_seq_ on disk; set under write_mu_
  std::thread writer_;
  // GetPreferredAllocation is called per resource, in random order (§2.5): remember the GPU
  // chosen for one resource so the other resource of the same container lands on it too.
  struct PendingPick {
    ResourceKind kind;
    uint32_t gpu;
    std::chrono::steady_clock::time_point at;
  };
  std::optional<PendingPick> pending_pick_;  // guarded by mu_
};

}  // namespace vgpu::manager

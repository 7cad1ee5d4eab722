// SlotManager: every decision about slots. The gRPC device-plugin services, the standalone
// control API and the metrics exporter all call into it; it owns no sockets. Thread-safe: one
// mutex serializes every change (Allocate is short and never waits on the kubelet,
// docs/reference/device-plugin-api.md §2.5). It delegates the parts with one job each:
// SlotTable (the slots and what changed), GrantBuilder (container edits, CDI specs),
// PreferredPicker (GetPreferredAllocation), checkpoint::CheckpointWriter (group-committed
// journal). Its methods live in slot_manager.cc (state, health, destroy, orphans), allocate.cc
// (Allocate, GetPreferredAllocation), link.cc (PreStartContainer) and reconcile.cc (start-up,
// standalone slots).
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
#include "vgpu/checkpoint/checkpoint_writer.h"
#include "vgpu/manager/grant_builder.h"
#include "vgpu/manager/manager_options.h"
#include "vgpu/manager/preferred.h"
#include "vgpu/manager/slot_table.h"
#include "vgpu/podresources/pod_annotations.h"
#include "vgpu/podresources/pod_resources.h"
#include "vgpu/slots/slot.h"
#include "vgpu/slots/slot_record.h"
#include "vgpu/status.h"

namespace vgpu::manager {

using alloc::ResourceKind;

struct DeviceEntry {
  std::string id;
  bool healthy = true;
  int numa = -1;
};

// What one DRA allocation result asks for (SlotManager::CreateForClaim).
struct ClaimSlotRequest {
  std::string name;  // unique per claim and result: the idempotency key
  uint32_t gpu = 0;
  bool exclusive = false;     // whole GPU: no quota, full share
  uint64_t memory_bytes = 0;  // shares: rounded up to the memory unit
  uint32_t core_percent = 100;
  slots::ComputeMode compute_mode = slots::ComputeMode::kCap;
  slots::ManagedPolicy managed_policy = slots::ManagedPolicy::kRefuse;
  std::string claim_namespace, claim_name;
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

  // Checkpoint writes are asynchronous on the Allocate path: each change queues one journal
  // entry and the writer thread group-commits them (checkpoint_writer.h says why that is safe).
  // Waits until every change made so far is on disk; false on timeout (the writer logs why it
  // is failing).
  bool FlushCheckpoint(std::chrono::milliseconds timeout);
  // The checkpoint writer's batches, entries, compactions and failures so far.
  checkpoint::CheckpointWriter::Counters CheckpointCounters() const { return writer_.counters(); }

  const std::string& ResourceName(ResourceKind kind) const;
  uint32_t MemoryUnitsPerGpu(uint32_t gpu) const;
  // Every ID of a resource, with health (an ID is advertised unhealthy when its GPU is, or when
  // the GPU is held in the other mode: whole vs shared, so the kubelet does not pick it).
  std::vector<DeviceEntry> Devices(ResourceKind kind) const;

  // Memory IDs: the slot they define. Whole-GPU IDs: one exclusive slot per GPU (several GPUs
  // for one container are allowed). Core IDs: nothing yet (linked at PreStart).
  Result<Grant> Allocate(ResourceKind kind, const std::vector<std::string>& ids);
  // GetPreferredAllocation: `size` IDs of `available`, all on one GPU the placer chose (or
  // the GPU of `must_include`); for whole GPUs, the best-linked set of GPUs.
  Result<std::vector<std::string>> Preferred(ResourceKind kind,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size);
  Status PreStart(ResourceKind kind, const std::vector<std::string>& ids);

  // Reclaims slots whose IDs the kubelet no longer lists for orphan_grace. Returns how many.
  Result<int> ReclaimOrphans();

  // Standalone mode: slots made by hand, with IDs taken from the same ID space.
  Result<slots::SlotRecord> CreateManual(std::optional<uint32_t> gpu, uint64_t mem_quota,
                                         uint32_t compute_share, ComputeMode compute_mode,
                                         std::string label);
  Status DeleteSlot(uint32_t id);

  // DRA claims (daemon/dra): a slot named by the caller, with the quota and share the
  // scheduler allocated. Idempotent: a slot of that name with the same enforcement is returned
  // as it is; one with different settings is kFailedPrecondition. The node re-checks what the
  // scheduler booked: a whole GPU needs a GPU without slots, a share needs a GPU not held whole
  // whose quotas and shares still fit (kResourceExhausted otherwise). The record is on disk
  // before this returns, so a prepared claim survives SIGKILL. Claim slots are never reclaimed
  // as orphans (manual), their owner is the claim (pod_namespace/pod_name).
  Result<slots::SlotRecord> CreateForClaim(const ClaimSlotRequest& request);
  // Destroys the slot named `name`; OK when there is none (unprepare is idempotent).
  Status DestroyNamed(const std::string& name);
  // What a container of `slot` gets (the device plugin's grant, one definition).
  Grant GrantFor(const slots::SlotRecord& slot) const { return grants_.Make(slot); }

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

  // Where PreStartContainer reads the pod's annotations (the compute mode, kComputeModeAnnotation);
  // null (standalone, or no API access): every share is a cap. Set before serving.
  void SetPodAnnotations(podresources::PodAnnotationSource* source) { annotations_ = source; }

  // The reference clock of the GPU `gpu_uuid` changed (daemon/reference_clock): every slot on it
  // gets the new figure in its config, so processes started in it from now on measure work
  // against it (a running process keeps the reference it started with). Returns how many slots
  // were rewritten; a slot whose backend refuses the update keeps its old figure (logged).
  int ApplyReferenceClock(const std::string& gpu_uuid);

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
  const alloc::GpuInfo* FindGpu(uint32_t index) const;
  // The GPU's measured reference clock (options_.reference_clock_mhz), 0 when unknown.
  uint32_t ReferenceClockOf(const std::string& gpu_uuid) const;
  Result<Grant> AllocateUncounted(ResourceKind kind, const std::vector<std::string>& ids);
  // Queues the changed records' journal entries (returns at once).
  void SaveLocked();
  // Writes a snapshot of every record before returning (start-up, standalone API).
  Status SaveNowLocked();
  std::vector<alloc::GpuLoad> LoadsLocked() const;
  Status DestroyLocked(uint32_t id, std::string_view reason);
  // `mode`: the compute mode the pod chose, nullopt to keep the slot's (reconciliation).
  Status LinkLocked(TrackedSlot& t, const podresources::ContainerAssignment& owner,
                    std::optional<ComputeMode> mode, bool* changed);
  // The compute mode pod `owner` chose by annotation; cap when it chose none or the API cannot
  // say (logged); an error for a value that names no mode.
  Result<ComputeMode> ComputeModeOf(const podresources::ContainerAssignment& owner);
  // The slot(s) a container's pod-resources entry names; empty when none.
  std::vector<TrackedSlot*> SlotsOfLocked(const podresources::ContainerAssignment& owner);
  Result<Grant> AllocateMemoryLocked(const alloc::IdSet& set, const std::vector<std::string>& ids);
  Result<Grant> AllocateWholeLocked(const std::vector<alloc::DeviceId>& gpus);
  Result<slots::SlotRecord> CreateForClaimUnsaved(slots::SlotConfig config,
                                                  const ClaimSlotRequest& request);
  void BumpLocked();

  ManagerOptions options_;
  std::vector<alloc::GpuInfo> gpus_;
  slots::SlotBackend& backend_;
  checkpoint::CheckpointStore& store_;
  podresources::PodResourcesSource* pod_resources_;  // null in standalone mode
  podresources::PodAnnotationSource* annotations_ = nullptr;
  std::unique_ptr<alloc::Placer> placer_;
  Clock clock_;
  GrantBuilder grants_;

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  SlotTable slots_;                       // guarded by mu_
  std::map<uint32_t, bool> gpu_healthy_;  // guarded by mu_
  uint64_t generation_ = 1;               // guarded by mu_
  AllocationCounters counters_;           // guarded by mu_
  PreferredPicker picker_;                // guarded by mu_
  // Lock order: mu_, then the writer's own locks; the writer calls back into mu_ only from its
  // thread with none of its locks held (checkpoint_writer.h).
  checkpoint::CheckpointWriter writer_;
};

}  // namespace vgpu::manager

// Slots for DRA claims (daemon/dra): created by name with the scheduler's allocation, checked
// against what the node still has, saved before the answer goes back to the kubelet.
#include "slot_manager_internal.h"
#include "vgpu/manager/log.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
// The writer retries a failing disk every second; the kubelet's own call times out sooner.
constexpr std::chrono::milliseconds kClaimFlushTimeout{5000};
}  // namespace

Result<SlotRecord> SlotManager::CreateForClaim(const ClaimSlotRequest& request) {
  const alloc::GpuInfo* gpu = FindGpu(request.gpu);
  if (gpu == nullptr) {
    return NotFoundError("gpu" + std::to_string(request.gpu) + " does not exist on this node");
  }
  slots::SlotConfig config;
  config.name = request.name;
  config.gpu = request.gpu;
  config.gpu_uuid = gpu->uuid;
  config.unknown_policy = options_.unknown_policy;
  config.exclusive = request.exclusive;
  config.compute_mode = request.compute_mode;
  config.compute_ref_clock_mhz = ReferenceClockOf(gpu->uuid);
  if (request.exclusive) {
    config.mem_quota = 0;  // unlimited: the claim has the GPU to itself
    config.compute_share = 100;
    config.managed_policy = slots::ManagedPolicy::kAllowUncounted;
  } else {
    if (request.memory_bytes == 0) {
      return InvalidArgumentError("memory: a share needs more than 0 bytes");
    }
    if (request.core_percent < 1 || request.core_percent > 100) {
      return InvalidArgumentError("cores: must be 1..100, got " +
                                  std::to_string(request.core_percent));
    }
    uint64_t unit = options_.memory_unit_bytes;
    config.mem_quota = (request.memory_bytes + unit - 1) / unit * unit;
    config.compute_share = request.core_percent;
    config.managed_policy = request.managed_policy;
  }
  auto record = CreateForClaimUnsaved(config, request);
  // Outside mu_: the writer's compaction takes it (checkpoint_writer.h). The journal entry is
  // written (group-committed with other claims') before the kubelet hears of the slot, so a
  // restart or SIGKILL of the manager finds it; the disk flush follows on the writer thread,
  // since after a crash of the node the kubelet prepares every claim again (docs/dra.md).
  if (record.ok() && !writer_.WaitWritten(kClaimFlushTimeout)) {
    return UnavailableError("the checkpoint for slot " + request.name +
                            " could not be written; the kubelet retries");
  }
  if (record.ok() && options_.crash_point) {
    options_.crash_point("after-checkpoint");
  }
  return record;
}

Result<SlotRecord> SlotManager::CreateForClaimUnsaved(slots::SlotConfig config,
                                                      const ClaimSlotRequest& request) {
  const alloc::GpuInfo* gpu = FindGpu(request.gpu);
  std::lock_guard lock(mu_);
  if (TrackedSlot* t = slots_.FindByName(request.name)) {
    config.id = t->record.config.id;
    // The reference clock is the GPU's, not the claim's: it may have changed since.
    config.compute_ref_clock_mhz = t->record.config.compute_ref_clock_mhz;
    if (!SameEnforcement(t->record.config, config) ||
        t->record.config.exclusive != config.exclusive) {
      return FailedPreconditionError("slot " + request.name + " exists with other settings (" +
                                     Describe(t->record) + ")");
    }
    return t->record;
  }
  uint64_t memory_used = 0;
  uint32_t cores_used = 0;
  for (const auto& [id, t] : slots_.all()) {
    const slots::SlotConfig& c = t.record.config;
    if (c.gpu != request.gpu) {
      continue;
    }
    if (c.exclusive || request.exclusive) {
      return ResourceExhaustedError("gpu" + std::to_string(request.gpu) + " is " +
                                    (c.exclusive ? "held whole" : "shared") + " by slot " +
                                    std::to_string(id) + " (" + Owner(t.record) + ")");
    }
    memory_used += c.mem_quota;
    cores_used += c.compute_share;
  }
  if (memory_used + config.mem_quota > gpu->memory_bytes) {
    return ResourceExhaustedError(
        "gpu" + std::to_string(request.gpu) + " has " +
        std::to_string((gpu->memory_bytes - std::min(memory_used, gpu->memory_bytes)) >> 20) +
        " MiB unbooked, the claim asks for " + std::to_string(config.mem_quota >> 20) + " MiB");
  }
  if (cores_used + config.compute_share > 100) {
    return ResourceExhaustedError("gpu" + std::to_string(request.gpu) + " has " +
                                  std::to_string(100 - std::min(cores_used, 100u)) +
                                  " % of its cores unbooked, the claim asks for " +
                                  std::to_string(config.compute_share) + " %");
  }
  bool was_idle = !slots_.AnyOnGpu(request.gpu);
  auto created = backend_.Create(config);
  if (!created.ok()) {
    return created.status().Annotate("creating the " + std::string(backend_.Kind()) + " slot " +
                                     request.name);
  }
  config.id = *created;
  if (options_.crash_point) {
    options_.crash_point("after-slot-create");
  }
  TrackedSlot t{SlotRecord{}, clock_(), std::nullopt};
  t.record.config = config;
  t.record.pod_namespace = request.claim_namespace;
  t.record.pod_name = request.claim_name;
  t.record.manual = true;  // the kubelet's unprepare ends it, never the orphan check
  t.record.linked = true;
  slots_.Put(t);
  SaveLocked();
  if (was_idle) {
    BumpLocked();
  }
  LogInfo("event=slot_created " + Describe(t.record));
  return t.record;
}

Status SlotManager::DestroyNamed(const std::string& name) {
  {
    std::lock_guard lock(mu_);
    TrackedSlot* t = slots_.FindByName(name);
    if (t == nullptr) {
      return OkStatus();
    }
    VGPU_RETURN_IF_ERROR(DestroyLocked(t->record.config.id, "its DRA claim was unprepared"));
    SaveLocked();
  }
  if (!writer_.WaitWritten(kClaimFlushTimeout)) {
    return UnavailableError("the checkpoint without slot " + name +
                            " could not be written; the kubelet retries");
  }
  return OkStatus();
}

}  // namespace vgpu::manager

// Allocate and GetPreferredAllocation: the IDs the kubelet picked define the slot(s); nothing
// here waits on the kubelet, and the checkpoint entry is queued, not waited for.
#include <algorithm>
#include <set>

#include "slot_manager_internal.h"
#include "vgpu/manager/log.h"
#include "vgpu/manager/slot_manager.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
}  // namespace

Result<Grant> SlotManager::Allocate(ResourceKind kind, const std::vector<std::string>& ids) {
  Result<Grant> result = AllocateUncounted(kind, ids);
  std::lock_guard lock(mu_);
  ++(result.ok() ? counters_.allocations : counters_.allocation_failures);
  return result;
}

Result<Grant> SlotManager::AllocateUncounted(ResourceKind kind,
                                             const std::vector<std::string>& ids) {
  const std::string& resource = ResourceName(kind);
  if (kind == ResourceKind::kWholeGpu) {
    if (ids.empty()) {
      return InvalidArgumentError(resource + ": no device IDs in the request");
    }
    std::vector<alloc::DeviceId> whole;
    std::set<uint32_t> seen;
    for (const std::string& text : ids) {
      auto id = alloc::ParseDeviceId(text, kind);
      if (!id.ok()) {
        return id.status();
      }
      if (FindGpu(id->gpu) == nullptr) {
        return InvalidArgumentError("device ID " + text + ": gpu" + std::to_string(id->gpu) +
                                    " does not exist on this node");
      }
      if (!seen.insert(id->gpu).second) {
        return InvalidArgumentError("device ID " + text + " appears twice in the request");
      }
      whole.push_back(*id);
    }
    std::sort(whole.begin(), whole.end());
    std::lock_guard lock(mu_);
    return AllocateWholeLocked(whole);
  }
  auto set = ParseIdSet(ids, kind);
  if (!set.ok()) {
    return set.status();
  }
  const alloc::GpuInfo* gpu = FindGpu(set->gpu);
  if (gpu == nullptr) {
    return InvalidArgumentError("device ID " + ids[0] + ": gpu" + std::to_string(set->gpu) +
                                " does not exist on this node");
  }
  uint32_t limit = kind == ResourceKind::kCore ? 100 : MemoryUnitsPerGpu(set->gpu);
  if (set->units.back() >= limit) {
    return InvalidArgumentError("device ID " + FormatDeviceId({kind, set->gpu, set->units.back()}) +
                                " does not exist: gpu" + std::to_string(set->gpu) + " has " +
                                std::to_string(limit) + " " +
                                std::string(alloc::ResourceKindName(kind)) + " units");
  }
  if (kind == ResourceKind::kMemory &&
      set->units.size() * options_.memory_unit_bytes > gpu->memory_bytes) {
    return InvalidArgumentError(
        "asks for " + std::to_string((set->units.size() * options_.memory_unit_bytes) >> 20) +
        " MiB of vcuda-memory but gpu" + std::to_string(set->gpu) + " has " +
        std::to_string(gpu->memory_bytes >> 20) + " MiB");
  }
  std::lock_guard lock(mu_);
  if (const TrackedSlot* t = slots_.FindExclusive(set->gpu)) {
    return FailedPreconditionError("gpu" + std::to_string(set->gpu) + " is held whole by slot " +
                                   std::to_string(t->record.config.id) + " (" + Owner(t->record) +
                                   "); " + resource + " cannot be served from it");
  }
  if (kind == ResourceKind::kCore) {
    // The share is linked to the container's memory slot at PreStartContainer.
    Grant g;
    g.edits.envs["VGPU_CORE_PERCENT"] = std::to_string(set->units.size());
    return g;
  }
  return AllocateMemoryLocked(*set, ids);
}

Result<Grant> SlotManager::AllocateMemoryLocked(const IdSet& set,
                                                const std::vector<std::string>& ids_in) {
  std::vector<std::string> ids = IdsOf(ResourceKind::kMemory, set);
  std::string key = alloc::SlotKey(set.gpu, set.units);
  // Same IDs again (an init container's IDs reused by the next container, or the kubelet
  // retrying after a manager restart): the same slot.
  if (TrackedSlot* t = slots_.FindByName(key);
      t != nullptr && (t->record.memory_ids.empty() || t->record.memory_ids == ids)) {
    if (t->record.memory_ids.empty()) {
      t->record.memory_ids = ids;
      slots_.MarkChanged(t->record.config.id);
      SaveLocked();
    }
    LogInfo("event=allocate_reused " + Describe(t->record));
    VGPU_RETURN_IF_ERROR(grants_.EnsureCdiSpec(t->record));
    return grants_.Make(t->record);
  }
  // The kubelet hands out only IDs no live container holds, so a slot still holding any of
  // them belongs to a container that is gone: reclaim it now rather than after the grace.
  std::set<std::string> wanted(ids.begin(), ids.end());
  std::vector<uint32_t> stale;
  for (const auto& [id, t] : slots_.all()) {
    if (t.record.config.gpu != set.gpu || t.record.config.exclusive) {
      continue;
    }
    bool overlap = t.record.config.name == key ||
                   std::any_of(t.record.memory_ids.begin(), t.record.memory_ids.end(),
                               [&](const std::string& m) { return wanted.count(m) != 0; });
    if (overlap) {
      stale.push_back(id);
    }
  }
  for (uint32_t id : stale) {
    Status s = DestroyLocked(id, "the kubelet reassigned its vcuda-memory IDs");
    if (!s.ok()) {
      return UnavailableError("vcuda-memory IDs " + ids.front() + "... are still held by slot " +
                              std::to_string(id) +
                              " whose processes have not exited: " + s.message());
    }
  }
  const alloc::GpuInfo* gpu = FindGpu(set.gpu);
  slots::SlotConfig config;
  config.name = key;
  config.gpu = set.gpu;
  config.gpu_uuid = gpu->uuid;
  config.mem_quota = set.units.size() * options_.memory_unit_bytes;
  config.compute_share = 100;  // until PreStartContainer links the core share
  config.compute_ref_clock_mhz = ReferenceClockOf(gpu->uuid);
  config.managed_policy = options_.managed_policy;
  config.unknown_policy = options_.unknown_policy;
  bool was_shared = slots_.AnyOnGpu(set.gpu);
  auto created = backend_.Create(config);
  if (!created.ok()) {
    return created.status().Annotate("creating the " + std::string(backend_.Kind()) + " slot " +
                                     key + " for " + std::to_string(ids_in.size()) +
                                     " vcuda-memory IDs on gpu" + std::to_string(set.gpu));
  }
  config.id = *created;
  if (options_.crash_point) {
    options_.crash_point("after-slot-create");
  }
  TrackedSlot t{SlotRecord{}, clock_(), std::nullopt};
  t.record.config = config;
  t.record.memory_ids = ids;
  slots_.Put(t);
  SaveLocked();
  if (options_.crash_point) {
    options_.crash_point("after-checkpoint");
  }
  if (!was_shared) {
    BumpLocked();
  }
  LogInfo("event=slot_created " + Describe(t.record));
  if (grants_.cdi_enabled()) {
    VGPU_RETURN_IF_ERROR(grants_.WriteCdiSpec(t.record));
  }
  return grants_.Make(t.record);
}

Result<Grant> SlotManager::AllocateWholeLocked(const std::vector<alloc::DeviceId>& gpus) {
  std::vector<std::string> ids;
  for (const auto& d : gpus) {
    ids.push_back(FormatDeviceId(d));
  }
  ids = Sorted(std::move(ids));
  // Every GPU must be free of shared slots before anything is created.
  for (const auto& d : gpus) {
    for (const auto& [sid, t] : slots_.all()) {
      if (t.record.config.gpu == d.gpu && !t.record.config.exclusive) {
        return FailedPreconditionError("gpu" + std::to_string(d.gpu) + " is shared by slot " +
                                       std::to_string(sid) + " (" + Owner(t.record) +
                                       "); a whole-GPU request needs a GPU with no slots");
      }
    }
  }
  std::vector<uint32_t> slot_ids;
  std::vector<uint32_t> created_now;
  for (const auto& d : gpus) {
    if (TrackedSlot* t = slots_.FindExclusive(d.gpu)) {
      // The kubelet gives a whole-GPU ID to one live container at a time, so an exclusive slot
      // on this GPU is this container's (a retry, or an init container's GPUs reused) or a gone
      // container's: either way it serves this request now.
      if (t->record.gpu_ids != ids) {
        t->record.gpu_ids = ids;
        slots_.MarkChanged(t->record.config.id);
      }
      LogInfo("event=allocate_reused " + Describe(t->record));
      slot_ids.push_back(t->record.config.id);
      continue;
    }
    const alloc::GpuInfo* info = FindGpu(d.gpu);
    slots::SlotConfig config;
    config.name = alloc::WholeGpuSlotKey(d.gpu);
    config.gpu = d.gpu;
    config.gpu_uuid = info->uuid;
    config.mem_quota = 0;  // unlimited: the container has the GPU to itself
    config.compute_share = 100;
    config.compute_ref_clock_mhz = ReferenceClockOf(info->uuid);
    config.managed_policy = slots::ManagedPolicy::kAllowUncounted;
    config.unknown_policy = options_.unknown_policy;
    config.exclusive = true;
    auto created = backend_.Create(config);
    if (!created.ok()) {
      for (uint32_t undo : created_now) {  // all or nothing: no half-granted container
        (void)backend_.Destroy(undo);
        slots_.Erase(undo);
      }
      SaveLocked();
      return created.status().Annotate("creating the whole-GPU slot for " + FormatDeviceId(d));
    }
    config.id = *created;
    TrackedSlot t{SlotRecord{}, clock_(), std::nullopt};
    t.record.config = config;
    t.record.gpu_ids = ids;
    slots_.Put(t);
    slot_ids.push_back(config.id);
    created_now.push_back(config.id);
    LogInfo("event=slot_created " + Describe(t.record));
  }
  SaveLocked();
  if (!created_now.empty()) {
    BumpLocked();
  }
  std::vector<const SlotRecord*> records;
  for (uint32_t id : slot_ids) {
    const SlotRecord& r = slots_.Find(id)->record;
    VGPU_RETURN_IF_ERROR(grants_.EnsureCdiSpec(r));
    records.push_back(&r);
  }
  return grants_.Make(records);
}

Result<std::vector<std::string>> SlotManager::Preferred(
    ResourceKind kind, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  std::lock_guard lock(mu_);
  return picker_.Pick(kind, available, must_include, size, LoadsLocked());
}

}  // namespace vgpu::manager

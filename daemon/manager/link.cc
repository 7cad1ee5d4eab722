// PreStartContainer: the kubelet's pod-resources API lists the container's IDs of every
// resource by now (device-plugin-api.md §2.5, §2.7), so the slot learns its owner and the core
// share is applied to it, enforced as the pod's vgpu.io/compute-mode annotation says (a cap
// unless it says weight). The slot is updated before the container starts, so the module or the
// shim enforces the mode from the container's first instruction.
#include "slot_manager_internal.h"
#include "vgpu/manager/log.h"
#include "vgpu/manager/slot_manager.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
}  // namespace

std::vector<TrackedSlot*> SlotManager::SlotsOfLocked(const podresources::ContainerAssignment& a) {
  std::vector<TrackedSlot*> out;
  const auto* memory = IdsFor(a, options_.memory_resource);
  const auto* whole = IdsFor(a, options_.gpu_resource);
  if (whole != nullptr && !whole->empty()) {
    for (const std::string& text : *whole) {
      auto id = alloc::ParseDeviceId(text, ResourceKind::kWholeGpu);
      if (!id.ok()) {
        return {};
      }
      if (TrackedSlot* t = slots_.FindExclusive(id->gpu)) {
        out.push_back(t);
      }
    }
    return out;
  }
  if (memory != nullptr && !memory->empty()) {
    auto mset = ParseIdSet(*memory, ResourceKind::kMemory);
    if (!mset.ok()) {
      return {};
    }
    if (TrackedSlot* t = slots_.FindByName(alloc::SlotKey(mset->gpu, mset->units))) {
      out.push_back(t);
    }
  }
  return out;
}

Result<ComputeMode> SlotManager::ComputeModeOf(const podresources::ContainerAssignment& owner) {
  const std::string pod = owner.pod_namespace + "/" + owner.pod_name;
  if (annotations_ == nullptr) {
    return ComputeMode::kCap;
  }
  auto got = annotations_->Get(owner.pod_namespace, owner.pod_name);
  if (!got.ok()) {
    // The API server's availability must not decide whether a pod starts: the cap is what the
    // resource asked for, never more.
    LogWarn("event=pod_annotations_unavailable pod=" + pod + " compute_mode=cap error=\"" +
            got.status().ToString() + "\"");
    return ComputeMode::kCap;
  }
  auto it = got->find(std::string(kComputeModeAnnotation));
  if (it == got->end()) {
    return ComputeMode::kCap;
  }
  auto mode = ParseComputeMode(it->second);
  if (!mode.ok()) {
    return InvalidArgumentError("pod " + pod + ": annotation " +
                                std::string(kComputeModeAnnotation) + ": " +
                                mode.status().message());
  }
  return *mode;
}

Status SlotManager::LinkLocked(TrackedSlot& t, const podresources::ContainerAssignment& owner,
                               std::optional<ComputeMode> mode, bool* changed) {
  SlotRecord r = t.record;
  const std::vector<std::string>* core = IdsFor(owner, options_.core_resource);
  uint32_t share = 100;
  if (core != nullptr && !core->empty()) {
    auto cset = ParseIdSet(*core, ResourceKind::kCore);
    if (!cset.ok()) {
      return cset.status();
    }
    if (cset->gpu != r.config.gpu) {
      return InvalidArgumentError("container " + owner.pod_namespace + "/" + owner.pod_name + "/" +
                                  owner.container + ": vcuda-core IDs are on gpu" +
                                  std::to_string(cset->gpu) + " but vcuda-memory IDs on gpu" +
                                  std::to_string(r.config.gpu) +
                                  "; a container's compute and memory must come from one GPU");
    }
    share = static_cast<uint32_t>(cset->units.size());
    r.core_ids = IdsOf(ResourceKind::kCore, *cset);
  } else {
    r.core_ids.clear();
  }
  if (!r.config.exclusive) {
    r.config.compute_share = share;
    if (mode) {
      r.config.compute_mode = *mode;
    }
    if (const auto* mem = IdsFor(owner, options_.memory_resource); mem != nullptr) {
      r.memory_ids = Sorted(*mem);
    }
  } else if (const auto* whole = IdsFor(owner, options_.gpu_resource); whole != nullptr) {
    r.gpu_ids = Sorted(*whole);
  }
  if (const uint32_t mhz = ReferenceClockOf(r.config.gpu_uuid); mhz != 0) {
    r.config.compute_ref_clock_mhz = mhz;  // learned since Allocate, or lowered
  }
  r.pod_namespace = owner.pod_namespace;
  r.pod_name = owner.pod_name;
  r.container = owner.container;
  r.linked = true;
  if (r.config != t.record.config) {
    VGPU_RETURN_IF_ERROR(
        backend_.Update(r.config).Annotate("updating slot " + std::to_string(r.config.id)));
  }
  if (!(r == t.record)) {
    *changed = true;
    t.record = std::move(r);
    slots_.MarkChanged(t.record.config.id);
  }
  return OkStatus();
}

Status SlotManager::PreStart(ResourceKind kind, const std::vector<std::string>& ids) {
  if (pod_resources_ == nullptr) {
    return FailedPreconditionError(
        "PreStartContainer needs the kubelet's pod-resources API (--pod-resources-socket)");
  }
  auto listed = pod_resources_->List();
  if (!listed.ok()) {
    return listed.status();
  }
  const std::string& resource = ResourceName(kind);
  std::vector<std::string> want = Sorted(ids);
  const podresources::ContainerAssignment* owner = nullptr;
  for (const auto& a : *listed) {
    const auto* have = IdsFor(a, resource);
    if (have != nullptr && Sorted(*have) == want) {
      owner = &a;
      break;
    }
  }
  if (owner == nullptr) {
    return UnavailableError("the kubelet's pod-resources API lists no container holding " +
                            resource + " IDs " + (want.empty() ? "[]" : want.front()) + "... (" +
                            std::to_string(want.size()) + " IDs)");
  }
  std::string who = owner->pod_namespace + "/" + owner->pod_name + "/" + owner->container;
  const auto* memory = IdsFor(*owner, options_.memory_resource);
  const auto* core = IdsFor(*owner, options_.core_resource);
  const auto* whole = IdsFor(*owner, options_.gpu_resource);
  bool has_whole = whole != nullptr && !whole->empty();
  if (!has_whole && (memory == nullptr || memory->empty())) {
    if (core != nullptr && !core->empty()) {
      return InvalidArgumentError("container " + who + " asks for " + std::to_string(core->size()) +
                                  " " + options_.core_resource + " but no " +
                                  options_.memory_resource +
                                  "; a slot is memory plus compute of one GPU, request " +
                                  options_.memory_resource + " too");
    }
    return InvalidArgumentError("container " + who + " holds no " + options_.memory_resource);
  }
  if (!has_whole) {
    auto mset = ParseIdSet(*memory, ResourceKind::kMemory);
    if (!mset.ok()) {
      return mset.status();
    }
  }
  // Read before the lock: an API call must not hold up Allocate.
  auto mode = ComputeModeOf(*owner);
  if (!mode.ok()) {
    return mode.status();
  }
  std::lock_guard lock(mu_);
  std::vector<TrackedSlot*> targets = SlotsOfLocked(*owner);
  if (targets.empty() || (has_whole && targets.size() != whole->size())) {
    return FailedPreconditionError("no slot for container " + who +
                                   ": Allocate did not run for its IDs or its slot was reclaimed");
  }
  for (TrackedSlot* target : targets) {
    bool changed = false;
    VGPU_RETURN_IF_ERROR(LinkLocked(*target, *owner, *mode, &changed));
    if (changed) {
      LogInfo("event=slot_linked " + Describe(target->record));
    }
  }
  SaveLocked();
  return OkStatus();
}

}  // namespace vgpu::manager

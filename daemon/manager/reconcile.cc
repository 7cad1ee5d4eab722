// Start-up reconciliation and slots made by hand (standalone mode).
#include <algorithm>
#include <set>

#include "slot_manager_internal.h"
#include "vgpu/manager/log.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
}  // namespace

std::string ReconcileReport::ToString() const {
  std::string s = "restored=" + std::to_string(restored) +
                  " recreated=" + std::to_string(recreated) +
                  " adopted=" + std::to_string(adopted) + " relinked=" + std::to_string(relinked) +
                  " duplicates_destroyed=" + std::to_string(destroyed) + " checkpoint=" +
                  (!checkpoint_found            ? "absent"
                   : checkpoint_corrupt.empty() ? "ok"
                                                : "corrupt") +
                  " pod_resources=" + (pod_resources_ok ? "ok" : "unavailable");
  if (!checkpoint_corrupt.empty()) {
    s += " corrupt_reason=\"" + checkpoint_corrupt + "\" kept_aside=" + kept_aside;
  }
  return s;
}

Result<ReconcileReport> SlotManager::Reconcile() {
  ReconcileReport report;
  auto loaded = store_.Load();
  if (!loaded.ok()) {
    return loaded.status();
  }
  report.checkpoint_found = loaded->found;
  report.checkpoint_corrupt = loaded->corrupt_reason;
  report.kept_aside = loaded->kept_aside.string();
  if (loaded->torn_tail) {
    // A crash mid-append: that change was never durable; the live slots below restore it.
    LogWarn("event=checkpoint_torn_tail path=" + store_.path().string() +
            " journal_entries=" + std::to_string(loaded->journal_entries) +
            " action=\"last entry dropped, reconciled from live slots\"");
  }
  auto live = backend_.List();
  if (!live.ok()) {
    return live.status().Annotate("listing live " + std::string(backend_.Kind()) + " slots");
  }
  // Slots whose stored config no longer reads (a shim slot's file edited or truncated): the
  // checkpoint says what they enforce, so they are restored by id below, never fatal.
  const std::vector<uint32_t> damaged = backend_.DamagedSlots();
  auto is_damaged = [&](uint32_t id) {
    return std::find(damaged.begin(), damaged.end(), id) != damaged.end();
  };
  std::vector<podresources::ContainerAssignment> assignments;
  if (pod_resources_ != nullptr) {
    auto listed = pod_resources_->List();
    if (listed.ok()) {
      assignments = std::move(*listed);
      report.pod_resources_ok = true;
    } else {
      LogWarn("event=reconcile_pod_resources_unavailable error=\"" + listed.status().ToString() +
              "\"");
    }
  }
  std::lock_guard lock(mu_);
  slots_.Clear();
  auto now = clock_();
  std::set<uint32_t> matched;
  for (SlotRecord& r : loaded->records) {
    const slots::SlotConfig* found = nullptr;
    for (const auto& l : *live) {
      if (matched.count(l.id) == 0 && l.name == r.config.name &&
          (found == nullptr || l.id == r.config.id)) {
        found = &l;
      }
    }
    if (found != nullptr) {
      matched.insert(found->id);
      r.config.id = found->id;
      if (!SameEnforcement(*found, r.config)) {
        VGPU_RETURN_IF_ERROR(backend_.Update(r.config).Annotate("restoring slot " + r.config.name));
      }
      ++report.restored;
    } else if (is_damaged(r.config.id) && matched.count(r.config.id) == 0) {
      VGPU_RETURN_IF_ERROR(
          backend_.Update(r.config).Annotate("restoring the config of slot " + r.config.name));
      matched.insert(r.config.id);
      ++report.restored;
      LogWarn("event=slot_config_restored " + Describe(r) +
              " reason=\"live config unreadable or edited; rewritten from the checkpoint\"");
    } else {
      auto id = backend_.Restore(r.config);
      if (!id.ok()) {
        return id.status().Annotate("re-creating slot " + r.config.name + " from the checkpoint");
      }
      r.config.id = *id;
      matched.insert(*id);
      ++report.recreated;
      LogWarn("event=slot_recreated " + Describe(r) + " reason=\"in checkpoint, not live\"");
    }
    slots_.Put(TrackedSlot{r, now, std::nullopt});
  }
  for (uint32_t id : damaged) {
    if (matched.count(id) == 0) {
      LogWarn("event=slot_config_unreadable slot=" + std::to_string(id) +
              " action=\"left alone: not in the checkpoint, so nothing to restore it from\"");
    }
  }
  for (const auto& l : *live) {
    if (matched.count(l.id) != 0) {
      continue;
    }
    if (slots_.FindByName(l.name) != nullptr) {
      Status s = backend_.Destroy(l.id);
      LogWarn("event=slot_duplicate_destroyed slot=" + std::to_string(l.id) + " name=" + l.name +
              " result=\"" + s.ToString() + "\"");
      ++report.destroyed;
      continue;
    }
    SlotRecord r;
    r.config = l;
    if (const alloc::GpuInfo* g = FindGpu(l.gpu); g != nullptr && r.config.gpu_uuid.empty()) {
      r.config.gpu_uuid = g->uuid;
    }
    if (l.exclusive) {
      r.gpu_ids = {FormatDeviceId({ResourceKind::kWholeGpu, l.gpu, 0})};
    }
    slots_.Put(TrackedSlot{r, now, std::nullopt});
    ++report.adopted;
    LogWarn("event=slot_adopted " + Describe(r) + " reason=\"live, not in checkpoint\"");
  }
  // The kubelet's assignments are the truth about owners and core shares.
  for (const auto& a : assignments) {
    for (TrackedSlot* target : SlotsOfLocked(a)) {
      bool changed = false;
      Status s = LinkLocked(*target, a, std::nullopt, &changed);  // the mode: the checkpoint's
      if (!s.ok()) {
        LogWarn("event=reconcile_link_failed " + Describe(target->record) + " error=\"" +
                s.ToString() + "\"");
      } else if (changed) {
        ++report.relinked;
      }
    }
  }
  VGPU_RETURN_IF_ERROR(SaveNowLocked());
  if (grants_.cdi_enabled()) {
    for (const auto& [id, t] : slots_.all()) {
      Status s = grants_.WriteCdiSpec(t.record);
      if (!s.ok()) {
        LogWarn("event=cdi_spec_failed " + Describe(t.record) + " error=\"" + s.ToString() + "\"");
      }
    }
  }
  writer_.Start();
  BumpLocked();
  return report;
}

Result<SlotRecord> SlotManager::CreateManual(std::optional<uint32_t> gpu, uint64_t mem_quota,
                                             uint32_t compute_share, ComputeMode compute_mode,
                                             std::string label) {
  const uint64_t memory_bytes = mem_quota;
  const uint32_t core_percent = compute_share;
  if (memory_bytes == 0) {
    return InvalidArgumentError("mem_quota: must be > 0");
  }
  if (core_percent < 1 || core_percent > 100) {
    return InvalidArgumentError("compute_share: must be 1..100, got " +
                                std::to_string(core_percent));
  }
  uint64_t units = (memory_bytes + options_.memory_unit_bytes - 1) / options_.memory_unit_bytes;
  std::lock_guard lock(mu_);
  std::vector<alloc::GpuLoad> loads = LoadsLocked();
  uint32_t chosen = 0;
  if (gpu) {
    if (FindGpu(*gpu) == nullptr) {
      return InvalidArgumentError("gpu: gpu" + std::to_string(*gpu) + " does not exist");
    }
    chosen = *gpu;
  } else {
    alloc::PlacementRequest req{core_percent, units * options_.memory_unit_bytes, false, 1};
    auto placed = placer_->Place(loads, req);
    if (!placed.ok()) {
      return placed.status();
    }
    chosen = gpus_[placed->front()].index;
  }
  std::set<uint32_t> used;
  for (const auto& [id, t] : slots_.all()) {
    for (const std::string& m : t.record.memory_ids) {
      auto d = alloc::ParseDeviceId(m, ResourceKind::kMemory);
      if (d.ok() && d->gpu == chosen) {
        used.insert(d->unit);
      }
    }
  }
  IdSet set{ResourceKind::kMemory, chosen, {}};
  for (uint32_t u = 0; u < MemoryUnitsPerGpu(chosen) && set.units.size() < units; ++u) {
    if (used.count(u) == 0) {
      set.units.push_back(u);
    }
  }
  if (set.units.size() < units) {
    return ResourceExhaustedError("gpu" + std::to_string(chosen) + " has " +
                                  std::to_string(set.units.size()) + " free memory units, need " +
                                  std::to_string(units));
  }
  auto grant = AllocateMemoryLocked(set, IdsOf(ResourceKind::kMemory, set));
  if (!grant.ok()) {
    return grant.status();
  }
  std::string key = alloc::SlotKey(set.gpu, set.units);
  TrackedSlot* t = slots_.FindByName(key);
  if (t == nullptr) {
    return InternalError("slot " + key + " vanished after creation");
  }
  SlotRecord r = t->record;
  r.config.compute_share = core_percent;
  r.config.compute_mode = compute_mode;
  r.manual = true;
  r.linked = true;
  r.pod_name = label;
  VGPU_RETURN_IF_ERROR(backend_.Update(r.config));
  t->record = r;
  slots_.MarkChanged(r.config.id);
  VGPU_RETURN_IF_ERROR(SaveNowLocked());
  return r;
}

Status SlotManager::DeleteSlot(uint32_t id) {
  std::lock_guard lock(mu_);
  VGPU_RETURN_IF_ERROR(DestroyLocked(id, "deleted through the control API"));
  return SaveNowLocked();
}

}  // namespace vgpu::manager

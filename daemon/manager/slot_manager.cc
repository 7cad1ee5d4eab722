// SlotManager: construction, the read side (devices, loads, snapshot, health), checkpoint
// hand-off, destroying slots and reclaiming orphans. Allocate is in allocate.cc, PreStart in
// link.cc, start-up and standalone slots in reconcile.cc.
#include "vgpu/manager/slot_manager.h"

#include <algorithm>
#include <set>

#include "slot_manager_internal.h"
#include "vgpu/manager/log.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
}  // namespace

SlotManager::SlotManager(ManagerOptions options, std::vector<alloc::GpuInfo> gpus,
                         slots::SlotBackend& backend, checkpoint::CheckpointStore& store,
                         podresources::PodResourcesSource* pod_resources,
                         std::unique_ptr<alloc::Placer> placer, Clock clock)
    : options_(std::move(options)),
      gpus_(std::move(gpus)),
      backend_(backend),
      store_(store),
      pod_resources_(pod_resources),
      placer_(std::move(placer)),
      clock_(std::move(clock)),
      grants_(options_, backend_),
      picker_(gpus_, options_.memory_unit_bytes, *placer_, clock_),
      writer_(
          store,
          [this] {
            std::lock_guard lock(mu_);
            writer_.Compact(slots_.EncodeAll());
          },
          [this](const Status& s) {
            LogError("event=checkpoint_write_failed path=" + store_.path().string() + " error=\"" +
                     s.ToString() + "\" retry_in_ms=1000");
          },
          options_.checkpoint_compact_after) {
  for (const auto& g : gpus_) {
    gpu_healthy_[g.index] = true;
  }
}

// writer_ is destroyed first (declared last) and writes what is queued before it goes.
SlotManager::~SlotManager() = default;

const alloc::GpuInfo* SlotManager::FindGpu(uint32_t index) const {
  for (const auto& g : gpus_) {
    if (g.index == index) {
      return &g;
    }
  }
  return nullptr;
}

uint32_t SlotManager::ReferenceClockOf(const std::string& gpu_uuid) const {
  return options_.reference_clock_mhz ? options_.reference_clock_mhz(gpu_uuid) : 0;
}

int SlotManager::ApplyReferenceClock(const std::string& gpu_uuid) {
  const uint32_t mhz = ReferenceClockOf(gpu_uuid);
  if (mhz == 0) {
    return 0;
  }
  std::lock_guard lock(mu_);
  int rewritten = 0;
  for (auto& [id, t] : slots_.all()) {
    slots::SlotConfig& c = t.record.config;
    if (c.gpu_uuid != gpu_uuid || c.compute_ref_clock_mhz == mhz) {
      continue;
    }
    slots::SlotConfig updated = c;
    updated.compute_ref_clock_mhz = mhz;
    if (Status s = backend_.Update(updated); !s.ok()) {
      LogWarn("event=reference_clock_not_applied " + Describe(t.record) + " error=\"" +
              s.ToString() + "\"");
      continue;
    }
    c = updated;
    slots_.MarkChanged(id);
    ++rewritten;
  }
  SaveLocked();
  return rewritten;
}

const std::string& SlotManager::ResourceName(ResourceKind kind) const {
  switch (kind) {
    case ResourceKind::kCore:
      return options_.core_resource;
    case ResourceKind::kMemory:
      return options_.memory_resource;
    case ResourceKind::kWholeGpu:
      return options_.gpu_resource;
  }
  return options_.memory_resource;
}

uint32_t SlotManager::MemoryUnitsPerGpu(uint32_t gpu) const {
  const alloc::GpuInfo* g = FindGpu(gpu);
  return g == nullptr ? 0 : static_cast<uint32_t>(g->memory_bytes / options_.memory_unit_bytes);
}

std::vector<DeviceEntry> SlotManager::Devices(ResourceKind kind) const {
  std::lock_guard lock(mu_);
  std::vector<DeviceEntry> out;
  for (const auto& g : gpus_) {
    bool healthy = gpu_healthy_.at(g.index);
    bool exclusive = slots_.AnyOnGpu(g.index, true);
    bool shared = slots_.AnyOnGpu(g.index, false);
    if (kind == ResourceKind::kWholeGpu) {
      out.push_back({FormatDeviceId({kind, g.index, 0}), healthy && !shared, g.numa});
      continue;
    }
    uint32_t n = kind == ResourceKind::kCore ? 100 : MemoryUnitsPerGpu(g.index);
    for (uint32_t u = 0; u < n; ++u) {
      out.push_back({FormatDeviceId({kind, g.index, u}), healthy && !exclusive, g.numa});
    }
  }
  return out;
}

std::vector<alloc::GpuLoad> SlotManager::LoadsLocked() const {
  std::vector<alloc::GpuLoad> loads(gpus_.size());
  for (size_t i = 0; i < gpus_.size(); ++i) {
    uint32_t cores_used = 0;
    uint64_t mem_used = 0;
    for (const auto& [id, t] : slots_.all()) {
      const auto& c = t.record.config;
      if (c.gpu != gpus_[i].index) {
        continue;
      }
      if (c.exclusive) {
        loads[i].exclusive = true;
        continue;
      }
      mem_used += c.mem_quota;
      if (t.record.linked && (!t.record.core_ids.empty() || t.record.manual)) {
        cores_used += c.compute_share;
      }
    }
    loads[i].healthy = gpu_healthy_.at(gpus_[i].index);
    loads[i].cores_free = cores_used >= 100 ? 0 : 100 - cores_used;
    loads[i].memory_free = mem_used >= gpus_[i].memory_bytes ? 0 : gpus_[i].memory_bytes - mem_used;
  }
  return loads;
}

void SlotManager::SaveLocked() {
  std::string lines = slots_.TakeJournal();
  if (!lines.empty()) {
    writer_.Append(std::move(lines));
  }
}

Status SlotManager::SaveNowLocked() { return writer_.CompactNow(slots_.EncodeAll()); }

bool SlotManager::FlushCheckpoint(std::chrono::milliseconds timeout) {
  return writer_.Flush(timeout);
}

void SlotManager::BumpLocked() {
  ++generation_;
  changed_.notify_all();
}

Status SlotManager::DestroyLocked(uint32_t id, std::string_view reason) {
  TrackedSlot* t = slots_.Find(id);
  if (t == nullptr) {
    return NotFoundError("slot " + std::to_string(id) + " does not exist");
  }
  Status s = backend_.Destroy(id);
  if (!s.ok() && s.code() != StatusCode::kNotFound) {
    LogWarn("event=slot_destroy_failed " + Describe(t->record) + " reason=\"" +
            std::string(reason) + "\" error=\"" + s.ToString() + "\"");
    return s;
  }
  LogInfo("event=slot_destroyed " + Describe(t->record) + " reason=\"" + std::string(reason) +
          "\"");
  grants_.RemoveCdiSpec(id);
  bool exclusive = t->record.config.exclusive;
  uint32_t gpu = t->record.config.gpu;
  slots_.Erase(id);
  if (!slots_.AnyOnGpu(gpu, exclusive)) {
    BumpLocked();  // the GPU's other-mode IDs become available again
  }
  return OkStatus();
}

Result<int> SlotManager::ReclaimOrphans() {
  if (pod_resources_ == nullptr) {
    return 0;
  }
  auto listed = pod_resources_->List();
  if (!listed.ok()) {
    return listed.status();
  }
  std::set<std::string> in_use;
  for (const auto& a : *listed) {
    for (const std::string* res : {&options_.memory_resource, &options_.gpu_resource}) {
      if (const auto* ids = IdsFor(a, *res)) {
        in_use.insert(ids->begin(), ids->end());
      }
    }
  }
  std::lock_guard lock(mu_);
  auto now = clock_();
  std::vector<uint32_t> reclaim;
  for (auto& [id, t] : slots_.all()) {
    if (t.record.manual) {
      continue;
    }
    const auto& ids = t.record.config.exclusive ? t.record.gpu_ids : t.record.memory_ids;
    bool listed_now = std::any_of(ids.begin(), ids.end(),
                                  [&](const std::string& s) { return in_use.count(s) != 0; });
    if (listed_now) {
      t.unlisted_since.reset();
      continue;
    }
    if (!t.unlisted_since) {
      t.unlisted_since = now;
    }
    auto since = std::max(t.created, *t.unlisted_since);
    if (now - since >= options_.orphan_grace) {
      reclaim.push_back(id);
    }
  }
  int done = 0;
  for (uint32_t id : reclaim) {
    if (DestroyLocked(id, "orphaned: its pod is gone").ok()) {
      ++done;
    }
  }
  SaveLocked();
  return done;
}

std::vector<SlotRecord> SlotManager::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SlotRecord> out;
  for (const auto& [id, t] : slots_.all()) {
    out.push_back(t.record);
  }
  return out;
}

SlotManager::AllocationCounters SlotManager::Counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::map<uint32_t, bool> SlotManager::GpuHealth() const {
  std::lock_guard lock(mu_);
  return gpu_healthy_;
}

void SlotManager::SetGpuHealth(uint32_t gpu, bool healthy) {
  std::lock_guard lock(mu_);
  auto it = gpu_healthy_.find(gpu);
  if (it == gpu_healthy_.end() || it->second == healthy) {
    return;
  }
  it->second = healthy;
  LogInfo("event=gpu_health gpu=" + std::to_string(gpu) +
          " healthy=" + (healthy ? "true" : "false"));
  BumpLocked();
}

uint64_t SlotManager::Generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

uint64_t SlotManager::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  return generation_;
}

}  // namespace vgpu::manager

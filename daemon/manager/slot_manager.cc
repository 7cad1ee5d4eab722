#include "vgpu/manager/slot_manager.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>
#include "slot_manager_internal.h"

#include "vgpu/manager/log.h"
#include "vgpu/slots/shim_backend.h"

namespace vgpu::manager {
namespace {
using namespace internal;  // NOLINT: file-local helpers
using alloc::FormatDeviceId;
using alloc::IdSet;
using alloc::ParseIdSet;
using slots::SlotRecord;
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
      clock_(std::move(clock)) {
  for (const auto& g : gpus_) {
    gpu_healthy_[g.index] = true;
  }
}

const alloc::GpuInfo* SlotManager::FindGpu(uint32_t index) const {
  for (const auto& g : gpus_) {
    if (g.index == index) {
      return &g;
    }
  }
  return nullptr;
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
    bool exclusive = false, shared = false;
    for (const auto& [id, t] : slots_) {
      if (t.record.config.gpu == g.index) {
        (t.record.config.exclusive ? exclusive : shared) = true;
      }
    }
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
    for (const auto& [id, t] : slots_) {
      const auto& c = t.record.config;
      if (c.gpu != gpus_[i].index) {
        continue;
      }
      if (c.exclusive) {
        loads[i].exclusive = true;
        continue;
      }
      mem_used += c.memory_quota_bytes;
      if (t.record.linked && (!t.record.core_ids.empty() || t.record.manual)) {
        cores_used += c.compute_share_percent;
      }
    }
    loads[i].healthy = gpu_healthy_.at(gpus_[i].index);
    loads[i].cores_free = cores_used >= 100 ? 0 : 100 - cores_used;
    loads[i].memory_free = mem_used >= gpus_[i].memory_bytes ? 0 : gpus_[i].memory_bytes - mem_used;
  }
  return loads;
}

std::vector<std::shared_ptr<const std::string>> SlotManager::EncodeLocked() {
  std::vector<std::shared_ptr<const std::string>> encoded;
  encoded.reserve(slots_.size());
  for (auto& [id, t] : slots_) {
    if (t.encoded == nullptr || !(t.encoded_record == t.record)) {
      t.encoded = std::make_shared<const std::string>(checkpoint::RecordJson(t.record));
      t.encoded_record = t.record;
    }
    encoded.push_back(t.encoded);
  }
  return encoded;
}

namespace {
std::vector<const std::string*> Refs(const std::vector<std::shared_ptr<const std::string>>& v) {
  std::vector<const std::string*> out;
  out.reserve(v.size());
  for (const auto& p : v) {
    out.push_back(p.get());
  }
  return out;
}
}  // namespace

Status SlotManager::SaveLocked() {
  pending_ = EncodeLocked();
  ++save_seq_;
  writer_wake_.notify_one();
  return OkStatus();
}

Status SlotManager::SaveNowLocked() {
  pending_ = EncodeLocked();
  uint64_t seq = ++save_seq_;
  std::lock_guard write(write_mu_);
  VGPU_RETURN_IF_ERROR(store_.SaveEncoded(Refs(pending_)));
  written_seq_ = seq;
  written_.notify_all();
  return OkStatus();
}

void SlotManager::WriterLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    writer_wake_.wait(lock, [&] { return stopping_ || save_seq_ > written_seq_; });
    if (save_seq_ <= written_seq_) {
      return;  // stopping with nothing left to write
    }
    uint64_t seq = save_seq_;
    auto state = pending_;  // shared pointers: cheap under the lock
    lock.unlock();
    Status s;
    {
      std::lock_guard write(write_mu_);
      if (seq > written_seq_) {  // SaveNowLocked may have written a newer state meanwhile
        s = store_.SaveEncoded(Refs(state));
        if (s.ok()) {
          written_seq_ = seq;
        }
      }
    }
    lock.lock();
    written_.notify_all();
    if (!s.ok()) {
      LogError("event=checkpoint_write_failed path=" + store_.path().string() + " error=\"" +
               s.ToString() + "\" retry_in_ms=1000");
      writer_wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
      if (stopping_) {
        return;
      }
    }
  }
}

bool SlotManager::FlushCheckpoint(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  uint64_t want = save_seq_;
  return written_.wait_for(lock, timeout, [&] { return written_seq_ >= want; });
}

SlotManager::~SlotManager() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  writer_wake_.notify_one();
  if (writer_.joinable()) {
    writer_.join();  // the loop writes what is pending before it returns
  }
}

std::string SlotManager::CdiSpecPath(uint32_t slot_id) const {
  std::string kind = options_.cdi_kind;
  std::replace(kind.begin(), kind.end(), '/', '-');
  return options_.cdi_spec_dir + "/" + kind + "_slot" + std::to_string(slot_id) + ".json";
}

Status SlotManager::WriteCdiSpec(const SlotRecord& r) const {
  // CDI SPEC.md: hostPath on deviceNodes needs cdiVersion >= 0.5.0; declare the lowest that
  // covers the fields used, since loaders reject newer versions they do not know.
  Grant g = MakeGrant(r);
  nlohmann::json edits = {{"env", nlohmann::json::array()},
                          {"deviceNodes", nlohmann::json::array()},
                          {"mounts", nlohmann::json::array()}};
  for (const auto& [k, v] : g.edits.envs) {
    edits["env"].push_back(k + "=" + v);
  }
  for (const auto& d : g.edits.devices) {
    edits["deviceNodes"].push_back({{"path", d.container_path},
                                    {"hostPath", d.host_path},
                                    {"permissions", d.permissions + "m"}});
  }
  for (const auto& m : g.edits.mounts) {
    edits["mounts"].push_back(
        {{"hostPath", m.host_path},
         {"containerPath", m.container_path},
         {"options", {m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"}}});
  }
  nlohmann::json spec = {
      {"cdiVersion", "0.5.0"},
      {"kind", options_.cdi_kind},
      {"devices", {{{"name", "slot" + std::to_string(r.config.id)}, {"containerEdits", edits}}}}};
  std::error_code ec;
  std::filesystem::create_directories(options_.cdi_spec_dir, ec);
  return slots::WriteFileAtomically(CdiSpecPath(r.config.id), spec.dump(2) + "\n")
      .Annotate("CDI spec for slot " + std::to_string(r.config.id));
}

void SlotManager::BumpLocked() {
  ++generation_;
  changed_.notify_all();
}

Grant SlotManager::MakeGrant(const SlotRecord& r) const {
  Grant g;
  g.edits = backend_.Edits(r.config);
  const auto& c = r.config;
  g.edits.envs["VGPU_SLOT_ID"] = std::to_string(c.id);
  g.edits.envs["VGPU_SLOT_NAME"] = c.name;
  g.edits.envs["VGPU_MEMORY_QUOTA_BYTES"] = std::to_string(c.memory_quota_bytes);
  if (!c.gpu_uuid.empty()) {
    g.edits.envs["VGPU_GPU_UUID"] = c.gpu_uuid;
  }
  std::error_code ec;
  if (!options_.driver_library_dir.empty() &&
      std::filesystem::is_directory(options_.driver_library_dir, ec)) {
    g.edits.mounts.push_back({options_.driver_library_dir, "/usr/local/nvidia", true});
    g.edits.envs["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64:/usr/local/nvidia/lib";
    g.edits.envs["PATH"] =
        "/usr/local/nvidia/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  }
  for (const auto& d : options_.extra.devices) {
    g.edits.devices.push_back(d);
  }
  for (const auto& m : options_.extra.mounts) {
    g.edits.mounts.push_back(m);
  }
  for (const auto& [k, v] : options_.extra.envs) {
    g.edits.envs.emplace(k, v);
  }
  g.annotations["vgpu.io/slot"] = std::to_string(c.id);
  g.annotations["vgpu.io/slot-name"] = c.name;
  g.annotations[options_.memory_resource] = std::to_string(c.memory_quota_bytes);
  if (!options_.cdi_kind.empty()) {
    g.cdi_devices.push_back(options_.cdi_kind + "=slot" + std::to_string(c.id));
  }
  return g;
}

Status SlotManager::DestroyLocked(uint32_t id, std::string_view reason) {
  auto it = slots_.find(id);
  if (it == slots_.end()) {
    return NotFoundError("slot " + std::to_string(id) + " does not exist");
  }
  Status s = backend_.Destroy(id);
  if (!s.ok() && s.code() != StatusCode::kNotFound) {
    LogWarn("event=slot_destroy_failed " + Describe(it->second.record) + " reason=\"" +
            std::string(reason) + "\" error=\"" + s.ToString() + "\"");
    return s;
  }
  LogInfo("event=slot_destroyed " + Describe(it->second.record) + " reason=\"" +
          std::string(reason) + "\"");
  if (!options_.cdi_kind.empty()) {
    std::error_code ec;
    std::filesystem::remove(CdiSpecPath(id), ec);
  }
  bool exclusive = it->second.record.config.exclusive;
  uint32_t gpu = it->second.record.config.gpu;
  slots_.erase(it);
  bool still_used = std::any_of(slots_.begin(), slots_.end(), [&](const auto& kv) {
    return kv.second.record.config.gpu == gpu && kv.second.record.config.exclusive == exclusive;
  });
  if (!still_used) {
    BumpLocked();  // the GPU's other-mode IDs become available again
  }
  return OkStatus();
}

Result<Grant> SlotManager::Allocate(ResourceKind kind, const std::vector<std::string>& ids) {
  Result<Grant> result = AllocateUncounted(kind, ids);
  std::lock_guard lock(mu_);
  ++(result.ok() ? counters_.allocations : counters_.allocation_failures);
  return result;
}

SlotManager::AllocationCounters SlotManager::Counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::map<uint32_t, bool> SlotManager::GpuHealth() const {
  std::lock_guard lock(mu_);
  return gpu_healthy_;
}

Result<Grant> SlotManager::AllocateUncounted(ResourceKind kind,
                                             const std::vector<std::string>& ids) {
  const std::string& resource = ResourceName(kind);
  if (kind == ResourceKind::kWholeGpu) {
    if (ids.size() != 1) {
      return InvalidArgumentError(resource + ": one whole GPU per container (asked for " +
                                  std::to_string(ids.size()) + ")");
    }
    auto id = alloc::ParseDeviceId(ids[0], kind);
    if (!id.ok()) {
      return id.status();
    }
    if (FindGpu(id->gpu) == nullptr) {
      return InvalidArgumentError("device ID " + ids[0] + ": gpu" + std::to_string(id->gpu) +
                                  " does not exist on this node");
    }
    std::lock_guard lock(mu_);
    return AllocateWholeLocked(id->gpu, ids[0]);
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
  for (const auto& [id, t] : slots_) {
    if (t.record.config.gpu == set->gpu && t.record.config.exclusive) {
      return FailedPreconditionError("gpu" + std::to_string(set->gpu) + " is held whole by slot " +
                                     std::to_string(id) + " (" + Owner(t.record) + "); " +
                                     resource + " cannot be served from it");
    }
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
  for (auto& [id, t] : slots_) {
    if (t.record.config.name == key &&
        (t.record.memory_ids.empty() || t.record.memory_ids == ids)) {
      if (t.record.memory_ids.empty()) {
        t.record.memory_ids = ids;
        VGPU_RETURN_IF_ERROR(SaveLocked());
      }
      LogInfo("event=allocate_reused " + Describe(t.record));
      if (!options_.cdi_kind.empty() && !std::filesystem::exists(CdiSpecPath(id))) {
        VGPU_RETURN_IF_ERROR(WriteCdiSpec(t.record));
      }
      return MakeGrant(t.record);
    }
  }
  // The kubelet hands out only IDs no live container holds, so a slot still holding any of
  // them belongs to a container that is gone: reclaim it now rather than after the grace.
  std::set<std::string> wanted(ids.begin(), ids.end());
  std::vector<uint32_t> stale;
  for (const auto& [id, t] : slots_) {
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
  config.memory_quota_bytes = set.units.size() * options_.memory_unit_bytes;
  config.compute_share_percent = 100;  // until PreStartContainer links the core share
  config.managed_policy = options_.managed_policy;
  config.unknown_policy = options_.unknown_policy;
  bool was_shared = std::any_of(slots_.begin(), slots_.end(), [&](const auto& kv) {
    return kv.second.record.config.gpu == set.gpu;
  });
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
  Tracked t{SlotRecord{}, clock_(), std::nullopt, {}, {}};
  t.record.config = config;
  t.record.memory_ids = ids;
  slots_[config.id] = t;
  Status saved = SaveLocked();
  if (!saved.ok()) {
    slots_.erase(config.id);
    Status undo = backend_.Destroy(config.id);
    LogError("event=allocate_failed slot=" + std::to_string(config.id) + " error=\"" +
             saved.ToString() + "\" undo=\"" + undo.ToString() + "\"");
    return saved.Annotate("recording slot " + key);
  }
  if (options_.crash_point) {
    options_.crash_point("after-checkpoint");
  }
  if (!was_shared) {
    BumpLocked();
  }
  LogInfo("event=slot_created " + Describe(t.record));
  if (!options_.cdi_kind.empty()) {
    VGPU_RETURN_IF_ERROR(WriteCdiSpec(t.record));
  }
  return MakeGrant(t.record);
}

Result<Grant> SlotManager::AllocateWholeLocked(uint32_t gpu, const std::string& id) {
  std::string key = alloc::WholeGpuSlotKey(gpu);
  for (auto& [sid, t] : slots_) {
    if (t.record.config.gpu != gpu) {
      continue;
    }
    if (t.record.config.exclusive) {
      LogInfo("event=allocate_reused " + Describe(t.record));
      if (!options_.cdi_kind.empty() && !std::filesystem::exists(CdiSpecPath(sid))) {
        VGPU_RETURN_IF_ERROR(WriteCdiSpec(t.record));
      }
      return MakeGrant(t.record);
    }
    return FailedPreconditionError("gpu" + std::to_string(gpu) + " is shared by slot " +
                                   std::to_string(sid) + " (" + Owner(t.record) +
                                   "); a whole-GPU request needs a GPU with no slots");
  }
  const alloc::GpuInfo* info = FindGpu(gpu);
  slots::SlotConfig config;
  config.name = key;
  config.gpu = gpu;
  config.gpu_uuid = info->uuid;
  config.memory_quota_bytes = 0;  // unlimited: the container has the GPU to itself
  config.compute_share_percent = 100;
  config.managed_policy = slots::ManagedPolicy::kAllowUncounted;
  config.unknown_policy = options_.unknown_policy;
  config.exclusive = true;
  auto created = backend_.Create(config);
  if (!created.ok()) {
    return created.status().Annotate("creating the whole-GPU slot for " + id);
  }
  config.id = *created;
  Tracked t{SlotRecord{}, clock_(), std::nullopt, {}, {}};
  t.record.config = config;
  t.record.gpu_ids = {id};
  slots_[config.id] = t;
  Status saved = SaveLocked();
  if (!saved.ok()) {
    slots_.erase(config.id);
    (void)backend_.Destroy(config.id);
    return saved.Annotate("recording slot " + key);
  }
  BumpLocked();
  LogInfo("event=slot_created " + Describe(t.record));
  if (!options_.cdi_kind.empty()) {
    VGPU_RETURN_IF_ERROR(WriteCdiSpec(t.record));
  }
  return MakeGrant(t.record);
}

Result<std::vector<std::string>> SlotManager::Preferred(
    ResourceKind kind, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  if (size <= 0 || static_cast<int>(out.size()) >= size) {
    return out;
  }
  std::map<uint32_t, std::vector<uint32_t>> free_units;  // gpu -> available units, sorted
  std::set<std::string> taken(must_include.begin(), must_include.end());
  for (const std::string& a : available) {
    auto id = alloc::ParseDeviceId(a, kind);
    if (id.ok() && taken.count(a) == 0) {
      free_units[id->gpu].push_back(id->unit);
    }
  }
  for (auto& [g, units] : free_units) {
    std::sort(units.begin(), units.end());
  }
  size_t need = static_cast<size_t>(size) - out.size();
  std::lock_guard lock(mu_);
  std::vector<alloc::GpuLoad> loads = LoadsLocked();
  auto avail_on = [&](uint32_t gpu) {
    auto it = free_units.find(gpu);
    return it == free_units.end() ? size_t{0} : it->second.size();
  };
  std::optional<uint32_t> chosen;
  if (!must_include.empty()) {
    auto id = alloc::ParseDeviceId(must_include[0], kind);
    if (id.ok()) {
      chosen = id->gpu;
    }
  }
  auto now = clock_();
  if (!chosen && pending_pick_ && pending_pick_->kind != kind &&
      now - pending_pick_->at < std::chrono::seconds(10) && avail_on(pending_pick_->gpu) >= need) {
    chosen = pending_pick_->gpu;  // the other resource of (very likely) the same container
    pending_pick_.reset();
  }
  if (!chosen) {
    // Only what the kubelet offers counts as free.
    for (size_t i = 0; i < gpus_.size(); ++i) {
      size_t n = avail_on(gpus_[i].index);
      if (kind == ResourceKind::kMemory) {
        loads[i].memory_free =
            std::min<uint64_t>(loads[i].memory_free, n * options_.memory_unit_bytes);
      } else if (kind == ResourceKind::kCore) {
        loads[i].cores_free = std::min<uint32_t>(loads[i].cores_free, static_cast<uint32_t>(n));
      }
      if (n < need) {
        loads[i].healthy = false;  // cannot serve this request
      }
    }
    alloc::PlacementRequest req;
    if (kind == ResourceKind::kMemory) {
      req.memory_bytes = need * options_.memory_unit_bytes;
      req.cores = 1;
    } else if (kind == ResourceKind::kCore) {
      req.cores = static_cast<uint32_t>(need);
    } else {
      req.whole_gpu = true;
    }
    auto placed = placer_->Place(loads, req);
    if (!placed.ok()) {
      // No GPU fits: give no preference and let Allocate explain.
      return out;
    }
    chosen = gpus_[*placed].index;
    if (kind != ResourceKind::kWholeGpu) {
      pending_pick_ = PendingPick{kind, *chosen, now};
    }
  }
  auto it = free_units.find(*chosen);
  if (it != free_units.end()) {
    for (size_t i = 0; i < it->second.size() && out.size() < static_cast<size_t>(size); ++i) {
      out.push_back(FormatDeviceId({kind, *chosen, it->second[i]}));
    }
  }
  return out;
}

Status SlotManager::LinkLocked(Tracked& t, const podresources::ContainerAssignment& owner,
                               bool* changed) {
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
    r.config.compute_share_percent = share;
    if (const auto* mem = IdsFor(owner, options_.memory_resource); mem != nullptr) {
      r.memory_ids = Sorted(*mem);
    }
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
  std::lock_guard lock(mu_);
  Tracked* target = nullptr;
  if (whole != nullptr && !whole->empty()) {
    for (auto& [id, t] : slots_) {
      if (t.record.config.exclusive && t.record.gpu_ids == Sorted(*whole)) {
        target = &t;
      }
    }
  } else {
    if (memory == nullptr || memory->empty()) {
      if (core != nullptr && !core->empty()) {
        return InvalidArgumentError("container " + who + " asks for " +
                                    std::to_string(core->size()) + " " + options_.core_resource +
                                    " but no " + options_.memory_resource +
                                    "; a slot is memory plus compute of one GPU, request " +
                                    options_.memory_resource + " too");
      }
      return InvalidArgumentError("container " + who + " holds no " + options_.memory_resource);
    }
    auto mset = ParseIdSet(*memory, ResourceKind::kMemory);
    if (!mset.ok()) {
      return mset.status();
    }
    std::string key = alloc::SlotKey(mset->gpu, mset->units);
    for (auto& [id, t] : slots_) {
      if (t.record.config.name == key) {
        target = &t;
      }
    }
  }
  if (target == nullptr) {
    return FailedPreconditionError("no slot for container " + who +
                                   ": Allocate did not run for its IDs or its slot was reclaimed");
  }
  bool changed = false;
  VGPU_RETURN_IF_ERROR(LinkLocked(*target, *owner, &changed));
  if (changed) {
    VGPU_RETURN_IF_ERROR(SaveLocked());
    LogInfo("event=slot_linked " + Describe(target->record));
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
  for (auto& [id, t] : slots_) {
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
  if (done > 0) {
    VGPU_RETURN_IF_ERROR(SaveLocked());
  }
  return done;
}

std::vector<SlotRecord> SlotManager::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SlotRecord> out;
  for (const auto& [id, t] : slots_) {
    out.push_back(t.record);
  }
  return out;
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

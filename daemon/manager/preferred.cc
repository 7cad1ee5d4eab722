#include "vgpu/manager/preferred.h"

#include <algorithm>
#include <map>
#include <set>

namespace vgpu::manager {

using alloc::FormatDeviceId;
using alloc::ResourceKind;

std::vector<std::string> PreferredPicker::Pick(ResourceKind kind,
                                               const std::vector<std::string>& available,
                                               const std::vector<std::string>& must_include,
                                               int size, std::vector<alloc::GpuLoad> loads) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  if (size <= 0 || static_cast<int>(out.size()) >= size) {
    return out;
  }
  if (kind == ResourceKind::kWholeGpu) {
    return PickWhole(available, must_include, size, std::move(loads));
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
  if (!chosen && pending_ && pending_->kind != kind &&
      now - pending_->at < std::chrono::seconds(10) && avail_on(pending_->gpu) >= need) {
    chosen = pending_->gpu;  // the other resource of (very likely) the same container
    pending_.reset();
  }
  if (!chosen) {
    // Only what the kubelet offers counts as free.
    for (size_t i = 0; i < gpus_.size() && i < loads.size(); ++i) {
      size_t n = avail_on(gpus_[i].index);
      if (kind == ResourceKind::kMemory) {
        loads[i].memory_free = std::min<uint64_t>(loads[i].memory_free, n * memory_unit_bytes_);
      } else {
        loads[i].cores_free = std::min<uint32_t>(loads[i].cores_free, static_cast<uint32_t>(n));
      }
      if (n < need) {
        loads[i].healthy = false;  // cannot serve this request
      }
    }
    alloc::PlacementRequest req;
    if (kind == ResourceKind::kMemory) {
      req.memory_bytes = need * memory_unit_bytes_;
      req.cores = 1;
    } else {
      req.cores = static_cast<uint32_t>(need);
    }
    auto placed = placer_.Place(loads, req);
    if (!placed.ok()) {
      return out;  // no GPU fits: no preference, and Allocate explains
    }
    chosen = gpus_[placed->front()].index;
    pending_ = PendingPick{kind, *chosen, now};
  }
  auto it = free_units.find(*chosen);
  if (it != free_units.end()) {
    for (size_t i = 0; i < it->second.size() && out.size() < static_cast<size_t>(size); ++i) {
      out.push_back(FormatDeviceId({kind, *chosen, it->second[i]}));
    }
  }
  return out;
}

std::vector<std::string> PreferredPicker::PickWhole(const std::vector<std::string>& available,
                                                    const std::vector<std::string>& must_include,
                                                    int size, std::vector<alloc::GpuLoad> loads) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  std::set<uint32_t> offered;
  for (const std::string& a : available) {
    auto id = alloc::ParseDeviceId(a, ResourceKind::kWholeGpu);
    if (id.ok()) {
      offered.insert(id->gpu);
    }
  }
  for (const std::string& m : must_include) {
    auto id = alloc::ParseDeviceId(m, ResourceKind::kWholeGpu);
    if (id.ok()) {
      offered.erase(id->gpu);  // already in the answer
    }
  }
  for (size_t i = 0; i < gpus_.size() && i < loads.size(); ++i) {
    if (offered.count(gpus_[i].index) == 0) {
      loads[i].healthy = false;  // the kubelet does not offer it
    }
  }
  alloc::PlacementRequest req;
  req.whole_gpu = true;
  req.gpu_count = static_cast<uint32_t>(size) - static_cast<uint32_t>(out.size());
  auto placed = placer_.Place(loads, req);
  if (!placed.ok()) {
    return out;
  }
  for (size_t position : *placed) {
    out.push_back(FormatDeviceId({ResourceKind::kWholeGpu, gpus_[position].index, 0}));
  }
  return out;
}

}  // namespace vgpu::manager

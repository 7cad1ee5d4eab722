// Helpers shared by the SlotManager files (slot_manager.cc, allocate.cc, link.cc, reconcile.cc),
// with the names they use from alloc and slots: `using namespace internal;` is all a file needs.
// Not part of the manager's API.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "vgpu/manager/slot_manager.h"

namespace vgpu::manager {
namespace internal {

using alloc::DeviceId;
using alloc::FormatDeviceId;
using alloc::IdSet;
using alloc::ParseIdSet;
using slots::SlotRecord;

inline std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

inline std::vector<std::string> IdsOf(ResourceKind kind, const IdSet& set) {
  std::vector<std::string> out;
  for (uint32_t u : set.units) {
    out.push_back(FormatDeviceId({kind, set.gpu, u}));
  }
  return Sorted(std::move(out));
}

inline std::string Owner(const SlotRecord& r) {
  if (r.pod_name.empty()) {
    return "pod=- container=-";
  }
  return "pod=" + r.pod_namespace + "/" + r.pod_name + " container=" + r.container;
}

// "mem_quota=... compute_share=... " (every setting, schema order), for log lines.
inline std::string SettingsLogText(const SlotSettings& s) {
  std::string text;
  AppendSettingsText(s, text);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

inline std::string Describe(const SlotRecord& r) {
  return "slot=" + std::to_string(r.config.id) + " name=" + r.config.name +
         " gpu=" + std::to_string(r.config.gpu) + " " + SettingsLogText(r.config) + Owner(r);
}

inline const std::vector<std::string>* IdsFor(const podresources::ContainerAssignment& a,
                                              const std::string& resource) {
  auto it = a.device_ids.find(resource);
  return it == a.device_ids.end() ? nullptr : &it->second;
}

// What the backend enforces; names and UUIDs are labels the module may not keep.
inline bool SameEnforcement(const slots::SlotConfig& a, const slots::SlotConfig& b) {
  return a.gpu == b.gpu &&
         static_cast<const SlotSettings&>(a) == static_cast<const SlotSettings&>(b);
}

}  // namespace internal

}  // namespace vgpu::manager

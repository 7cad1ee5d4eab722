#include "vgpu/dra/slice_builder.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "vgpu/dra/device_model.h"
#include "vgpu/dra/quantity.h"

namespace vgpu::dra {
namespace {

using nlohmann::json;

json Q(uint64_t v) { return FormatQuantity(v); }

json Range(uint64_t min, uint64_t max, uint64_t step) {
  return {{"min", Q(min)}, {"max", Q(max)}, {"step", Q(step)}};
}

// GPUs reached over one NVLink hop: a direct link to the other GPU's PCI function, or links
// from both into the same NVSwitch.
std::string NvLinkPeers(const std::vector<alloc::GpuInfo>& gpus, const alloc::GpuInfo& g) {
  std::string out;
  for (const auto& other : gpus) {
    if (other.index == g.index) {
      continue;
    }
    bool peer = false;
    for (const auto& l : g.nvlinks) {
      if (l.kind == topology::NvLinkPeer::Kind::kGpu && l.remote_pci_bus_id == other.pci_bus_id) {
        peer = true;
      }
      if (l.kind == topology::NvLinkPeer::Kind::kSwitch) {
        peer = peer || std::any_of(other.nvlinks.begin(), other.nvlinks.end(), [&](const auto& o) {
                 return o.kind == topology::NvLinkPeer::Kind::kSwitch &&
                        o.remote_pci_bus_id == l.remote_pci_bus_id;
               });
      }
    }
    if (peer) {
      if (!out.empty()) {  // two appends: GCC 12 -O3 warns (-Wrestrict) on "," + string
        out += ',';
      }
      out += std::to_string(other.index);
    }
  }
  return out;
}

// A DeviceAttribute "version" must be a semantic version (resource.k8s.io/v1): "9.0" becomes
// "9.0.0", NVIDIA's "535.104.05" becomes "535.104.5" (no leading zeros). Empty when `text` is
// not one to three dot-separated numbers; the attribute is then left out.
std::string SemanticVersion(std::string_view text) {
  std::string out;
  int parts = 0;
  while (parts < 3 && !text.empty()) {
    size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
      return "";
    }
    out += (parts++ == 0 ? "" : ".") + std::to_string(v);
    text = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    if (dot != std::string_view::npos && text.empty()) {
      return "";  // "9."
    }
  }
  if (!text.empty() || parts == 0) {
    return "";
  }
  for (; parts < 3; ++parts) {
    out += ".0";
  }
  return out;
}

json Attributes(const std::vector<alloc::GpuInfo>& gpus, const alloc::GpuInfo& g, bool share) {
  json a = {{"uuid", {{"string", g.uuid}}},
            {"index", {{"int", g.index}}},
            {"type", {{"string", share ? "share" : "whole"}}},
            {"pciBusID", {{"string", g.pci_bus_id}}},
            {"nvlinkPeers", {{"string", NvLinkPeers(gpus, g)}}}};
  if (!g.name.empty()) {
    a["productName"] = {{"string", g.name}};
  }
  // The names NVIDIA's DRA driver gives them, so selectors carry over.
  if (std::string v = SemanticVersion(g.compute_capability); !v.empty()) {
    a["cudaComputeCapability"] = {{"version", v}};
  }
  if (std::string v = SemanticVersion(g.driver_version); !v.empty()) {
    a["driverVersion"] = {{"version", v}};
  }
  if (g.numa >= 0) {
    a["resource.kubernetes.io/numaNode"] = {{"int", g.numa}};
  }
  if (!g.pci_root.empty()) {
    a["resource.kubernetes.io/pcieRoot"] = {{"string", g.pci_root}};
  }
  return a;
}

json Consumes(const alloc::GpuInfo& g) {
  return json::array(
      {{{"counterSet", CounterSetName(g.index)},
        {"counters", {{std::string(kCounterName), {{"value", Q(g.memory_bytes)}}}}}}});
}

json WholeDevice(const std::vector<alloc::GpuInfo>& gpus, const alloc::GpuInfo& g) {
  return {{"name", WholeDeviceName(g.index)},
          {"attributes", Attributes(gpus, g, false)},
          {"capacity", {{std::string(kMemoryCapacity), {{"value", Q(g.memory_bytes)}}}}},
          {"consumesCounters", Consumes(g)}};
}

json ShareDevice(const std::vector<alloc::GpuInfo>& gpus, const alloc::GpuInfo& g, uint64_t unit) {
  // The quota is whole granules (SlotManager rounds up), so the memory range steps by one; a
  // GPU's total need not be a multiple of it, so max is the largest multiple below it.
  uint64_t max_memory = g.memory_bytes / unit * unit;
  json memory = {{"value", Q(g.memory_bytes)},
                 {"requestPolicy",
                  {{"default", Q(DefaultShareMemory(max_memory))},
                   {"validRange", Range(unit, max_memory, unit)}}}};
  json cores = {{"value", Q(kCoresMax)},
                {"requestPolicy",
                 {{"default", Q(kDefaultShareCores)}, {"validRange", Range(1, kCoresMax, 1)}}}};
  return {
      {"name", ShareDeviceName(g.index)},
      {"attributes", Attributes(gpus, g, true)},
      {"allowMultipleAllocations", true},
      {"capacity", {{std::string(kMemoryCapacity), memory}, {std::string(kCoresCapacity), cores}}},
      {"consumesCounters", Consumes(g)}};
}

json Slice(const SliceOptions& o, const std::string& suffix) {
  json meta = {{"name", o.node_name + "-" + o.driver_name + "-" + suffix},
               {"labels", {{kNodeLabel, o.node_name}}}};
  if (!o.node_uid.empty()) {
    meta["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                            {"kind", "Node"},
                                            {"name", o.node_name},
                                            {"uid", o.node_uid},
                                            {"controller", true}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", meta},
          {"spec", {{"driver", o.driver_name}, {"nodeName", o.node_name}}}};
}

}  // namespace

std::vector<json> BuildSlices(const std::vector<alloc::GpuInfo>& gpus,
                              const std::map<uint32_t, bool>& healthy, const SliceOptions& o,
                              int64_t generation) {
  std::vector<json> slices;
  for (size_t first = 0; first < gpus.size(); first += kCounterSetsPerSlice) {
    json s = Slice(o, "counters-" + std::to_string(first / kCounterSetsPerSlice));
    json sets = json::array();
    for (size_t i = first; i < std::min(gpus.size(), first + kCounterSetsPerSlice); ++i) {
      sets.push_back(
          {{"name", CounterSetName(gpus[i].index)},
           {"counters", {{std::string(kCounterName), {{"value", Q(gpus[i].memory_bytes)}}}}}});
    }
    s["spec"]["sharedCounters"] = sets;
    slices.push_back(std::move(s));
  }
  for (size_t first = 0; first < gpus.size(); first += kGpusPerDeviceSlice) {
    json s = Slice(o, "devices-" + std::to_string(first / kGpusPerDeviceSlice));
    json devices = json::array();
    for (size_t i = first; i < std::min(gpus.size(), first + kGpusPerDeviceSlice); ++i) {
      auto h = healthy.find(gpus[i].index);
      if (h != healthy.end() && !h->second) {
        continue;
      }
      devices.push_back(ShareDevice(gpus, gpus[i], o.memory_unit_bytes));
      devices.push_back(WholeDevice(gpus, gpus[i]));
    }
    s["spec"]["devices"] = devices;
    slices.push_back(std::move(s));
  }
  for (json& s : slices) {
    s["spec"]["pool"] = {{"name", o.node_name},
                         {"generation", generation},
                         {"resourceSliceCount", static_cast<int64_t>(slices.size())}};
  }
  return slices;
}

}  // namespace vgpu::dra

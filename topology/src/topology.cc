#include "vgpu/topology/topology.h"

#include <algorithm>
#include <set>
#include <utility>

#include "vgpu/enum_names.h"

namespace vgpu::topology {
namespace {

// NVLinks bonded between two GPUs: links that end at the other GPU, plus, when both reach the
// same NVSwitch fabric, the smaller of their switch link counts (a GPU's bandwidth to any peer
// through the switches is bounded by its own links into them; nvidia-smi prints NV18 for every
// pair of an HGX H100, whose GPUs each have 18 links into the NVSwitches).
int CountNvLinks(const Gpu& a, const Gpu& b) {
  int direct_ab = 0;
  int direct_ba = 0;
  int switch_a = 0;
  int switch_b = 0;
  std::set<std::string> switches_a;
  for (const NvLinkPeer& peer : a.nvlinks) {
    if (peer.kind == NvLinkPeer::Kind::kSwitch) {
      switch_a += peer.links;
      switches_a.insert(peer.remote_pci_bus_id);
    } else if (peer.remote_pci_bus_id == b.pci_bus_id) {
      direct_ab += peer.links;
    }
  }
  bool share_switch = false;
  for (const NvLinkPeer& peer : b.nvlinks) {
    if (peer.kind == NvLinkPeer::Kind::kSwitch) {
      switch_b += peer.links;
      share_switch = share_switch || switches_a.contains(peer.remote_pci_bus_id);
    } else if (peer.remote_pci_bus_id == a.pci_bus_id) {
      direct_ba += peer.links;
    }
  }
  // Each side reports its own end of a direct link; a one-sided record still counts.
  int direct = std::max(direct_ab, direct_ba);
  return direct + (share_switch ? std::min(switch_a, switch_b) : 0);
}

// The PCIe part of the ladder, from where the two paths meet in the PCI tree.
LinkLevel PcieLevel(const Gpu& a, const Gpu& b) {
  if (a.pci_root != b.pci_root) {
    // Different host bridges: NODE inside one NUMA node, SYS across the socket interconnect.
    return a.numa_node == b.numa_node ? LinkLevel::kNode : LinkLevel::kSys;
  }
  size_t common = 0;
  while (common < a.pci_path.size() && common < b.pci_path.size() &&
         a.pci_path[common] == b.pci_path[common]) {
    ++common;
  }
  // pci_path[0] is the root port, part of the host bridge: meeting there (or above it) means
  // the traffic crosses the host bridge.
  if (common <= 1) {
    return LinkLevel::kPhb;
  }
  // Bridges crossed below the root port: each side's own bridges under the meeting point plus
  // the meeting bridge. One switch is its upstream port plus two downstream ports: 3 bridges.
  size_t bridges = (a.pci_path.size() - common) + (b.pci_path.size() - common) + 1;
  return bridges <= 3 ? LinkLevel::kPix : LinkLevel::kPxb;
}

constexpr EnumName<LinkLevel> kLinkLevelNames[] = {
    {LinkLevel::kSys, "SYS"}, {LinkLevel::kNode, "NODE"}, {LinkLevel::kPhb, "PHB"},
    {LinkLevel::kPxb, "PXB"}, {LinkLevel::kPix, "PIX"},   {LinkLevel::kNvLink, "NV"},
    {LinkLevel::kSelf, "X"},
};
static_assert(ListsEach(kLinkLevelNames, LinkLevel::kSys, LinkLevel::kSelf));

}  // namespace

std::string_view LinkLevelName(LinkLevel level) { return NameOf(level, kLinkLevelNames, "?"); }

int LinkRankOf(LinkLevel level, int nvlink_count) {
  switch (level) {
    case LinkLevel::kNvLink:
      return 100 + std::clamp(nvlink_count, 0, 800);
    case LinkLevel::kSelf:
      return 1000;
    default:
      return static_cast<int>(level) * 10;
  }
}

Topology::Topology(std::vector<Gpu> gpus) : gpus_(std::move(gpus)) {}

Result<Topology> Topology::Create(std::vector<Gpu> gpus) {
  if (gpus.size() > static_cast<size_t>(kMaxGpus)) {
    return InvalidArgumentError("topology: " + std::to_string(gpus.size()) + " GPUs, at most " +
                                std::to_string(kMaxGpus) + " supported");
  }
  std::set<std::string> bus_ids;
  std::set<std::string> uuids;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const Gpu& gpu = gpus[i];
    std::string where = "topology: GPU " + std::to_string(i);
    if (gpu.index != static_cast<int>(i)) {
      return InvalidArgumentError(where + ": index " + std::to_string(gpu.index) +
                                  ", GPUs must be listed by index 0..n-1");
    }
    if (gpu.pci_bus_id.empty()) {
      return InvalidArgumentError(where + ": no PCI bus id");
    }
    if (!bus_ids.insert(gpu.pci_bus_id).second) {
      return InvalidArgumentError(where + ": PCI bus id " + gpu.pci_bus_id + " repeated");
    }
    if (!gpu.uuid.empty() && !uuids.insert(gpu.uuid).second) {
      return InvalidArgumentError(where + ": UUID " + gpu.uuid + " repeated");
    }
    for (const NvLinkPeer& peer : gpu.nvlinks) {
      if (peer.links < 0) {
        return InvalidArgumentError(where + ": negative NVLink count to " + peer.remote_pci_bus_id);
      }
    }
  }
  Topology topology(std::move(gpus));
  const int n = topology.size();
  topology.levels_.assign(n * n, LinkLevel::kSelf);
  topology.nvlinks_.assign(n * n, 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) {
        continue;
      }
      const Gpu& ga = topology.gpus_[a];
      const Gpu& gb = topology.gpus_[b];
      int nvlinks = CountNvLinks(ga, gb);
      topology.nvlinks_[a * n + b] = nvlinks;
      topology.levels_[a * n + b] = nvlinks > 0 ? LinkLevel::kNvLink : PcieLevel(ga, gb);
    }
  }
  return topology;
}

int Topology::LinkRank(int a, int b) const { return LinkRankOf(Link(a, b), NvLinkCount(a, b)); }

std::string Topology::LinkLabel(int a, int b) const {
  LinkLevel level = Link(a, b);
  if (level == LinkLevel::kNvLink) {
    return "NV" + std::to_string(NvLinkCount(a, b));
  }
  return std::string(LinkLevelName(level));
}

}  // namespace vgpu::topology

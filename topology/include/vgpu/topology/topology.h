// The GPU tree of one node and the link level between every pair of GPUs.
//
// A Topology is built from a list of GPUs, each carrying where it sits in the PCI tree (host
// bridge, then the bridges from the root port down to the GPU) and its NVLink peers. From that,
// Link(a, b) answers with the meaning of `nvidia-smi topo -m`:
//
//   X    = self
//   SYS  = traverses PCIe and the SMP interconnect between NUMA nodes (QPI/UPI)
//   NODE = traverses PCIe and the interconnect between PCIe host bridges within a NUMA node
//   PHB  = traverses PCIe and a PCIe host bridge (typically the CPU)
//   PXB  = traverses multiple PCIe bridges (without traversing the PCIe host bridge)
//   PIX  = traverses at most a single PCIe bridge (one switch)
//   NV#  = traverses a bonded set of # NVLinks
//
// (legend of `nvidia-smi topo -m`; NVML's nvmlGpuTopologyLevel_t INTERNAL/SINGLE/MULTIPLE/
// HOSTBRIDGE/NODE/SYSTEM is the same ladder, nvml.h "nvmlDeviceGetTopologyCommonAncestor").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::topology {

// Ordered worst to best: a larger value is a better link (see BetterThan).
enum class LinkLevel : int {
  kSys = 1,     // SYS
  kNode = 2,    // NODE
  kPhb = 3,     // PHB
  kPxb = 4,     // PXB
  kPix = 5,     // PIX
  kNvLink = 6,  // NV# (the count is Topology::NvLinkCount)
  kSelf = 7,    // X
};

// "SYS", "NODE", "PHB", "PXB", "PIX", "NV", "X".
std::string_view LinkLevelName(LinkLevel level);
// True when `a` is a strictly better (faster, fewer hops) link than `b`.
constexpr bool BetterThan(LinkLevel a, LinkLevel b) {
  return static_cast<int>(a) > static_cast<int>(b);
}

// What an NVLink of a GPU ends at, aggregated per remote device.
struct NvLinkPeer {
  enum class Kind { kGpu, kSwitch };
  std::string remote_pci_bus_id;  // canonical "0000:18:00.0"
  Kind kind = Kind::kGpu;
  int links = 0;  // active links to this remote
};

struct Gpu {
  int index = 0;                   // NVML index order (PCI bus id order), 0..n-1
  std::string uuid;                // "GPU-6f0c..."
  std::string name;                // product name, informational
  std::string compute_capability;  // CUDA compute capability, "9.0"; empty: unknown
  std::string driver_version;      // the NVIDIA driver's, "550.54.15"; empty: unknown
  uint64_t memory_bytes = 0;       // total framebuffer
  int numa_node = -1;              // -1: unknown / single node
  std::string pci_bus_id;          // canonical lower-case "0000:18:00.0"
  std::string cpu_affinity;  // cpulist of the GPU's local CPUs, "0-55,112-167"; empty: unknown
  // The PCI tree: the host bridge ("pci0000:15", the sysfs root) and the bridges from the root
  // port down to the GPU's parent, each a canonical bus id.
  std::string pci_root;
  std::vector<std::string> pci_path;
  std::vector<NvLinkPeer> nvlinks;
};

class Topology {
 public:
  // Validates (indexes are 0..n-1 in order, bus ids and UUIDs unique, at most kMaxGpus) and
  // computes every pair's link.
  static Result<Topology> Create(std::vector<Gpu> gpus);

  static constexpr int kMaxGpus = 64;  // placement keeps GPU sets in a 64-bit mask

  int size() const { return static_cast<int>(gpus_.size()); }
  const std::vector<Gpu>& gpus() const { return gpus_; }
  const Gpu& gpu(int index) const { return gpus_[index]; }

  // Link level between GPUs a and b (kSelf when a == b). Indexes must be valid.
  LinkLevel Link(int a, int b) const { return levels_[a * size() + b]; }
  // Number of NVLinks bonded between a and b (0 unless Link(a, b) == kNvLink).
  int NvLinkCount(int a, int b) const { return nvlinks_[a * size() + b]; }
  // One total order over links, higher is better: PCIe levels by level, NVLink above every PCIe
  // level and by link count among themselves (NV18 > NV12 > NV4).
  int LinkRank(int a, int b) const;
  // What nvidia-smi prints for the pair: "X", "NV18", "PIX", ...
  std::string LinkLabel(int a, int b) const;

 private:
  explicit Topology(std::vector<Gpu> gpus);
  std::vector<Gpu> gpus_;
  std::vector<LinkLevel> levels_;  // size() x size(), row-major
  std::vector<int> nvlinks_;       // size() x size()
};

// Rank of a link given its level and NVLink count (the order Topology::LinkRank uses).
int LinkRankOf(LinkLevel level, int nvlink_count);

}  // namespace vgpu::topology

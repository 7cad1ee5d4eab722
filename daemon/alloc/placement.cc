#include "vgpu/alloc/placement.h"

#include <algorithm>
#include <vector>

#include "vgpu/topology/placement.h"

namespace vgpu::alloc {
namespace {

class TopologyPlacer final : public Placer {
 public:
  TopologyPlacer(topology::Topology topo, std::unique_ptr<topology::Evaluator> eval,
                 std::vector<uint64_t> memory)
      : topo_(std::move(topo)), eval_(std::move(eval)), memory_(std::move(memory)) {}

  std::string_view Name() const override { return eval_->Name(); }

  Result<std::vector<size_t>> Place(std::span<const GpuLoad> loads,
                                    const PlacementRequest& r) const override {
    std::vector<topology::GpuLoad> tl(loads.size());
    for (size_t i = 0; i < loads.size() && i < memory_.size(); ++i) {
      tl[i].cores_used = 100 - static_cast<int>(std::min<uint32_t>(loads[i].cores_free, 100));
      tl[i].memory_used = memory_[i] - std::min(memory_[i], loads[i].memory_free);
      tl[i].exclusive = loads[i].exclusive;
      tl[i].healthy = loads[i].healthy;
    }
    topology::PlacementRequest tr;
    tr.gpu_count = static_cast<int>(r.gpu_count);
    tr.whole_gpu = r.whole_gpu;
    tr.cores = r.cores == 0 ? 1 : static_cast<int>(r.cores);
    tr.memory_bytes = r.memory_bytes;
    auto placed = eval_->Place(topo_, tl, tr);
    if (!placed.ok()) {
      return placed.status();
    }
    if (placed->gpus.size() != r.gpu_count) {
      return InternalError("evaluator returned " + std::to_string(placed->gpus.size()) +
                           " GPUs for a " + std::to_string(r.gpu_count) + "-GPU request");
    }
    std::vector<size_t> out(placed->gpus.begin(), placed->gpus.end());
    return out;
  }

 private:
  topology::Topology topo_;
  std::unique_ptr<topology::Evaluator> eval_;
  std::vector<uint64_t> memory_;
};

}  // namespace

Result<std::unique_ptr<Placer>> MakePlacer(std::string_view policy, std::span<const GpuInfo> gpus) {
  auto eval = topology::MakeEvaluator(policy);
  if (!eval.ok()) {
    return eval.status();
  }
  std::vector<topology::Gpu> tg;
  std::vector<uint64_t> memory;
  for (size_t i = 0; i < gpus.size(); ++i) {
    topology::Gpu g;
    g.index = static_cast<int>(i);
    g.uuid = gpus[i].uuid;
    g.memory_bytes = gpus[i].memory_bytes;
    g.numa_node = gpus[i].numa;
    g.pci_bus_id = gpus[i].pci_bus_id;
    g.pci_root = gpus[i].pci_root;
    g.pci_path = gpus[i].pci_path;
    g.nvlinks = gpus[i].nvlinks;
    tg.push_back(std::move(g));
    memory.push_back(gpus[i].memory_bytes);
  }
  auto topo = topology::Topology::Create(std::move(tg));
  if (!topo.ok()) {
    return topo.status();
  }
  return std::unique_ptr<Placer>(
      new TopologyPlacer(std::move(*topo), std::move(*eval), std::move(memory)));
}

}  // namespace vgpu::alloc

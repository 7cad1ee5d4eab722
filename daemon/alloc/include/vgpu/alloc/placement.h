// Which GPU gets a request. The manager asks through this small interface; the policies are
// topology/'s evaluators (firstfit, binpack, spread, topology, memory), fed the GPUs' loads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/alloc/inventory.h"
#include "vgpu/status.h"

namespace vgpu::alloc {

struct GpuLoad {
  uint32_t cores_free = 100;  // percent still unallocated
  uint64_t memory_free = 0;   // bytes still unallocated
  bool exclusive = false;     // held whole by one container
  bool healthy = true;
};

struct PlacementRequest {
  uint32_t cores = 0;         // percent per GPU; 0 = not asked
  uint64_t memory_bytes = 0;  // per GPU; 0 = not asked
  bool whole_gpu = false;
  uint32_t gpu_count = 1;  // several GPUs: the best-linked set that fits (topology/placement.h)
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string_view Name() const = 0;
  // Positions in the inventory of the chosen GPUs (request.gpu_count of them, ascending);
  // kResourceExhausted when no set fits.
  virtual Result<std::vector<size_t>> Place(std::span<const GpuLoad> loads,
                                            const PlacementRequest& request) const = 0;
};

// `policy` is an evaluator name of topology/placement.h. The GPUs' PCI paths and NVLinks build
// the topology the evaluator scores links on; GPUs without them (tests' hand-made lists) are
// all PHB apart.
Result<std::unique_ptr<Placer>> MakePlacer(std::string_view policy, std::span<const GpuInfo> gpus);

}  // namespace vgpu::alloc

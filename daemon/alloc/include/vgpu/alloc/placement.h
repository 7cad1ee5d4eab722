// Which GPU gets a request. The manager asks through this small interface; the policies are
// topology/'s evaluators (firstfit, binpack, spread, topology, memory), fed the GPUs' loads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

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
  uint32_t cores = 0;         // percent; 0 = not asked
  uint64_t memory_bytes = 0;  // 0 = not asked
  bool whole_gpu = false;
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string_view Name() const = 0;
  // Position in the inventory of the chosen GPU; kResourceExhausted when none fits.
  virtual Result<size_t> Place(std::span<const GpuLoad> loads,
                               const PlacementRequest& request) const = 0;
};

// `policy` is an evaluator name of topology/placement.h.
Result<std::unique_ptr<Placer>> MakePlacer(std::string_view policy, std::span<const GpuInfo> gpus);

}  // namespace vgpu::alloc

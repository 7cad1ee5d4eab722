// Placement vocabulary shared by every evaluator: request checks, fit, load bookkeeping, set link
// quality.
#include "vgpu/topology/placement.h"

#include <algorithm>
#include <limits>

namespace vgpu::topology {

Status ValidateRequest(const Topology& topology, std::span<const GpuLoad> loads,
                       const PlacementRequest& request) {
  if (loads.size() != static_cast<size_t>(topology.size())) {
    return InvalidArgumentError("placement: " + std::to_string(loads.size()) + " loads for " +
                                std::to_string(topology.size()) + " GPUs");
  }
  if (request.gpu_count < 1) {
    return InvalidArgumentError("placement: gpu_count " + std::to_string(request.gpu_count) +
                                ", must be at least 1");
  }
  if (request.gpu_count > topology.size()) {
    return InvalidArgumentError("placement: asks for " + std::to_string(request.gpu_count) +
                                " GPUs, the node has " + std::to_string(topology.size()));
  }
  if (!request.whole_gpu && (request.cores < 1 || request.cores > 100)) {
    return InvalidArgumentError("placement: cores " + std::to_string(request.cores) +
                                " per GPU, must be 1..100");
  }
  return OkStatus();
}

bool Fits(const Gpu& gpu, const GpuLoad& load, const PlacementRequest& request) {
  if (!load.healthy || load.exclusive) {
    return false;
  }
  if (request.whole_gpu) {
    return load.cores_used == 0 && load.memory_used == 0;
  }
  if (load.cores_used + request.cores > 100) {
    return false;
  }
  // Written to avoid overflow: memory_used may already exceed memory_bytes after a resize.
  return load.memory_used <= gpu.memory_bytes &&
         request.memory_bytes <= gpu.memory_bytes - load.memory_used;
}

void Apply(const Topology& topology, std::span<GpuLoad> loads, const PlacementRequest& request,
           std::span<const int> gpus) {
  for (int index : gpus) {
    GpuLoad& load = loads[index];
    if (request.whole_gpu) {
      load.exclusive = true;
      load.cores_used = 100;
      load.memory_used = topology.gpu(index).memory_bytes;
    } else {
      load.cores_used += request.cores;
      load.memory_used += request.memory_bytes;
    }
  }
}

void Release(const Topology& topology, std::span<GpuLoad> loads, const PlacementRequest& request,
             std::span<const int> gpus) {
  (void)topology;
  for (int index : gpus) {
    GpuLoad& load = loads[index];
    if (request.whole_gpu) {
      load.exclusive = false;
      load.cores_used = 0;
      load.memory_used = 0;
    } else {
      load.cores_used = std::max(0, load.cores_used - request.cores);
      load.memory_used -= std::min(load.memory_used, request.memory_bytes);
    }
  }
}

SetLinkQuality LinkQuality(const Topology& topology, std::span<const int> gpus) {
  SetLinkQuality quality;
  quality.worst_rank = LinkRankOf(LinkLevel::kSelf, 0);
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      int rank = topology.LinkRank(gpus[i], gpus[j]);
      quality.worst_rank = std::min(quality.worst_rank, rank);
      quality.rank_sum += rank;
    }
  }
  return quality;
}

}  // namespace vgpu::topology

// The placement oracle: a naive exhaustive search over every subset of the GPUs (bitmasks), with
// none of the evaluators' pruning. The unit test (placement_test.cc) and the placement simulator
// (tests/bench/placement) both check the link-aware evaluators against it.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "vgpu/topology/placement.h"

namespace vgpu::topology {

// The best link quality over every set of `request.gpu_count` GPUs that all fit; nullopt when
// no such set exists. Worst link first (SetLinkQuality's order), so its worst_rank is also the
// best worst-pair rank any set reaches.
inline std::optional<SetLinkQuality> BruteForceBest(const Topology& topology,
                                                    std::span<const GpuLoad> loads,
                                                    const PlacementRequest& request) {
  std::optional<SetLinkQuality> best;
  const int n = topology.size();
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    if (std::popcount(mask) != request.gpu_count) {
      continue;
    }
    std::vector<int> set;
    bool fits = true;
    for (int i = 0; i < n && fits; ++i) {
      if (mask & (1u << i)) {
        fits = Fits(topology.gpu(i), loads[i], request);
        set.push_back(i);
      }
    }
    if (!fits) {
      continue;
    }
    SetLinkQuality quality = LinkQuality(topology, set);
    if (!best || quality > *best) {
      best = quality;
    }
  }
  return best;
}

}  // namespace vgpu::topology

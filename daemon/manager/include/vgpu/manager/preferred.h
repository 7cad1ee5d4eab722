// PreferredPicker: GetPreferredAllocation's answer. Keeps a request's IDs on the GPUs the placer
// chose: one GPU for shared resources, the best-linked set of free GPUs for a multi-GPU
// whole-GPU request. The kubelet asks per resource, in random order (device-plugin-api.md §2.5),
// so the GPU picked for one resource of a container is remembered for a few seconds and the
// other resource of (very likely) the same container is steered to it. Not thread-safe: the
// caller's lock guards it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "vgpu/alloc/device_ids.h"
#include "vgpu/alloc/inventory.h"
#include "vgpu/alloc/placement.h"
#include "vgpu/manager/manager_options.h"

namespace vgpu::manager {

class PreferredPicker {
 public:
  PreferredPicker(const std::vector<alloc::GpuInfo>& gpus, uint64_t memory_unit_bytes,
                  const alloc::Placer& placer, Clock clock)
      : gpus_(gpus), memory_unit_bytes_(memory_unit_bytes), placer_(placer), clock_(clock) {}

  // `loads` is the node's load per GPU, in inventory order. Returns the IDs to prefer: all of
  // must_include, then up to `size` in total from `available`; fewer (no preference) when
  // nothing fits, so Allocate explains.
  std::vector<std::string> Pick(alloc::ResourceKind kind, const std::vector<std::string>& available,
                                const std::vector<std::string>& must_include, int size,
                                std::vector<alloc::GpuLoad> loads);

 private:
  struct PendingPick {
    alloc::ResourceKind kind;
    uint32_t gpu;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<std::string> PickWhole(const std::vector<std::string>& available,
                                     const std::vector<std::string>& must_include, int size,
                                     std::vector<alloc::GpuLoad> loads);

  const std::vector<alloc::GpuInfo>& gpus_;
  uint64_t memory_unit_bytes_;
  const alloc::Placer& placer_;
  Clock clock_;
  std::optional<PendingPick> pending_;
};

}  // namespace vgpu::manager

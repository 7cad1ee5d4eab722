// How vgpu's GPUs look in DRA: one definition of the device names, capacity names and request
// defaults that the ResourceSlices publish (slice_builder.h) and prepare reads back
// (claim_plan.h). Per GPU <i> of the node, in the pool named after the node:
//
//   gpu-<i>-share  allowMultipleAllocations: each claim takes "memory" bytes (step = the quota
//                  granule, --memory-unit) and "cores" percent (1..100) of it
//   gpu-<i>        the whole GPU, no quota
//
// Both consume the GPU's counter set gpu-<i> in full, so the scheduler never gives out the
// whole GPU while a share of it is allocated, nor a share while the whole GPU is (a shared
// device pays its counters once however many claims share it: KEP-4815/5075).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vgpu::dra {

inline constexpr std::string_view kMemoryCapacity = "memory";
inline constexpr std::string_view kCoresCapacity = "cores";
inline constexpr std::string_view kCounterName = "memory";  // in each GPU's counter set
inline constexpr uint32_t kCoresMax = 100;

inline std::string WholeDeviceName(uint32_t gpu) { return "gpu-" + std::to_string(gpu); }
inline std::string ShareDeviceName(uint32_t gpu) { return WholeDeviceName(gpu) + "-share"; }
inline std::string CounterSetName(uint32_t gpu) { return WholeDeviceName(gpu); }

struct DeviceRef {
  uint32_t gpu = 0;
  bool share = false;
};
// gpu-<i> or gpu-<i>-share; nullopt for any other name.
std::optional<DeviceRef> ParseDeviceName(std::string_view name);

// What a claim that names no amount gets of a share (requestPolicy.default): all the GPU's
// memory and all its cores, so an unsized request can never overbook a GPU.
inline uint64_t DefaultShareMemory(uint64_t gpu_memory_bytes) { return gpu_memory_bytes; }
inline constexpr uint32_t kDefaultShareCores = kCoresMax;

}  // namespace vgpu::dra

// Fake device IDs that carry their own meaning. The kubelet counts one unit per ID and tells
// Allocate only which IDs it picked (docs/reference/device-plugin-api.md §2.4, §4), so every
// ID names its GPU and its unit:
//
//   vcuda-core-gpu<G>-<k>     k in 0..99, one per 1 % of GPU G's compute
//   vcuda-memory-gpu<G>-<k>   k in 0..(memory/unit - 1), one per memory unit of GPU G
//   vcuda-gpu<G>              GPU G as a whole (exclusive)
//
// The set of memory IDs then defines a slot deterministically: the kubelet never hands one ID
// to two live containers, so (GPU, lowest memory unit) is unique among live slots. SlotKey()
// names that: "g<G>-m<lowest>-n<count>". IDs stay well under the kubelet's 63-character limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::alloc {

enum class ResourceKind { kCore, kMemory, kWholeGpu };

std::string_view ResourceKindName(ResourceKind kind);  // "vcuda-core", "vcuda-memory", "vcuda-gpu"

struct DeviceId {
  ResourceKind kind;
  uint32_t gpu = 0;
  uint32_t unit = 0;  // 0 for kWholeGpu
  bool operator==(const DeviceId&) const = default;
  auto operator<=>(const DeviceId&) const = default;
};

std::string FormatDeviceId(const DeviceId& id);
// Parses an ID of the expected kind; the error names the ID and what is wrong with it.
Result<DeviceId> ParseDeviceId(std::string_view text, ResourceKind expected);

// A container's IDs of one resource, validated: all of `kind`, all on one GPU, no duplicates.
struct IdSet {
  ResourceKind kind;
  uint32_t gpu = 0;
  std::vector<uint32_t> units;  // sorted
};
// The errors are what `kubectl describe pod` shows, so they say what the user asked and why it
// cannot be served, e.g. "vcuda-memory IDs span GPUs: vcuda-memory-gpu0-3 is on gpu0 but
// vcuda-memory-gpu1-0 is on gpu1; one container gets memory of one GPU".
Result<IdSet> ParseIdSet(const std::vector<std::string>& ids, ResourceKind kind);

std::string SlotKey(uint32_t gpu, const std::vector<uint32_t>& sorted_memory_units);
std::string WholeGpuSlotKey(uint32_t gpu);  // "g<G>-whole"

}  // namespace vgpu::alloc

// The node's ResourceSlices (resource.k8s.io/v1) as the API server should hold them: the
// device model of device_model.h for every healthy GPU, in one pool named after the node.
// Pure: GPUs and health in, slice objects out (slice_publisher.h writes them).
//
// One pool, two kinds of slice, because a slice holds devices or shared counters, never both
// (ResourceSliceSpec.SharedCounters): "<node>-<driver>-counters-<n>" with up to 8 counter sets
// (the API's maximum per slice), "<node>-<driver>-devices-<n>" with up to 32 GPUs (64 devices,
// the maximum when devices consume counters). Every slice carries the pool's generation and
// slice count; the scheduler only uses a pool whose slices all agree on them.
//
// An unhealthy GPU's devices are left out (the kubelet's device-health stream and pods already
// holding it are unaffected; nothing new is scheduled onto it). Attributes per device:
//   uuid, productName, pciBusID (strings), type ("share" | "whole"), index (int),
//   nvlinkPeers (string: the indices of GPUs one NVLink or NVSwitch hop away, "1,2,3"),
//   resource.kubernetes.io/numaNode (int, when known), resource.kubernetes.io/pcieRoot,
//   cudaComputeCapability and driverVersion (versions, "9.0.0" and "535.104.5", when NVML or
//   the fixture knows them)
// and capacity "memory" (bytes) on both devices; "cores" (percent) on the share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/alloc/inventory.h"

namespace vgpu::dra {

struct SliceOptions {
  std::string driver_name;
  std::string node_name;  // also the pool name
  std::string node_uid;   // owner reference: slices go with the Node; empty: none
  uint64_t memory_unit_bytes = 256ull << 20;
};

inline constexpr size_t kCounterSetsPerSlice = 8;
inline constexpr size_t kGpusPerDeviceSlice = 32;

// `healthy` maps GPU index -> health (a missing entry is healthy).
std::vector<nlohmann::json> BuildSlices(const std::vector<alloc::GpuInfo>& gpus,
                                        const std::map<uint32_t, bool>& healthy,
                                        const SliceOptions& options, int64_t generation);

// Label put on every slice this node writes, to list them back (value: the node name).
inline constexpr const char* kNodeLabel = "gpu.vgpu.io/node";

}  // namespace vgpu::dra

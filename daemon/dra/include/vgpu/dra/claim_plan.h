// What a ResourceClaim (resource.k8s.io/v1, as the API server returns it) asks of this node:
// the allocation results for our driver and pool, each turned into a slot request. Pure: JSON
// in, plan or error out; the errors are what the kubelet puts into the pod's events, so they
// name the claim, the result and what is wrong.
//
// Read from status.allocation.devices:
//   results[]: request, driver, pool, device, shareID, consumedCapacity{memory, cores}
//   config[]:  source (FromClass before FromClaim), requests (empty: all), opaque{driver,
//              parameters} where parameters, for this driver, is
//              {"apiVersion": "gpu.vgpu.io/v1alpha1", "kind": "GpuConfig",
//               "compute_mode": "cap" | "weight",
//               "managed_policy": "default" | "refuse" | "allow-uncounted"}
//              keyed and valued as the slot schema spells them (uapi/vgpu_slot_fields.h); any
//              other key, or another value, is an error naming it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/alloc/inventory.h"
#include "vgpu/slots/slot.h"
#include "vgpu/status.h"

namespace vgpu::dra {

inline constexpr const char* kConfigApiVersion = "gpu.vgpu.io/v1alpha1";
inline constexpr const char* kConfigKind = "GpuConfig";

struct ClaimRef {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string ToString() const { return namespace_ + "/" + name + " (uid " + uid + ")"; }
};

struct PlannedDevice {
  std::string request;  // the result's request name
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  uint32_t gpu = 0;
  bool exclusive = false;
  uint64_t memory_bytes = 0;
  uint32_t core_percent = 100;
  slots::ComputeMode compute_mode = slots::ComputeMode::kCap;
  slots::ManagedPolicy managed_policy = slots::ManagedPolicy::kRefuse;
};

struct ClaimPlan {
  ClaimRef claim;
  std::vector<PlannedDevice> devices;  // in result order
};

struct PlanOptions {
  std::string driver_name;
  std::string pool_name;  // the node's pool
  const std::vector<alloc::GpuInfo>* gpus = nullptr;
  slots::ManagedPolicy default_managed_policy = slots::ManagedPolicy::kRefuse;
};

// `claim` is the API server's object; `expected` is what the kubelet sent. A uid mismatch (the
// claim was deleted and re-created under the same name) is kFailedPrecondition; a claim not
// allocated, a device this node does not have, or a bad config is kInvalidArgument/kNotFound.
Result<ClaimPlan> PlanClaim(const nlohmann::json& claim, const ClaimRef& expected,
                            const PlanOptions& options);

}  // namespace vgpu::dra

#include "vgpu/dra/claim_plan.h"

#include <algorithm>

#include "vgpu/dra/device_model.h"
#include "vgpu/dra/quantity.h"

namespace vgpu::dra {
namespace {

using nlohmann::json;

std::string Str(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) {
    return "";
  }
  return obj[key].get<std::string>();
}

// "gpu" matches the result of request "gpu" and of its subrequests "gpu/<sub>" (firstAvailable).
bool ConfigApplies(const json& config, const std::string& request) {
  if (!config.contains("requests") || !config["requests"].is_array() ||
      config["requests"].empty()) {
    return true;
  }
  std::string parent = request.substr(0, request.find('/'));
  return std::any_of(config["requests"].begin(), config["requests"].end(),
                     [&](const json& r) { return r.is_string() && (r == request || r == parent); });
}

// The settings a claim's opaque config may choose, by their slot-schema names
// (uapi/vgpu_slot_fields.h): the others are the scheduler's (mem_quota, compute_share come from
// consumedCapacity) or the node's (unknown_policy lets unknown ioctls through: not a tenant's
// choice).
constexpr std::string_view kClaimSettings[] = {"compute_mode", "managed_policy"};

Status ApplyParameters(const json& params, PlannedDevice& device) {
  if (!params.is_object()) {
    return InvalidArgumentError("opaque parameters must be an object");
  }
  if (Str(params, "apiVersion") != kConfigApiVersion || Str(params, "kind") != kConfigKind) {
    return InvalidArgumentError(std::string("opaque parameters must be apiVersion ") +
                                kConfigApiVersion + ", kind " + kConfigKind + "; got " +
                                Str(params, "apiVersion") + ", " + Str(params, "kind"));
  }
  // Parsed into a copy of the device's settings by the schema's own text codec, so a value is
  // spelled and range-checked exactly as in the slot config file, the checkpoint and vgpuctl.
  SlotSettings settings;
  settings.compute_mode = device.compute_mode;
  settings.managed_policy = device.managed_policy;
  for (const auto& [key, value] : params.items()) {
    if (key == "apiVersion" || key == "kind") {
      continue;
    }
    auto in = [&key](auto&& names) {
      return std::find(std::begin(names), std::end(names), key) != std::end(names);
    };
    if (!in(kClaimSettings)) {
      return InvalidArgumentError(
          "opaque parameter '" + key + "' " +
          (in(SettingKeys()) ? "is not a claim's to set (the allocation or the node decides it)"
                             : "is unknown") +
          "; a claim may set compute_mode, managed_policy");
    }
    if (!value.is_string()) {
      return InvalidArgumentError("opaque parameter '" + key + "' must be a string");
    }
    Status s = SetSettingFromText(settings, key, value.get<std::string>());
    if (!s.ok()) {
      return s.Annotate("opaque parameter");
    }
  }
  device.compute_mode = settings.compute_mode;
  device.managed_policy = settings.managed_policy;
  return OkStatus();
}

Result<uint64_t> Consumed(const json& result, std::string_view name, uint64_t fallback) {
  const json* consumed =
      result.contains("consumedCapacity") ? &result["consumedCapacity"] : nullptr;
  if (consumed == nullptr || !consumed->is_object() || !consumed->contains(name)) {
    return fallback;
  }
  const json& q = (*consumed)[std::string(name)];
  if (!q.is_string()) {
    return InvalidArgumentError("consumedCapacity." + std::string(name) + " is not a quantity");
  }
  return ParseQuantity(q.get<std::string>());
}

}  // namespace

Result<ClaimPlan> PlanClaim(const json& claim, const ClaimRef& expected,
                            const PlanOptions& options) {
  const std::string who = "claim " + expected.ToString();
  if (!claim.is_object() || !claim.contains("metadata")) {
    return InvalidArgumentError(who + ": the API server's answer is not a ResourceClaim");
  }
  std::string uid = Str(claim["metadata"], "uid");
  if (uid != expected.uid) {
    return FailedPreconditionError(who + ": the API server has uid " + uid +
                                   " under that name (deleted and re-created?)");
  }
  const json* alloc = nullptr;
  if (claim.contains("status") && claim["status"].is_object() &&
      claim["status"].contains("allocation") && claim["status"]["allocation"].is_object()) {
    alloc = &claim["status"]["allocation"];
  }
  if (alloc == nullptr || !alloc->contains("devices") || !(*alloc)["devices"].is_object()) {
    return FailedPreconditionError(who + ": not allocated");
  }
  const json& devices = (*alloc)["devices"];
  const json empty = json::array();
  const json& results =
      devices.contains("results") && devices["results"].is_array() ? devices["results"] : empty;
  // FromClass configs first, then FromClaim: the claim's own settings win.
  std::vector<const json*> configs;
  if (devices.contains("config") && devices["config"].is_array()) {
    for (const char* source : {"FromClass", "FromClaim"}) {
      for (const json& c : devices["config"]) {
        if (Str(c, "source") == source && c.contains("opaque") &&
            Str(c["opaque"], "driver") == options.driver_name) {
          configs.push_back(&c);
        }
      }
    }
  }
  ClaimPlan plan;
  plan.claim = expected;
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    if (Str(r, "driver") != options.driver_name) {
      continue;  // another driver's device in the same claim
    }
    PlannedDevice d;
    d.request = Str(r, "request");
    d.pool = Str(r, "pool");
    d.device = Str(r, "device");
    const std::string where =
        who + " result " + std::to_string(i) + " (" + d.pool + "/" + d.device + ")";
    if (d.pool != options.pool_name) {
      return InvalidArgumentError(where + ": pool " + d.pool + " is not this node's (" +
                                  options.pool_name + ")");
    }
    auto ref = ParseDeviceName(d.device);
    const alloc::GpuInfo* gpu = nullptr;
    if (ref) {
      for (const auto& g : *options.gpus) {
        gpu = g.index == ref->gpu ? &g : gpu;
      }
    }
    if (gpu == nullptr) {
      return NotFoundError(where + ": no such device on this node");
    }
    if (r.contains("shareID") && r["shareID"].is_string()) {
      d.share_id = r["shareID"].get<std::string>();
    }
    d.gpu = ref->gpu;
    d.exclusive = !ref->share;
    d.managed_policy = options.default_managed_policy;
    if (ref->share) {
      auto memory = Consumed(r, kMemoryCapacity, DefaultShareMemory(gpu->memory_bytes));
      auto cores = Consumed(r, kCoresCapacity, kDefaultShareCores);
      if (!memory.ok() || !cores.ok()) {
        return (memory.ok() ? cores.status() : memory.status()).Annotate(where);
      }
      if (*cores < 1 || *cores > kCoresMax) {
        return InvalidArgumentError(where + ": cores " + std::to_string(*cores) +
                                    " is outside 1..100");
      }
      d.memory_bytes = *memory;
      d.core_percent = static_cast<uint32_t>(*cores);
    }
    for (const json* c : configs) {
      if (ConfigApplies(*c, d.request)) {
        const json& opaque = (*c)["opaque"];
        Status s =
            ApplyParameters(opaque.contains("parameters") ? opaque["parameters"] : json(), d);
        if (!s.ok()) {
          return s.Annotate(where);
        }
      }
    }
    plan.devices.push_back(std::move(d));
  }
  return plan;
}

}  // namespace vgpu::dra

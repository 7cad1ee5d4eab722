#include "vgpu/slots/slot.h"

namespace vgpu::slots {

std::string_view ManagedPolicyName(ManagedPolicy p) {
  return p == ManagedPolicy::kRefuse ? "refuse" : "allow-uncounted";
}

std::string_view UnknownPolicyName(UnknownPolicy p) {
  return p == UnknownPolicy::kRefuse ? "refuse" : "allow-log";
}

Result<ManagedPolicy> ParseManagedPolicy(std::string_view s) {
  if (s == "refuse") {
    return ManagedPolicy::kRefuse;
  }
  if (s == "allow-uncounted") {
    return ManagedPolicy::kAllowUncounted;
  }
  return InvalidArgumentError("managed policy must be refuse or allow-uncounted, got '" +
                              std::string(s) + "'");
}

Result<UnknownPolicy> ParseUnknownPolicy(std::string_view s) {
  if (s == "refuse") {
    return UnknownPolicy::kRefuse;
  }
  if (s == "allow-log") {
    return UnknownPolicy::kAllowLog;
  }
  return InvalidArgumentError("unknown policy must be refuse or allow-log, got '" + std::string(s) +
                              "'");
}

}  // namespace vgpu::slots

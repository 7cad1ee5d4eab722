// Kubernetes resource quantities ("8Gi", "30", "1.5G", "500m", "1e3"), as the API server writes
// them in ResourceSlice capacities and ResourceClaim consumedCapacity
// (k8s.io/apimachinery/pkg/api/resource: binary suffixes Ki..Ei, decimal k..E and m, or an
// exponent e/E). Only whole non-negative amounts are meaningful to a slot: a fraction rounds up
// (a claim never gets less than the scheduler booked).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vgpu/status.h"

namespace vgpu::dra {

// The amount, rounded up to a whole number; an error names the text and what is wrong.
Result<uint64_t> ParseQuantity(std::string_view text);
// Plain decimal digits: the canonical form for integers without a suffix.
inline std::string FormatQuantity(uint64_t value) { return std::to_string(value); }

}  // namespace vgpu::dra

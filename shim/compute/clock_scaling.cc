#include "shim/compute/clock_scaling.h"

#include <algorithm>

namespace vgpu::shim::compute {

void ClockScalingLearner::Add(uint64_t busy_ns, uint64_t fb_ns, uint32_t u_pm, bool gated) {
  if (busy_ns == 0 || u_pm == 0) {
    return;
  }
  Bin* b = u_pm >= kRefMinPm ? &ref_ : u_pm <= kLiftMaxPm && gated ? &lift_ : nullptr;
  if (b == nullptr) {
    return;  // between the bins: says little about c
  }
  if (b == &lift_) {
    // Forget: each busy ns added takes 1 / kLiftMemoryNs of the old weight away.
    const double keep = 1.0 - std::min(1.0, static_cast<double>(busy_ns) / kLiftMemoryNs);
    lift_.busy_ns = static_cast<uint64_t>(static_cast<double>(lift_.busy_ns) * keep);
    lift_.fb_ns = static_cast<uint64_t>(static_cast<double>(lift_.fb_ns) * keep);
    lift_.busy_u *= keep;
  }
  b->busy_ns += busy_ns;
  b->fb_ns += std::min(fb_ns, busy_ns * 10);  // a sample's fb is <= 100 % of its period
  b->busy_u += static_cast<double>(busy_ns) * u_pm;
  Fit();
}

// y = 1 / rho = a + s * u through the two bins' (u, y); c = s / (a + s) (clock_scaling.h).
void ClockScalingLearner::Fit() {
  if (ref_.busy_ns < kRefBusyNs || lift_.busy_ns < kLiftBusyNs || ref_.Rho() < kMinRhoPm ||
      lift_.fb_ns == 0) {
    return;
  }
  const double u1 = ref_.busy_u / ref_.busy_ns / 1000, u2 = lift_.busy_u / lift_.busy_ns / 1000;
  if ((u1 - u2) * 1000 < kMinGapPm) {
    return;
  }
  const double y1 = static_cast<double>(ref_.busy_ns) / ref_.fb_ns;
  const double y2 = static_cast<double>(lift_.busy_ns) / lift_.fb_ns;
  const double slope = (y1 - y2) / (u1 - u2);
  const double at_ref = y1 + slope * (1 - u1);  // a + s: 1 / rho at u = 1
  if (at_ref <= 0) {
    return;
  }
  c_pm_ = static_cast<uint32_t>(std::clamp(slope / at_ref, 0.0, kMaxPm / 1000.0) * 1000 + 0.5);
  learned_ = true;
}

}  // namespace vgpu::shim::compute

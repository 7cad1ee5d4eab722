#include "vgpu/reference_clock/saturated_stretch.h"

#include <algorithm>
#include <vector>

namespace vgpu::reference_clock {

uint32_t SaturatedStretch::Add(uint32_t gpu_util_percent, uint32_t sm_clock_mhz) {
  if (gpu_util_percent < kSaturatedPercent || sm_clock_mhz == 0) {
    length_ = 0;
    after_first_.clear();
    return 0;
  }
  if (length_++ != 0) {
    after_first_.push_back(sm_clock_mhz);
    if (after_first_.size() > kWindowSamples) {
      after_first_.pop_front();
    }
  }
  if (length_ < kMinSamples) {
    return 0;
  }
  std::vector<uint32_t> sorted(after_first_.begin(), after_first_.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

}  // namespace vgpu::reference_clock

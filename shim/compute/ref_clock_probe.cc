#include "shim/compute/ref_clock_probe.h"

namespace vgpu::shim::compute {

RefClockProbe::State RefClockProbe::Add(uint64_t now_ns, uint64_t busy_ns, uint64_t span_ns,
                                        uint32_t mhz) {
  if (state_ != State::kProbing) {
    return state_;
  }
  if (start_ns_ == 0 && busy_ns != 0) {
    start_ns_ = now_ns != 0 ? now_ns : 1;  // the probe's time runs from the first GPU activity
  }
  const bool saturated = mhz != 0 && span_ns != 0 && busy_ns * 1000 >= span_ns * kBusyPm;
  if (saturated && ++busy_spans_ > kSkipSpans) {
    sum_mhz_ += mhz;
  }
  const uint32_t averaged = busy_spans_ > kSkipSpans ? busy_spans_ - kSkipSpans : 0;
  if (averaged >= kAvgSpans) {
    state_ = State::kLearned;
  } else if (start_ns_ != 0 && now_ns - start_ns_ >= max_ns_) {
    state_ = State::kGaveUp;
  }
  if (state_ != State::kProbing && averaged != 0) {
    ref_mhz_ = static_cast<uint32_t>(sum_mhz_ / averaged);
  }
  return state_;
}

}  // namespace vgpu::shim::compute

#include "shim/compute/perfmon.h"

#include <algorithm>
#include <cstring>

namespace vgpu::shim::compute {
namespace {

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

void PerfmonPrepare(void* params) {
  auto* b = static_cast<uint8_t*>(params);
  memset(b, 0, kPerfmonParamsSize);
  b[0] = kGpumonSampleTypePerfmonUtil;
  const uint32_t buf_size = kPerfmonSampleCount * kPerfmonSampleSize;  // RM checks it exactly
  memcpy(b + kPerfmonBufSizeOffset, &buf_size, sizeof buf_size);
}

bool PerfmonConsume(const void* params, uint32_t pid, uint64_t* last_ts, PerfmonDelta* out) {
  auto own_pid = [](void* ctx, uint32_t p) {
    return p == *static_cast<uint32_t*>(ctx) ? PerfmonOwner::kSelf : PerfmonOwner::kOther;
  };
  return PerfmonConsume(params, own_pid, &pid, last_ts, out);
}

bool PerfmonConsume(const void* params, PerfmonClassifyFn classify, void* ctx, uint64_t* last_ts,
                    PerfmonDelta* out) {
  const auto* b = static_cast<const uint8_t*>(params);
  *out = PerfmonDelta{};
  if (Load32(b + kPerfmonBufSizeOffset) != kPerfmonSampleCount * kPerfmonSampleSize) {
    return false;
  }
  struct Sample {
    uint64_t ts;
    uint32_t util;
    uint32_t proc;
    uint32_t fb_util;
  };
  Sample s[kPerfmonSampleCount];
  uint32_t n = 0;
  for (uint32_t i = 0; i < kPerfmonSampleCount; i++) {
    const uint8_t* e = b + kPerfmonSamplesOffset + static_cast<size_t>(i) * kPerfmonSampleSize;
    const uint64_t ts = Load64(e);  // base.timeStamp, the sample's first field
    if (ts != 0) {
      s[n++] = {ts, Load32(e + kSampleGrOffset + kEngineUtilOffset),
                Load32(e + kSampleGrOffset + kEngineProcIdOffset),
                Load32(e + kSampleFbOffset + kEngineUtilOffset)};
    }
  }
  std::sort(s, s + n, [](const Sample& x, const Sample& y) { return x.ts < y.ts; });
  const bool primed = *last_ts != 0;
  uint64_t typical = 0;
  for (uint32_t k = 1; k < n; k++) {
    uint64_t period = s[k].ts - s[k - 1].ts;
    if (period == 0) {
      continue;
    }
    if (period < 10'000'000) {
      period *= 1000;  // microsecond timestamps
    }
    // A gap in the ring (sampling paused) is not busy time of one sample: clamp to the period.
    if (typical != 0 && period > 3 * typical) {
      period = typical;
    } else {
      typical = period;
    }
    out->period_ns = typical;
    if (!primed || s[k].ts <= *last_ts) {
      continue;
    }
    const uint64_t busy = period * std::min<uint32_t>(s[k].util, 10000) / 10000;
    out->fb_busy_ns += period * std::min<uint32_t>(s[k].fb_util, 10000) / 10000;
    if (s[k].proc == kGpumonPidInvalid || s[k].proc == 0) {
      out->unattributed_busy_ns += busy;
      out->unattributed[out->n_unattributed++] = {s[k].ts, busy};  // < kPerfmonSampleCount
    } else {
      switch (classify(ctx, s[k].proc)) {
        case PerfmonOwner::kSelf:
          out->own_busy_ns += busy;
          break;
        case PerfmonOwner::kMember:
          out->member_busy_ns += busy;
          break;
        case PerfmonOwner::kOther:
          out->other_busy_ns += busy;
          break;
      }
    }
    out->span_ns += period;
    out->end_ts = s[k].ts;
    out->samples++;
  }
  if (n != 0 && s[n - 1].ts > *last_ts) {
    *last_ts = s[n - 1].ts;
  }
  return true;
}

}  // namespace vgpu::shim::compute

#include "shim/compute/perfmon.h"

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
  memcpy(b + 4, &buf_size, sizeof buf_size);
}

bool PerfmonConsume(const void* params, uint32_t pid, uint64_t* last_ts, PerfmonDelta* out) {
  const auto* b = static_cast<const uint8_t*>(params);
  *out = PerfmonDelta{};
  const uint32_t count = Load32(b + 8);
  const uint32_t tracker = Load32(b + 12);
  if (Load32(b + 4) != kPerfmonSampleCount * kPerfmonSampleSize || count > kPerfmonSampleCount ||
      tracker >= kPerfmonSampleCount) {
    return false;
  }
  // The ring's oldest entry is at `tracker` once full; before that, entries 0..tracker-1.
  const bool full = Load64(b + 16 + static_cast<size_t>(tracker) * kPerfmonSampleSize) != 0;
  const uint32_t n = full ? kPerfmonSampleCount : tracker;
  const uint32_t first = full ? tracker : 0;
  uint64_t prev = 0;
  const bool primed = *last_ts != 0;
  for (uint32_t k = 0; k < n; k++) {
    const uint8_t* s =
        b + 16 + static_cast<size_t>((first + k) % kPerfmonSampleCount) * kPerfmonSampleSize;
    const uint64_t ts = Load64(s);
    if (ts == 0 || ts <= prev) {
      prev = ts > prev ? ts : prev;
      continue;
    }
    uint64_t period = prev != 0 ? ts - prev : 0;
    prev = ts;
    if (period != 0 && period < 10'000'000) {
      period *= 1000;  // microsecond timestamps
    }
    if (period != 0) {
      out->period_ns = period;
    }
    if (!primed || ts <= *last_ts) {
      continue;
    }
    if (period == 0) {
      continue;  // the oldest entry: no known start
    }
    const uint32_t util = Load32(s + kSampleGrOffset);  // 0.01 %
    const uint32_t proc = Load32(s + kSampleGrOffset + 8);
    const uint64_t busy = period * (util > 10000 ? 10000 : util) / 10000;
    if (proc == pid) {
      out->own_busy_ns += busy;
    } else if (proc != kGpumonPidInvalid && proc != 0) {
      out->other_busy_ns += busy;
    }
    out->span_ns += period;
    out->samples++;
  }
  if (prev > *last_ts) {
    *last_ts = prev;
  }
  return true;
}

}  // namespace vgpu::shim::compute

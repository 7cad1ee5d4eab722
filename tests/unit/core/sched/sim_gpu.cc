#include <algorithm>

#include "sim_gpu.h"

namespace vgpu::sched_test {

Tenant* SimGpu::BySlot(uint32_t slot) {
  for (auto& t : tenants_) {
    if (t.slot == slot) {
      return &t;
    }
  }
  return nullptr;
}

void SimGpu::GateOff(Tenant& t, int64_t now) {
  if (t.enabled) {
    t.enabled = false;
    t.disabled_at = now;
  }
  t.gate_offs++;
}

void SimGpu::GateOn(Tenant& t) {
  t.enabled = true;
  t.gate_ons++;
}

int64_t SimGpu::KernelNs(const Tenant& t) {
  if (t.jitter <= 0) {
    return t.kernel_ns;
  }
  rng_ ^= rng_ << 13;  // xorshift64
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const double u = static_cast<double>(rng_ >> 11) / static_cast<double>(1ULL << 53);
  const double f = 1 + t.jitter * (2 * u - 1);
  return std::max<int64_t>(1000, static_cast<int64_t>(static_cast<double>(t.kernel_ns) * f));
}

bool SimGpu::CanFetch(const Tenant& t, int64_t now) const {
  if (!t.has_work) {
    return false;
  }
  // Work already fetched before the off edge still starts for a short while.
  return t.enabled || (t.disabled_at >= 0 && now - t.disabled_at < drain_ns_);
}

int SimGpu::Pick(int64_t now) const {
  const int n = static_cast<int>(tenants_.size());
  for (int k = 1; k <= n; k++) {
    const int i = ((current_ < 0 ? -1 : current_) + k + n) % n;
    if (CanFetch(tenants_[i], now)) {
      return i;
    }
  }
  return -1;
}

void SimGpu::Step(int64_t now, int64_t dt) {
  int64_t t = now;
  const int64_t end = now + dt;
  while (t < end) {
    if (switching_ > 0) {
      const int64_t d = std::min(switching_, end - t);
      switching_ -= d;
      t += d;
      continue;
    }
    if (current_ >= 0 && tenants_[current_].kernel_left > 0) {
      Tenant& c = tenants_[current_];
      const int64_t d = std::min(c.kernel_left, end - t);
      c.kernel_left -= d;
      c.busy_total += d;
      c.busy_unreported += d;
      slice_used_ += d;
      t += d;
      if (c.kernel_left == 0) {
        c.kernels_done++;
      }
      continue;
    }
    // At a kernel boundary: keep the GPU while the slice lasts and work can be fetched.
    if (current_ >= 0) {
      Tenant& c = tenants_[current_];
      if (slice_used_ < c.timeslice_ns && CanFetch(c, t)) {
        c.kernel_left = KernelNs(c);
        continue;
      }
    }
    const int next = Pick(t);
    if (next < 0) {
      current_ = -1;  // idle until the next step looks again
      return;
    }
    if (next != current_) {
      if (current_ >= 0) {
        switching_ = switch_ns_;
      }
      current_ = next;
    }
    slice_used_ = 0;
    tenants_[current_].kernel_left = KernelNs(tenants_[current_]);
  }
}

}  // namespace vgpu::sched_test

#include <algorithm>
#include <cmath>

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

double PowerClock::Power(double mhz, double busy_frac) const {
  const double r = mhz / m_.sat_mhz;
  return m_.idle_w + busy_frac * (m_.limit_w - m_.idle_w) * r * r * r;
}

void PowerClock::Step(int64_t dt_ns, int64_t busy_ns) {
  const double dt = static_cast<double>(dt_ns);
  const double frac = dt_ns > 0 ? static_cast<double>(busy_ns) / dt : 0;
  const double a = std::min(1.0, dt / m_.tau_ns);
  power_w_ += a * (Power(mhz_, frac) - power_w_);
  // The clock that would put the filtered power at the limit, given the current busy fraction
  // as the controller sees it (filtered power / power at this clock).
  double target = m_.max_mhz;
  const double dyn_now = power_w_ - m_.idle_w;
  if (dyn_now > 0) {
    const double per_cube = dyn_now / (mhz_ * mhz_ * mhz_);
    target = std::min(m_.max_mhz, std::cbrt((m_.limit_w - m_.idle_w) / per_cube));
  }
  const double step = m_.slew_mhz_per_ms * dt / 1e6;
  mhz_ = target > mhz_ ? std::min(target, mhz_ + step) : std::max(target, mhz_ - step);
}

}  // namespace vgpu::sched_test

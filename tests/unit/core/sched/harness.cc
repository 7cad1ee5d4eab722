#include "harness.h"

#include <algorithm>
#include <stdexcept>

namespace vgpu::sched_test {

Harness::Harness(const Options& o) : o_(o), gpu_(o.drain_ns, o.switch_ns) {
  if (vcore_sched_init(&ctl_, nullptr) != 0) {
    throw std::runtime_error("vcore_sched_init");
  }
}

size_t Harness::AddTenant(uint32_t slot, uint32_t share, uint32_t mode, int64_t kernel_ns) {
  Tenant t;
  t.slot = slot;
  t.kernel_ns = kernel_ns;
  if (vcore_sched_slot_add(&ctl_, slot, share, mode) != 0) {
    throw std::runtime_error("vcore_sched_slot_add");
  }
  buckets_.emplace_back();
  last_busy_.push_back(0);
  return gpu_.Add(t);
}

void Harness::Apply(const vcore_sched_action* a, int n) {
  for (int i = 0; i < n; i++) {
    Tenant* t = gpu_.BySlot(a[i].slot_id);
    if (t == nullptr) {
      continue;  // a host ignores actions for TSGs that are already gone
    }
    actions_++;
    switch (a[i].kind) {
      case VCORE_SCHED_ACT_GATE_OFF:
        gpu_.GateOff(*t, now_);
        break;
      case VCORE_SCHED_ACT_GATE_ON:
        gpu_.GateOn(*t);
        break;
      case VCORE_SCHED_ACT_TIMESLICE:
        t->timeslice_ns = static_cast<int64_t>(a[i].timeslice_us) * 1000;
        t->timeslice_sets++;
        break;
      default:
        throw std::runtime_error("unknown action");
    }
  }
}

void Harness::Report() {
  // Exact mode: every tick. Sampled mode: lumps every report_period_ns, due after the delay.
  if (o_.report_period_ns == 0 || now_ >= next_report_) {
    Pending p{now_ + o_.report_delay_ns, {}};
    const int64_t span = now_ - last_report_;
    for (size_t i = 0; i < gpu_.Size(); i++) {
      Tenant& t = gpu_.At(i);
      p.reports.push_back({t.slot, 0, static_cast<uint64_t>(t.busy_unreported),
                           static_cast<uint64_t>(span), static_cast<uint64_t>(now_)});
      t.busy_unreported = 0;
    }
    last_report_ = now_;
    if (o_.report_period_ns != 0) {
      next_report_ = now_ + o_.report_period_ns;
    }
    pending_.push_back(std::move(p));
  }
}

void Harness::RunUntil(int64_t until_ns) {
  vcore_sched_action acts[VCORE_SCHED_MAX_ACTIONS];
  while (now_ < until_ns) {
    if (now_ >= next_tick_) {
      Report();
      std::vector<vcore_sched_report> due;
      while (!pending_.empty() && pending_.front().due_ns <= now_) {
        for (const auto& r : pending_.front().reports) {
          due.push_back(r);
        }
        pending_.pop_front();
      }
      uint64_t next = 0;
      const int n =
          vcore_sched_tick(&ctl_, static_cast<uint64_t>(now_), due.data(),
                           static_cast<uint32_t>(due.size()), acts, VCORE_SCHED_MAX_ACTIONS, &next);
      Apply(acts, n);
      next_tick_ = std::min<int64_t>(now_ + o_.tick_ns, static_cast<int64_t>(next));
      if (next_tick_ <= now_) {
        next_tick_ = now_ + o_.step_ns;
      }
    }
    const int64_t step = std::min({o_.step_ns, next_tick_ - now_, until_ns - now_});
    gpu_.Step(now_, step);
    now_ += step;
    const size_t b = static_cast<size_t>((now_ - 1 - start_) / kBucketNs);
    for (size_t i = 0; i < gpu_.Size(); i++) {
      auto& v = buckets_[i];
      if (v.size() <= b) {
        v.resize(b + 1, 0);
      }
      const int64_t busy = gpu_.At(i).busy_total;
      v[b] += busy - last_busy_[i];
      last_busy_[i] = busy;
    }
  }
}

double Harness::Share(size_t i, int64_t from_ns, int64_t to_ns) const {
  const auto& v = buckets_[i];
  int64_t sum = 0;
  for (int64_t b = (from_ns - start_) / kBucketNs; b < (to_ns - start_) / kBucketNs; b++) {
    if (b >= 0 && static_cast<size_t>(b) < v.size()) {
      sum += v[b];
    }
  }
  return static_cast<double>(sum) / static_cast<double>(to_ns - from_ns);
}

}  // namespace vgpu::sched_test

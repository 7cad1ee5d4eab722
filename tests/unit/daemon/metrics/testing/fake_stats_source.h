// A StatsSource whose snapshot the test sets, and which can be told to fail.
#pragma once

#include <atomic>
#include <mutex>

#include "vgpu/metrics/stats_source.h"

namespace vgpu::metrics::testing {

class FakeStatsSource : public StatsSource {
 public:
  void Set(NodeSnapshot snapshot) {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_ = std::move(snapshot);
  }
  void FailNext(bool fail) { fail_ = fail; }
  int calls() const { return calls_; }

  Result<NodeSnapshot> Snapshot() override {
    ++calls_;
    if (fail_) return UnavailableError("fake source: module not loaded");
    std::lock_guard<std::mutex> lock(mu_);
    return snapshot_;
  }

 private:
  std::mutex mu_;
  NodeSnapshot snapshot_;
  std::atomic<bool> fail_{false};
  std::atomic<int> calls_{0};
};

// Two GPUs, three slots; one pod name carries every character the format must escape.
inline NodeSnapshot ExampleSnapshot() {
  NodeSnapshot s;
  s.gpus = {{"GPU-aaaa", true, 2, 3ull << 30}, {"GPU-bbbb", false, 1, 80ull << 30}};
  SlotStats a;
  a.gpu_uuid = "GPU-aaaa";
  a.slot = "s1";
  a.pod_namespace = "team-a";
  a.pod = "trainer-0";
  a.container = "main";
  a.memory_quota_bytes = 2ull << 30;
  a.memory_charged_bytes = 1536ull << 20;
  a.memory_peak_bytes = 1792ull << 20;
  a.memory_denials = 3;
  a.core_share_ratio = 0.25;
  a.core_achieved_ratio = 0.2475;
  a.core_achieved_10s_ratio = 0.2525;
  a.busy_seconds = 12.5;
  a.throttled_seconds = 4.25;
  a.unknown_ioctls = {{"control", 0x20800a2a, 2}, {"class", 0xc86f, 1}};
  SlotStats b = a;
  b.slot = "s2";
  b.pod = "odd\"pod\\name\nx";
  b.memory_quota_bytes = 1ull << 30;
  b.memory_charged_bytes = 0;
  b.memory_peak_bytes = 0;
  b.memory_denials = 0;
  b.core_share_ratio = 0.5;
  b.unknown_ioctls.clear();
  SlotStats c = a;
  c.gpu_uuid = "GPU-bbbb";
  c.slot = "s3";
  c.pod = "whole";
  c.memory_quota_bytes = 80ull << 30;
  c.core_share_ratio = 1;
  c.unknown_ioctls.clear();
  s.slots = {a, b, c};
  s.counters = {7, 1, 2};
  return s;
}

}  // namespace vgpu::metrics::testing

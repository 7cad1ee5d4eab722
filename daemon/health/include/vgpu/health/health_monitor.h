// GPU health from XID events: a critical XID marks a GPU unhealthy, and a successful re-probe
// after a quiet period marks it healthy again. Each change reaches a HealthSink, which the
// device plugin's ListAndWatch uses to re-send the device list (device-plugin-api.md §2.3: any
// health string other than "Healthy" makes the kubelet stop allocating the device; pods already
// using it keep it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/status.h"

namespace vgpu::health {

// NVIDIA k8s-device-plugin (internal/rm/health.go) ignores these XIDs as application errors,
// not GPU faults: 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped
// processing, 45 preemptive cleanup, 68 video processor exception, 109 context switch timeout.
inline constexpr uint64_t kApplicationXids[] = {13, 31, 43, 45, 68, 109};
bool IsApplicationXid(uint64_t xid);

struct XidEvent {
  std::string gpu_uuid;  // empty: the event source failed as a whole (every GPU is suspect)
  uint64_t xid = 0;
};

// Where XID events come from (NVML on a node, a fake in tests) and how a GPU is re-probed.
class XidEventSource {
 public:
  virtual ~XidEventSource() = default;
  // Registers for critical XID events on every GPU; returns their UUIDs.
  virtual Result<std::vector<std::string>> Start() = 0;
  // Waits up to `timeout` for one event; nullopt on timeout.
  virtual Result<std::optional<XidEvent>> Wait(std::chrono::milliseconds timeout) = 0;
  // OK when the GPU answers a basic query again.
  virtual Status Probe(const std::string& gpu_uuid) = 0;
};

class HealthSink {
 public:
  virtual ~HealthSink() = default;
  // Called on every transition (healthy -> unhealthy and back), from the monitor's thread.
  virtual void OnGpuHealthChanged(const std::string& gpu_uuid, bool healthy,
                                  const std::string& reason) = 0;
};

struct HealthOptions {
  std::vector<uint64_t> extra_ignored_xids;  // added to kApplicationXids
  std::chrono::milliseconds wait_timeout{std::chrono::seconds(5)};
  // Re-probe an unhealthy GPU once no critical XID arrived for this long.
  std::chrono::milliseconds reprobe_after{std::chrono::seconds(60)};
  std::function<std::chrono::steady_clock::time_point()> clock;  // injected in tests
};

class HealthMonitor {
 public:
  HealthMonitor(XidEventSource& source, HealthSink& sink, HealthOptions options = {});
  ~HealthMonitor();

  // Starts the source and the monitor thread. A failure (no NVML on the node) is returned for
  // the caller to log; GPUs then stay healthy, as without health checks.
  Status Start();
  void Stop();

  // One iteration: wait for an event, apply it, re-probe what is due. The thread loops on it;
  // tests call it directly after InitForTest/Start without the thread.
  void Step();
  Status StartWithoutThread();

  bool Healthy(const std::string& gpu_uuid) const;
  std::map<std::string, bool> Snapshot() const;

 private:
  void Apply(const XidEvent& event);
  void Reprobe();
  void SetHealth(const std::string& uuid, bool healthy, const std::string& reason);

  XidEventSource& source_;
  HealthSink& sink_;
  HealthOptions options_;
  std::set<uint64_t> ignored_;

  mutable std::mutex mu_;  // guards gpus_, stopping_
  struct GpuState {
    bool healthy = true;
    std::chrono::steady_clock::time_point last_critical{};
  };
  std::map<std::string, GpuState> gpus_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::health

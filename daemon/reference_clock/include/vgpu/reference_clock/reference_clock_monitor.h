// The manager's measurement of each GPU's reference clock: once a second it reads every GPU's
// utilization and SM clock (topology's GpuLoadSource, NVML), finds saturated stretches
// (saturated_stretch.h), offers their figures to the book (reference_clock_book.h), saves the
// book when a reference changed (reference_clock_file.h) and tells the caller, who writes the new
// figure into the GPU's slots (SlotManager::ApplyReferenceClock). Any saturated load counts, with
// or without a slot: a whole-GPU pod, a bare run, tenants of weight slots together.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "vgpu/reference_clock/reference_clock_book.h"
#include "vgpu/reference_clock/reference_clock_file.h"
#include "vgpu/reference_clock/saturated_stretch.h"
#include "vgpu/status.h"
#include "vgpu/topology/gpu_load.h"

namespace vgpu::reference_clock {

class ReferenceClockMonitor {
 public:
  // A GPU's reference changed to `mhz` (already saved); called on the monitor's thread.
  using OnChange = std::function<void(const std::string& uuid, uint32_t mhz)>;
  // A read or a save failed; called on the monitor's thread, at most once per kind of failure
  // until it succeeds again.
  using OnError = std::function<void(const Status&)>;

  ReferenceClockMonitor(topology::GpuLoadSource& source, ReferenceClockBook& book,
                        const ReferenceClockFile& file, OnChange on_change, OnError on_error,
                        std::chrono::milliseconds period = std::chrono::seconds(1));
  ~ReferenceClockMonitor();
  ReferenceClockMonitor(const ReferenceClockMonitor&) = delete;
  ReferenceClockMonitor& operator=(const ReferenceClockMonitor&) = delete;

  void Start();
  void Stop();  // idempotent
  // One reading of every GPU (the thread's body; tests call it directly).
  void PollOnce(uint64_t now_unix_s);

 private:
  topology::GpuLoadSource& source_;
  ReferenceClockBook& book_;
  const ReferenceClockFile& file_;
  OnChange on_change_;
  OnError on_error_;
  std::chrono::milliseconds period_;
  std::map<std::string, SaturatedStretch> stretches_;  // by GPU UUID; the thread's own
  bool read_failing_ = false, save_failing_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace vgpu::reference_clock

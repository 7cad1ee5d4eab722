// Shared by the ComputeHost's source files (compute_host.cc: the control loop, start and stop;
// compute_objects.cc: the RM objects it gates; compute_gate.cc: the gate's protocol, the PREEMPT
// worker, the watchdog; compute_measure.cc: perfmon, slot membership, clock weighting, the
// reference clock's probe, publication). Not installed.
#pragma once

#include <time.h>

#include <cerrno>
#include <cstdint>

namespace vgpu::shim::compute {

inline void SleepUntil(uint64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace vgpu::shim::compute

// The SM clock a capped tenant's GPU time ran at, so the shim host can cap *work* rather than
// time (docs/results/compute-h200.md: "throughput ... within 5 points of the cap").
//
// Why the clock at all (measured, docs/results/compute-h200.md): the controller holds a slot's
// GPU time, as RM's perfmon samples measure it, to within 0.2 points, yet a duty-cycled H200
// delivered 5-9 points more matmul throughput than its cap. Uncapped, the bf16 matmul loop is
// power-limited (666 TFLOP/s); duty-cycled, the card idles in the off phases and runs its busy
// time at the unthrottled rate (774 TFLOP/s per busy second, the card's 769-798 when not power
// limited). A compute-bound kernel's work per busy second is proportional to the SM clock, so
// busy time weighted by (clock while busy / clock when saturated uncapped) is work in units of
// "uncapped GPU seconds", which is what the acceptance compares against.
//
// Source: NVML's nvmlDeviceGetClockInfo(NVML_CLOCK_SM), the current SM clock in MHz (NVML API
// reference, "Device Queries"; what `nvidia-smi --query-gpu=clocks.sm` prints). The RM control
// behind it is not in the open SDK headers (ctrl2080clk.h in open-gpu-kernel-modules 580 carries
// only PMUMON sample types), so the shim does not issue it on its own ctl fd; NVML is loaded with
// dlopen() at run time, never linked, and only in processes that have a compute share (a missing
// libnvidia-ml.so.1 just leaves the correction off). NVML opens its own RM client, which the
// shim's hooks see like any other; it creates no TSG, so the controller never gates it.
#pragma once

#include <cstdint>

namespace vgpu::shim::compute {

// Injected into ComputeHost (unit tests use a fake). Called from the host's clock thread only.
class ClockSource {
 public:
  virtual ~ClockSource() = default;
  // Binds to the GPU with this NVML-style UUID ("GPU-xxxxxxxx-...", from RM's GPU_GET_GID_INFO
  // on the tenant's own subdevice). False if it cannot (then the host never asks again).
  virtual bool Bind(const char* uuid) = 0;
  // The SM clock now, in MHz; 0 if unknown.
  virtual uint32_t SmMhz() = 0;
};

// NVML through dlopen. Bind() falls back to the only GPU when NVML sees exactly one and the UUID
// lookup fails (a container whose NVML enumerates only its own GPU).
class NvmlClock final : public ClockSource {
 public:
  NvmlClock() = default;
  ~NvmlClock() override;
  NvmlClock(const NvmlClock&) = delete;
  NvmlClock& operator=(const NvmlClock&) = delete;

  bool Bind(const char* uuid) override;
  uint32_t SmMhz() override;

 private:
  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using ByUuidFn = int (*)(const char*, void**);
  using ByIndexFn = int (*)(unsigned, void**);
  using CountFn = int (*)(unsigned*);
  using ClockInfoFn = int (*)(void*, int, unsigned*);

  void* lib_ = nullptr;
  void* dev_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ClockInfoFn clock_info_ = nullptr;
};

}  // namespace vgpu::shim::compute

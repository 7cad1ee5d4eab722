// How a process measures its own GPU busy time from inside the shim: the perfmon utilization
// samples that NVML's nvmlDeviceGetProcessUtilization reads, fetched directly from RM with
// NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 (kmod/core/abi/ctrl.h) on the process's
// own client and subdevice.
//
// Why this source (the choice the issue asks to justify):
// - Kernel launches issue no ioctl (nvidia-rm-abi.md §6.1), so the shim cannot time kernels; CUDA
//   events live in the application, not in the shim.
// - NVML inside the shim would open its own /dev/nvidiactl, create its own RM client and go
//   through the shim's own interposition; the same RM control on the client the process already
//   has costs one ioctl and no second client. It is what NVML returns, without NVML.
// - GPUACCT accounting (NV0000_CTRL_CMD_GPUACCT_*) must be enabled by root per GPU and gives a
//   lifetime-average percentage: too coarse to differentiate over 100 ms.
//
// What it can and cannot do (be honest about resolution):
// - RM keeps a ring of 72 samples (580: ctrl2080perf.h), ~10 s of history; each sample covers one
//   sampling period (timestamps tell which; the driver documents 1/6 s to 1 s) and carries the
//   GR engine's busy fraction over that period in units of 0.01 %, and ONE process id: the process
//   that was on the engine when the sample was taken (procId, translated into the caller's pid
//   namespace by RM, subdeviceCtrlCmdPerfGetGpumonPerfmonUtilSamplesV2_KERNEL).
// - One tenant on the GPU (the cap test): every busy sample names it; busy time is exact to the
//   period's resolution (~0.01 %), but known only once per period and late by up to one period.
// - Several tenants: a sample attributes the whole GPU's busy fraction to whichever process was
//   current at the sampling instant. Over n samples the attribution error of a 30/70 split is
//   binomial: ~sqrt(0.21/n), 14 points over 10 samples, 5 over 80. Per-process shares from
//   these samples are only usable over many seconds; that is why the weight feedback in the shim
//   host runs on a long window (compute_host.cc) and the calibrated map does most of the work.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kmod/core/abi/ctrl.h"

namespace vgpu::shim::compute {

// The layout is the core's (kmod/core/abi/ctrl.h, nvidia-rm-abi.md §6.3): a header, then a ring
// of samples, each a timestamp and six engine samples (fb, gr, nvenc, nvdec, nvjpg, nvofa).
using PerfmonParams = NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS;
using PerfmonSample = NV2080_CTRL_PERF_GPUMON_PERFMON_UTIL_SAMPLE;
using PerfmonEngineSample = NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE;
inline constexpr uint32_t kCtrlPerfmonSamplesV2 =
    NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2;
inline constexpr uint32_t kPerfmonSampleCount = NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL;
inline constexpr uint32_t kPerfmonSampleSize = sizeof(PerfmonSample);
inline constexpr uint32_t kPerfmonParamsSize = sizeof(PerfmonParams);
inline constexpr uint8_t kGpumonSampleTypePerfmonUtil = NV2080_CTRL_GPUMON_SAMPLE_TYPE_PERFMON_UTIL;
inline constexpr uint32_t kGpumonPidInvalid = NV2080_GPUMON_PID_INVALID;
// Offsets in the params, in one sample, and in one engine sample.
inline constexpr size_t kPerfmonBufSizeOffset = offsetof(PerfmonParams, bufSize);
inline constexpr size_t kPerfmonCountOffset = offsetof(PerfmonParams, count);
inline constexpr size_t kPerfmonTrackerOffset = offsetof(PerfmonParams, tracker);
inline constexpr size_t kPerfmonSamplesOffset = offsetof(PerfmonParams, samples);
inline constexpr size_t kSampleFbOffset = offsetof(PerfmonSample, fb);
inline constexpr size_t kSampleGrOffset = offsetof(PerfmonSample, gr);
inline constexpr size_t kEngineUtilOffset = offsetof(PerfmonEngineSample, util);
inline constexpr size_t kEngineProcIdOffset = offsetof(PerfmonEngineSample, procId);

// Fills the request header of a params buffer of kPerfmonParamsSize bytes (zeroes the rest).
void PerfmonPrepare(void* params);

// Whom a sample names, seen from this process's slot. A slot may hold several processes
// (a launcher and its workers: shim/preload/ledger.h); each process's controller measures the
// slot's GPU time, so a sample naming another member is the slot's as much as one naming us.
enum class PerfmonOwner : uint8_t {
  kSelf,    // this process
  kMember,  // another live process of the slot
  kOther,   // a process outside the slot
};
// Classifies a pid (never kGpumonPidInvalid or 0: those are unattributed). Called once per new
// sample, from the thread that consumes the samples.
using PerfmonClassifyFn = PerfmonOwner (*)(void* ctx, uint32_t pid);

struct PerfmonDelta {
  uint64_t own_busy_ns = 0;           // GR busy in samples that name this process
  uint64_t member_busy_ns = 0;        // GR busy in samples that name another slot member
  uint64_t other_busy_ns = 0;         // GR busy in samples that name a process outside the slot
  uint64_t unattributed_busy_ns = 0;  // GR busy in samples that name no process (see below)
  // The frame buffer's (DRAM's) busy time in all new samples, whoever they name: the work signal
  // of the clock-scaling learner (clock_scaling.h), used only for spans that name no process
  // outside the slot.
  uint64_t fb_busy_ns = 0;
  uint64_t span_ns = 0;    // wall time the new samples cover
  uint64_t end_ts = 0;     // timestamp of the newest new sample (its period's end)
  uint32_t samples = 0;    // new samples consumed
  uint64_t period_ns = 0;  // last sample period seen (0: unknown yet)
  // The unattributed samples one by one (timestamp as RM gave it, busy ns), oldest first. Every
  // process of a slot reads the same ring, so a slot-wide counter of them must count each
  // sample once, whichever member read it first: the timestamp is what makes that possible
  // (SharedLedger::PublishCompute).
  struct Sample {
    uint64_t ts;
    uint64_t busy_ns;
  };
  Sample unattributed[kPerfmonSampleCount];
  uint32_t n_unattributed = 0;
};

// Accounts every sample newer than *last_ts (updated) and returns what they add. The first call
// only primes *last_ts. The ring's count/tracker fields are not relied on (measured on the H200,
// 580.159.04: they read 0 while the ring held 72 samples): entries are ordered by timestamp.
// Timestamps are taken as ns (the H200 gives Unix-epoch ns, one sample every ~200 ms); periods
// that only make sense as us (< 10 ms apart as ns) are scaled by 1000.
//
// Measured on the H200: a sample names the process only if its context was on the engine at the
// sampling instant; a tenant that is gated off at that instant gets procId = ~0 (invalid) even
// though its work filled part of the period. So busy in unattributed samples is reported apart:
// the cap host counts it as its own (conservative: a cap must not be exceeded; it can only
// over-count when another process ran in that period and was not on the engine at its end).
bool PerfmonConsume(const void* params, PerfmonClassifyFn classify, void* ctx, uint64_t* last_ts,
                    PerfmonDelta* out);
// The same with the slot being this one process: samples naming `pid` are kSelf, any other
// pid is kOther.
bool PerfmonConsume(const void* params, uint32_t pid, uint64_t* last_ts, PerfmonDelta* out);

}  // namespace vgpu::shim::compute

// A userspace host for the filter core without a driver: a simulated user address space
// (regions of bytes at addresses; every access outside them faults, like copy_from_user on an
// unmapped page) and the host ops table over it. Used by `vgpu-trace replay`, the core's unit
// tests and its fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include "kmod/core/vcore.h"
}

namespace vgpu::trace {

// The user memory one call can see. Regions never overlap: Map() refuses an overlap.
class SimMemory {
 public:
  // Maps [addr, addr + bytes.size()). Returns false (and maps nothing) if it would overlap an
  // existing region, wrap around, or is empty.
  bool Map(uint64_t addr, std::vector<uint8_t> bytes);
  void Clear() { regions_.clear(); }
  // Whole-range accesses only: a range that leaves its region faults.
  bool Read(uint64_t addr, void* dst, size_t n) const;
  bool Write(uint64_t addr, const void* src, size_t n);
  // The region that starts at addr, or nullptr.
  std::vector<uint8_t>* At(uint64_t addr);
  bool Overlaps(uint64_t addr, size_t n) const;

 private:
  std::map<uint64_t, std::vector<uint8_t>> regions_;
};

// Host state behind the ops' priv pointer: allocation accounting (to catch leaks and to inject
// allocation failures) and the log.
class SimHost {
 public:
  static const vcore_host_ops kOps;

  // After this many more successful zallocs, every zalloc fails (-1: never).
  void FailAllocAfter(long n) { fail_after_ = n; }
  long live_allocs() const { return live_; }
  const std::vector<std::string>& log() const { return log_; }
  void set_echo_log(bool echo) { echo_ = echo; }
  void ClearLog() { log_.clear(); }

  // Optional pid membership (ops.pid_in_slot): when set, only these pids are in the slot.
  void SetSlotPids(std::vector<uint32_t> pids) {
    pids_ = std::move(pids);
    use_pids_ = true;
  }
  bool uses_pids() const { return use_pids_; }
  bool HasPid(uint32_t pid) const;

  // Internal: called by the ops.
  void* Zalloc(size_t n);
  void Free(void* p);
  void Log(int level, const char* msg);

 private:
  long fail_after_ = -1;
  long live_ = 0;
  bool echo_ = false;
  bool use_pids_ = false;
  std::vector<uint32_t> pids_;
  std::vector<std::string> log_;
};

// Ops whose pid_in_slot consults SimHost::HasPid (kOps leaves it NULL: the core's own pid set).
extern const vcore_host_ops kSimOpsWithPids;

}  // namespace vgpu::trace

// A slot's memory charges, shared by every process of the slot (a container may run a launcher
// plus workers, each with its own copy of the shim and the filter core).
//
// The ledger is a small file beside the slot's config, mapped MAP_SHARED by each process: one
// entry per process, keyed by (pid, start time), holding the bytes that process's RM objects
// are charged. The slot's charge is the sum. A process that dies without cleaning up (SIGKILL,
// OOM kill) leaves its entry behind; since the driver freed its memory when its files closed,
// its entry is reaped as soon as /proc shows the pid gone, a zombie, or reused by a process
// with another start time. Reaping runs before any refusal and any read of the slot total, and
// at most once a second for membership checks.
//
// A read of the slot total (the core makes one after every charge and refund, not only for
// views) must not read /proc for every member: that cost ~20 us per member per read on the build
// machine, 130 us per 2 MiB charge + refund with three other members, more than the H200's
// cuMemAlloc + cuMemFree itself. Each process instead watches the other members through pidfds
// (opened once per member, its start time checked once against /proc): one poll() with timeout
// 0, at most once a millisecond, tells whether any of them has exited since, and only then is
// the full reap run. Kernels without pidfd_open (< 5.3), or an injected start-time function
// (tests), take the full reap.
//
// Crash safety: entries are updated under a process-shared robust mutex; if a holder dies the
// next locker marks the mutex consistent and carries on (every update is a single aligned
// 64-bit store, so no entry is ever half-written).
//
// Cost: a charge sums the members' entries under the lock. Only entries below `high_water` can
// be in use (it is raised before an entry above it is written, lowered only by a reap that saw
// the entries above it free), so a slot of a few processes sums a few entries, not 1024
// (a full scan cost about 1 us per allocation on the build machine: ~3 % of a 2 MiB
// cuMemAlloc + cuMemFree on the H200).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vgpu::shim {

// Start time of `pid` (field 22 of /proc/PID/stat, clock ticks since boot), or nullopt when
// the process does not exist or is a zombie. Injectable for tests.
using ProcStartFn = std::optional<uint64_t> (*)(pid_t pid);
std::optional<uint64_t> ProcStartTime(pid_t pid);

struct LedgerEntry {
  uint32_t pid;
  uint32_t in_use;
  uint64_t start_time;
  uint64_t charged;
  uint64_t peak;
};

struct LedgerFile {
  static constexpr uint64_t kMagic = 0x31524447444c4756ull;  // "VGLDGDR1"
  static constexpr uint32_t kVersion = 2;                    // 2: high_water
  static constexpr uint32_t kMaxEntries = 1024;
  uint64_t magic;
  uint32_t version;
  uint32_t max_entries;
  pthread_mutex_t mu;  // robust, process-shared; guards everything below
  uint64_t last_reap_ns;
  uint64_t reaped;
  uint64_t peak;        // highest slot total seen
  uint32_t high_water;  // entries[high_water..] are all free (<= kMaxEntries)
  uint32_t reserved;
  LedgerEntry entries[kMaxEntries];
};

class SharedLedger {
 public:
  // Opens (creating if needed) the ledger at `path`. nullptr and *err on failure.
  static std::unique_ptr<SharedLedger> Open(const std::string& path, std::string* err,
                                            ProcStartFn start_fn = ProcStartTime);
  ~SharedLedger();
  SharedLedger(const SharedLedger&) = delete;
  SharedLedger& operator=(const SharedLedger&) = delete;

  // Makes this process (`pid`, default getpid()) a member. An existing entry with the same pid
  // and start time belongs to this process's image before exec: its objects went with the
  // files exec closed (libcuda opens them O_CLOEXEC), so its charge is reset. false when the
  // table is full.
  bool Attach(pid_t pid = 0);
  // Removes this process's entry (clean exit). Its charge leaves the slot.
  void Detach();

  // Adds `bytes` to this process if quota == 0 or slot total + bytes <= quota; else -ENOSPC.
  int TryCharge(uint64_t bytes, uint64_t quota);
  void ForceCharge(uint64_t bytes);
  void Uncharge(uint64_t bytes);
  uint64_t Charged();             // slot total
  uint64_t ChargedBy(pid_t pid);  // one member's charge (0 if absent)
  bool IsMember(pid_t pid);       // a live member of the slot
  uint64_t Peak();
  // Removes entries of dead processes now; returns how many.
  int Reap();
  // In a fork child (async-signal-safe, takes no lock): the child joins as a new member with
  // nothing charged at its next ledger operation.
  void MarkForked() { forked_.store(true, std::memory_order_relaxed); }

  const std::string& path() const { return path_; }

 private:
  SharedLedger(std::string path, LedgerFile* file, ProcStartFn start_fn)
      : path_(std::move(path)), file_(file), start_fn_(start_fn) {}
  void Lock();
  void Unlock();
  LedgerEntry* Self();  // lock held; nullptr if not attached
  bool AttachLocked(pid_t pid);
  uint64_t TotalLocked();
  uint32_t EndLocked() const;                             // scan bound: high_water, clamped
  void UseEntryLocked(uint32_t i, const LedgerEntry& e);  // raises high_water first
  int ReapLocked();
  void MaybeReapLocked();
  bool MemberMayHaveDiedLocked();  // false: every other member is provably alive
  struct Watch {
    uint32_t pid = 0;
    uint64_t start_time = 0;
    int pidfd = -1;
    bool readable = false;  // the last poll found it readable
  };

  std::string path_;
  LedgerFile* file_;
  ProcStartFn start_fn_;
  pid_t self_pid_ = 0;
  uint64_t self_start_ = 0;
  int self_index_ = -1;
  std::atomic<bool> forked_{false};
  std::vector<Watch> watches_;  // by entry index; guarded by the ledger mutex
  uint64_t all_alive_ns_ = 0;   // when a poll last found every other member alive
};

}  // namespace vgpu::shim

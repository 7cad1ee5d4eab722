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
// Compute counters (version 3, docs/results/compute-h200.md): the manager exports each slot's GPU
// busy time, throttled time and achieved share, but in shim mode the controllers run inside the
// tenant's processes. Each process's control thread writes its own counters into its entry once a
// second (PublishCompute; never from a kernel launch or a memory charge): the busy time of perfmon
// samples naming its pid, and the time its gate held its channels off. Samples naming no
// process count as the slot's in cap mode (shim/compute/perfmon.h) but every member reads them,
// so they go to one slot-wide counter that adds a sample only if it is newer than the newest
// one added (every member reads the same per-GPU ring: each sample counts once, whoever
// publishes it first). An entry that leaves (clean exit, reap, exec) first adds its counters
// to the file's reaped_* accumulators, so the slot's totals
//   busy      = sum(entries' gpu_busy_ns) + reaped_busy_ns + unattributed_busy_ns
//   throttled = sum(entries' throttled_ns) + reaped_throttled_ns   (process-seconds: summed)
// never go down, as Prometheus counters must not (LedgerComputeTotals). Moving a counter from
// an entry to an accumulator is two stores; a lockless reader (the manager) brackets its copy
// with `seq`, which is odd while such a move is under way (a seqlock). A holder that dies in the
// middle leaves seq odd until the next locker evens it, and the counter counted twice (added
// before it is cleared): at worst a jump up, never down. The slot's achieved share over 1 s is
// the last one any member wrote; it reads 0 once its writer has left.
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
  uint64_t gpu_busy_ns;   // this process's, cumulative (version 3)
  uint64_t throttled_ns;  // this process's gate, cumulative (version 3)
};

// Version 4: memory shared between the slot's processes (CUDA IPC, torch.multiprocessing). A
// member's RM clients (so another member's RM_DUP_OBJECT of their memory is known to be inside the
// slot), and the dups a member holds of another member's objects. The memory stays charged once,
// to its owner; when the owner lets go first, its charge moves to a holder (`bytes`), and from
// there to the next holder or out of the slot when that dup goes (vcore.h, ledger ops).
struct LedgerClient {
  uint32_t pid;  // 0: free
  uint32_t h_client;
};
struct LedgerDup {
  uint32_t pid;  // the holder; 0: free
  uint32_t h_client;
  uint32_t h_object;  // the owner's (client, object)
  uint32_t pad;
  uint64_t bytes;  // the owner's charge, passed to this holder
};

struct LedgerFile {
  static constexpr uint64_t kMagic = 0x31524447444c4756ull;  // "VGLDGDR1"
  // 2: high_water; 3: compute counters (entries grew: a version-2 shim cannot share the file);
  // 4: clients and dups (appended).
  static constexpr uint32_t kVersion = 4;
  static constexpr uint32_t kMaxEntries = 1024;
  static constexpr uint32_t kMaxClients = 1024;
  static constexpr uint32_t kMaxDups = 1024;
  uint64_t magic;
  uint32_t version;
  uint32_t max_entries;
  pthread_mutex_t mu;  // robust, process-shared; guards everything below
  uint64_t last_reap_ns;
  uint64_t reaped;
  uint64_t peak;        // highest slot total seen
  uint32_t high_water;  // entries[high_water..] are all free (<= kMaxEntries)
  // Version 3: the slot's achieved share over the last 10 s, as last written (with the 1 s one
  // below; this slot was `reserved`, always 0, before: the layout did not change).
  uint32_t achieved_share_10s_pm;
  // Version 3: compute counters (see the top of this file).
  uint64_t seq;             // odd while counters move from an entry to reaped_*
  uint64_t reaped_busy_ns;  // counters of members that left
  uint64_t reaped_throttled_ns;
  uint64_t unattributed_busy_ns;  // cap: samples naming no process, each once
  uint64_t unattributed_last_ts;  // newest such sample added (perfmon timestamp)
  uint32_t achieved_share_1s_pm;  // as last written by any member
  uint32_t share_pid;             // the member that wrote it (0: none)
  LedgerEntry entries[kMaxEntries];
  LedgerClient clients[kMaxClients];  // version 4
  LedgerDup dups[kMaxDups];           // version 4
};

// The slot's compute totals from a ledger (a locked view or a reader's snapshot).
struct LedgerComputeTotals {
  uint64_t gpu_busy_ns = 0;
  uint64_t throttled_ns = 0;
  uint32_t achieved_share_1s_pm = 0;
  uint32_t achieved_share_10s_pm = 0;
};
inline LedgerComputeTotals SumLedgerCompute(const LedgerFile& f) {
  LedgerComputeTotals t;
  const uint32_t end =
      f.high_water < LedgerFile::kMaxEntries ? f.high_water : LedgerFile::kMaxEntries;
  for (uint32_t i = 0; i < end; ++i) {
    if (f.entries[i].in_use) {
      t.gpu_busy_ns += f.entries[i].gpu_busy_ns;
      t.throttled_ns += f.entries[i].throttled_ns;
    }
  }
  t.gpu_busy_ns += f.reaped_busy_ns + f.unattributed_busy_ns;
  t.throttled_ns += f.reaped_throttled_ns;
  t.achieved_share_1s_pm = f.achieved_share_1s_pm;
  t.achieved_share_10s_pm = f.achieved_share_10s_pm;
  return t;
}

// One perfmon sample that named no process: its timestamp as RM gave it and its busy time.
struct LedgerBusySample {
  uint64_t ts;
  uint64_t busy_ns;
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

  // Memory shared between the slot's processes (version 4, see LedgerClient): this process
  // made (live) or dropped RM client h_client; another live member made h_client; this process
  // holds (live) or dropped a dup of another member's (h_client, h_object); this process drops
  // its own (h_client, h_object) charged `bytes`: true when a dup in another member still holds
  // it and the charge moved there.
  void RecordClient(uint32_t h_client, bool live);
  bool ClientOfOtherMember(uint32_t h_client);
  void RecordDup(uint32_t h_client, uint32_t h_object, bool live);
  bool PassCharge(uint32_t h_client, uint32_t h_object, uint64_t bytes);

  // This process's compute counters (cumulative over its controller's life: busy_ns,
  // throttled_ns), the slot's achieved share over the last 1 s and 10 s as it measured it, and the
  // samples naming no process it read since its last call (oldest first; cap mode). Once a
  // second from the control thread. Nothing if this process is not a member.
  void PublishCompute(uint64_t busy_ns, uint64_t throttled_ns, uint32_t achieved_share_1s_pm,
                      uint32_t achieved_share_10s_pm, const LedgerBusySample* unattributed,
                      size_t n_unattributed);
  LedgerComputeTotals ComputeTotals();
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
  LedgerEntry* MemberLocked(uint32_t pid);
  void AddChargeLocked(LedgerEntry& e, uint64_t bytes);
  bool AttachLocked(pid_t pid);
  uint64_t TotalLocked();
  uint32_t EndLocked() const;                             // scan bound: high_water, clamped
  void UseEntryLocked(uint32_t i, const LedgerEntry& e);  // raises high_water first
  int ReapLocked();
  void MaybeReapLocked();
  // Frees entry e (lock held), moving its compute counters to the file's accumulators first.
  void RetireLocked(LedgerEntry& e);
  void BeginMoveLocked();          // seq odd
  void EndMoveLocked();            // seq even
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
  // PublishCompute writes cumulative - base: the base is what this process had published when
  // its entry was last recreated (reaped while alive, then re-added by Self()), since the old
  // entry's counters are in the accumulators already.
  uint64_t busy_base_ = 0, throttled_base_ = 0;
  uint64_t busy_published_ = 0, throttled_published_ = 0;
  std::vector<Watch> watches_;  // by entry index; guarded by the ledger mutex
  uint64_t all_alive_ns_ = 0;   // when a poll last found every other member alive
};

}  // namespace vgpu::shim

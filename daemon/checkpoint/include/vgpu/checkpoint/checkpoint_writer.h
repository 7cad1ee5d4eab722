// CheckpointWriter: the one thread that writes the checkpoint, by group commit. Callers queue
// journal lines (PutEntry/DeleteEntry) or a whole snapshot and return at once; the writer
// appends everything queued since its last write with one write() and one fdatasync, so many
// concurrent Allocates share one disk flush, and nobody waits on the disk while holding the
// manager's lock. After `compact_after` entries it asks its owner for a snapshot (compaction),
// and after a failed write it asks for one too, since a failed append may leave a torn tail that
// only a fresh snapshot may follow.
//
// Why not durable before Allocate answers: an fdatasync on the node's disk costs milliseconds
// (measured: tests/bench/manager), and the live slots plus the kubelet's pod-resources are the
// truth that start-up reconciliation rebuilds from (daemon/manager/reconcile.cc), so a change
// lost in a crash between answer and flush is adopted back from the live slot.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "vgpu/checkpoint/checkpoint.h"
#include "vgpu/status.h"

namespace vgpu::checkpoint {

using EncodedRecords = std::vector<std::shared_ptr<const std::string>>;

class CheckpointWriter {
 public:
  // `request_snapshot` is called from the writer thread, with no writer lock held, when a
  // snapshot is due; it must call Compact() with the owner's full state, under the same lock
  // that orders the owner's Append() calls, so no entry falls between snapshot and journal.
  // `on_failure` (optional) hears every failed write; the writer retries after a second.
  CheckpointWriter(CheckpointStore& store, std::function<void()> request_snapshot,
                   std::function<void(const Status&)> on_failure = nullptr,
                   size_t compact_after = 1024);
  // Writes what is queued, then stops the thread.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void Start();
  // Queues journal lines; returns at once.
  void Append(std::string lines);
  // Queues a snapshot of the whole state; lines queued earlier are dropped (it holds them).
  void Compact(EncodedRecords records);
  // Writes a snapshot now, on the caller's thread (start-up, standalone API).
  Status CompactNow(const EncodedRecords& records);
  // Waits until everything queued so far is on disk; false on timeout.
  bool Flush(std::chrono::milliseconds timeout);
  // Waits until everything queued so far is written to the file, in the kernel's hands: it
  // survives this process's death (SIGKILL, a restart), and the disk flush follows on the writer
  // thread. For callers whose state a crash of the node loses anyway (a DRA claim: the kubelet
  // prepares it again after a reboot), so a prepare need not wait on the disk. The caller
  // writes the queued lines itself when it can, so it never waits behind the writer's flush of
  // an earlier batch. False on timeout.
  bool WaitWritten(std::chrono::milliseconds timeout);

  struct Counters {
    uint64_t batches = 0;      // write()+fdatasync rounds
    uint64_t entries = 0;      // journal lines written
    uint64_t compactions = 0;  // snapshots written
    uint64_t failures = 0;
  };
  Counters counters() const;

 private:
  void Loop();

  CheckpointStore& store_;
  std::function<void()> request_snapshot_;
  std::function<void(const Status&)> on_failure_;
  const size_t compact_after_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  mutable std::condition_variable written_cv_;
  std::optional<EncodedRecords> snapshot_;  // guarded by mu_
  std::string lines_;                       // guarded by mu_; after snapshot_, when both
  size_t queued_entries_ = 0;               // guarded by mu_
  size_t journal_entries_ = 0;              // guarded by mu_: entries since the last snapshot
  bool snapshot_requested_ = false;         // guarded by mu_
  bool must_snapshot_ = false;              // guarded by mu_: a write failed
  uint64_t queued_seq_ = 0;                 // guarded by mu_
  uint64_t written_seq_ = 0;                // guarded by mu_: on disk
  uint64_t in_kernel_seq_ = 0;              // guarded by mu_: written, maybe not yet on disk
  bool stopping_ = false;                   // guarded by mu_
  Counters counters_;                       // guarded by mu_
  // One writer of the file at a time: Loop, WaitWritten and CompactNow take a batch and write
  // it under store_mu_ (the flush runs after, on a duplicate descriptor). Lock order: store_mu_
  // may be taken alone or before mu_; never while holding mu_.
  std::mutex store_mu_;
  std::thread thread_;
};

}  // namespace vgpu::checkpoint

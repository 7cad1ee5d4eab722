#include "vgpu/checkpoint/checkpoint_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace vgpu::checkpoint {
namespace {

std::vector<const std::string*> Refs(const EncodedRecords& v) {
  std::vector<const std::string*> out;
  out.reserve(v.size());
  for (const auto& p : v) {
    out.push_back(p.get());
  }
  return out;
}

}  // namespace

CheckpointWriter::CheckpointWriter(CheckpointStore& store, std::function<void()> request_snapshot,
                                   std::function<void(const Status&)> on_failure,
                                   size_t compact_after)
    : store_(store),
      request_snapshot_(std::move(request_snapshot)),
      on_failure_(std::move(on_failure)),
      compact_after_(compact_after) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void CheckpointWriter::Start() {
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Loop(); });
  }
}

void CheckpointWriter::Append(std::string lines) {
  {
    std::lock_guard lock(mu_);
    lines_ += lines;
    ++queued_entries_;
    ++queued_seq_;
  }
  wake_.notify_one();
}

void CheckpointWriter::Compact(EncodedRecords records) {
  {
    std::lock_guard lock(mu_);
    snapshot_ = std::move(records);
    lines_.clear();
    queued_entries_ = 0;
    snapshot_requested_ = false;
    ++queued_seq_;
  }
  wake_.notify_one();
}

Status CheckpointWriter::CompactNow(const EncodedRecords& records) {
  // store_mu_ first, so that no batch taken before the snapshot is written after it, and none
  // is taken between the snapshot's seq and its write.
  std::lock_guard store(store_mu_);
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    // The snapshot holds everything queued so far.
    snapshot_.reset();
    lines_.clear();
    queued_entries_ = 0;
    seq = ++queued_seq_;
  }
  Status s = store_.SaveEncoded(Refs(records));
  std::lock_guard lock(mu_);
  if (s.ok()) {
    written_seq_ = std::max(written_seq_, seq);
    journal_entries_ = 0;
    must_snapshot_ = false;
    ++counters_.compactions;
    written_cv_.notify_all();
  } else {
    must_snapshot_ = true;
    ++counters_.failures;
    wake_.notify_one();
  }
  return s;
}

bool CheckpointWriter::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  uint64_t want = queued_seq_;
  return written_cv_.wait_for(lock, timeout, [&] { return written_seq_ >= want; });
}

bool CheckpointWriter::WaitWritten(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  uint64_t want;
  {
    std::lock_guard lock(mu_);
    want = queued_seq_;
  }
  // Write the lines on this thread rather than wait for the writer's, which may be inside a
  // flush of the previous batch (milliseconds on a disk): the flush runs on its own descriptor,
  // and this write goes to the kernel next to it.
  {
    std::lock_guard store(store_mu_);
    std::unique_lock lock(mu_);
    if (std::max(written_seq_, in_kernel_seq_) < want && !snapshot_ && !must_snapshot_ &&
        !lines_.empty()) {
      std::string lines = std::move(lines_);
      lines_.clear();
      const size_t entries = queued_entries_;
      queued_entries_ = 0;
      const uint64_t seq = queued_seq_;
      lock.unlock();
      Status s = store_.Write(lines);
      lock.lock();
      if (s.ok()) {
        in_kernel_seq_ = std::max(in_kernel_seq_, seq);
        journal_entries_ += entries;
        counters_.entries += entries;
      } else {
        // A torn tail may follow: only a snapshot may come next (the writer asks for it).
        must_snapshot_ = true;
        ++counters_.failures;
      }
      wake_.notify_one();  // the flush of these lines, or the snapshot
    }
  }
  std::unique_lock lock(mu_);
  return written_cv_.wait_until(lock, deadline,
                                [&] { return std::max(written_seq_, in_kernel_seq_) >= want; });
}

CheckpointWriter::Counters CheckpointWriter::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

void CheckpointWriter::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || queued_seq_ > written_seq_; });
    if (queued_seq_ <= written_seq_) {
      return;  // stopping with nothing left to write
    }
    bool snapshot_due = must_snapshot_ || journal_entries_ + queued_entries_ >= compact_after_;
    if (snapshot_due && !snapshot_ && !snapshot_requested_ && request_snapshot_) {
      snapshot_requested_ = true;
      lock.unlock();
      request_snapshot_();  // takes the owner's lock and calls Compact()
      lock.lock();
      continue;
    }
    if (must_snapshot_ && !snapshot_) {
      if (stopping_ && !request_snapshot_) {
        return;
      }
      // Waiting for the requested snapshot; appending now could follow a torn tail.
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      continue;
    }
    lock.unlock();
    // Take and write the batch under store_mu_ (lock order: store_mu_, then mu_), so that
    // WaitWritten's callers, which write queued lines themselves, and CompactNow never
    // interleave with it; flush afterwards on a second descriptor without store_mu_, so that
    // the next lines are written while the disk flushes these.
    std::optional<EncodedRecords> snapshot;
    size_t entries = 0;
    uint64_t seq = 0;
    Status s;
    int sync_fd = -1;
    bool retry = false;
    {
      std::lock_guard store(store_mu_);
      lock.lock();
      if (must_snapshot_ && !snapshot_) {
        retry = true;  // a caller's write failed meanwhile
      } else {
        snapshot = std::move(snapshot_);
        snapshot_.reset();
        std::string lines = std::move(lines_);
        lines_.clear();
        entries = queued_entries_;
        queued_entries_ = 0;
        seq = queued_seq_;
        lock.unlock();
        if (snapshot) {
          s = store_.SaveEncoded(Refs(*snapshot));
        }
        if (s.ok() && !lines.empty()) {
          s = store_.Write(lines);
        }
        Result<int> fd = s.ok() ? store_.DupJournal() : Result<int>(s);
        s = fd.status();
        sync_fd = fd.ok() ? *fd : -1;
        lock.lock();
        if (s.ok()) {
          // In the kernel's hands: WaitWritten's callers may go on while the disk flushes.
          in_kernel_seq_ = std::max(in_kernel_seq_, seq);
          journal_entries_ = snapshot ? entries : journal_entries_ + entries;
          counters_.entries += entries;
          counters_.compactions += snapshot ? 1 : 0;
          must_snapshot_ = must_snapshot_ && !snapshot;
          written_cv_.notify_all();
        }
      }
    }
    if (retry) {
      continue;
    }
    if (sync_fd >= 0) {
      lock.unlock();
      if (::fdatasync(sync_fd) != 0) {
        s = ErrnoError("checkpoint: fdatasync " + store_.path().string(), errno);
      }
      ::close(sync_fd);
      lock.lock();
    }
    if (s.ok()) {
      written_seq_ = std::max(written_seq_, seq);
      ++counters_.batches;
      written_cv_.notify_all();
      continue;
    }
    ++counters_.failures;
    must_snapshot_ = true;
    snapshot_requested_ = false;
    if (on_failure_) {
      lock.unlock();
      on_failure_(s);
      lock.lock();
    }
    if (stopping_) {
      return;
    }
    wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
  }
}

}  // namespace vgpu::checkpoint

#include "vgpu/checkpoint/checkpoint_writer.h"

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
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    // The snapshot holds everything queued so far.
    snapshot_.reset();
    lines_.clear();
    queued_entries_ = 0;
    seq = ++queued_seq_;
    ++epoch_;
  }
  Status s;
  {
    std::lock_guard store(store_mu_);
    s = store_.SaveEncoded(Refs(records));
  }
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
  std::unique_lock lock(mu_);
  uint64_t want = queued_seq_;
  return written_cv_.wait_for(lock, timeout,
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
    std::optional<EncodedRecords> snapshot = std::move(snapshot_);
    snapshot_.reset();
    std::string lines = std::move(lines_);
    lines_.clear();
    size_t entries = queued_entries_;
    queued_entries_ = 0;
    uint64_t seq = queued_seq_;
    uint64_t epoch = epoch_;
    lock.unlock();
    Status s;
    bool superseded = false;
    {
      std::lock_guard store(store_mu_);
      if (epoch != epoch_) {
        superseded = true;  // CompactNow wrote a newer snapshot meanwhile
      } else {
        if (snapshot) {
          s = store_.SaveEncoded(Refs(*snapshot));
        }
        if (s.ok() && !lines.empty()) {
          s = store_.Write(lines);
          if (s.ok()) {
            // In the kernel's hands: WaitWritten's callers may go on while the disk flushes.
            // store_mu_ before mu_ is the lock order (checkpoint_writer.h).
            std::lock_guard written(mu_);
            in_kernel_seq_ = std::max(in_kernel_seq_, seq);
            written_cv_.notify_all();
          }
          s = s.ok() ? store_.Sync() : s;
        }
      }
    }
    lock.lock();
    if (superseded) {
      continue;
    }
    if (s.ok()) {
      written_seq_ = std::max(written_seq_, seq);
      journal_entries_ = snapshot ? entries : journal_entries_ + entries;
      must_snapshot_ = false;
      ++counters_.batches;
      counters_.entries += entries;
      counters_.compactions += snapshot ? 1 : 0;
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

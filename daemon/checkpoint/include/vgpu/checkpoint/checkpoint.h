// The manager's checkpoint: a snapshot of every slot record followed by an append-only journal
// of changes, one JSON object per line, each with a CRC-32 (zlib) over its payload, so a torn or
// edited file is detected rather than trusted.
//
//   {"crc32":<u32 over payload.dump()>,"format":"vgpu-manager-checkpoint",
//    "payload":{"slots":[ {...SlotRecord...}, ... ]},"version":3}        <- snapshot, line 1
//   {"crc32":<u32 over put.dump()>,"put":{...SlotRecord...}}            <- slot created/changed
//   {"crc32":<u32 over delete.dump()>,"delete":<slot id>}              <- slot destroyed
//
// Why a journal: rewriting every record on every change costs O(slots) bytes and an fsync of a
// new file per Allocate; an entry is one record appended (O(1)), and many entries share one
// fdatasync (group commit, checkpoint_writer.h). Compaction writes a new snapshot atomically
// (temp file, fsync, rename, fsync of the directory), which drops the journal in the same step.
// Loading replays entries in order (put replaces by slot id). Entries are only appended, so a
// crash can tear only the tail: an unterminated last line is dropped (its change was not yet
// durable, and reconciliation with the live slots restores it). Anything else that fails to
// parse or to match its CRC, including a torn snapshot, makes the file corrupt.
// nlohmann::json dumps objects with sorted keys, so payload.dump() is canonical. Version 1 files
// (snapshot only) and 2 load unchanged; their records named two settings otherwise (checkpoint.cc
// FromLegacyKeys).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "vgpu/slots/slot_record.h"
#include "vgpu/status.h"
#include "vgpu/text.h"

namespace vgpu::checkpoint {

// found, corrupt_reason and kept_aside (<path>.corrupt-<ts>): StateFileLoad's.
struct LoadResult : StateFileLoad {
  std::vector<slots::SlotRecord> records;
  size_t journal_entries = 0;  // entries replayed after the snapshot
  bool torn_tail = false;      // an unterminated last entry was dropped
};

std::string Serialize(const std::vector<slots::SlotRecord>& records);
// One record as it appears in payload.slots (compact, sorted keys). Callers that save often keep
// these per record and call SaveSerialized, so an unchanged record is not re-encoded.
std::string RecordJson(const slots::SlotRecord& record);
// The file text for already-encoded records; identical to Serialize() of the same records.
std::string SerializeEncoded(const std::vector<const std::string*>& record_json);
// Journal lines (terminated by '\n') for one changed or destroyed record.
std::string PutEntry(const std::string& record_json);
std::string DeleteEntry(uint32_t slot_id);
// Snapshot plus journal, replayed. `torn_tail`, when non-null, reports a dropped unterminated
// last entry.
Result<std::vector<slots::SlotRecord>> Deserialize(std::string_view text,
                                                   size_t* journal_entries = nullptr,
                                                   bool* torn_tail = nullptr);

// Not thread-safe: one writer at a time (CheckpointWriter serializes).
class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path path) : path_(std::move(path)) {}
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Compaction: a new snapshot of `records`, written atomically; the journal is gone with it.
  Status Save(const std::vector<slots::SlotRecord>& records);
  Status SaveEncoded(const std::vector<const std::string*>& record_json);
  // Appends journal lines (PutEntry/DeleteEntry) to the current file and fdatasyncs them. The
  // file must exist (a snapshot is saved first). On error the tail may be torn: the next write
  // must be a snapshot (Save), never another Append.
  Status Append(std::string_view lines);
  // Append in its two steps: Write hands the lines to the kernel (they survive this process's
  // death), Sync flushes them to the disk (they survive power loss). Same error rule as Append.
  Status Write(std::string_view lines);
  Status Sync();
  // A second descriptor of the journal written to, for a flush (fdatasync) on another thread
  // while the next lines are written: -1 when nothing was written since the last snapshot
  // (which was flushed). The caller closes it.
  Result<int> DupJournal() const;
  // Missing file: empty, found=false. Corrupt file: renamed to <path>.corrupt-<unix seconds>,
  // empty records, corrupt_reason set; the caller rebuilds. Unreadable: error.
  Result<LoadResult> Load() const;

 private:
  void CloseJournal();
  std::filesystem::path path_;
  int journal_fd_ = -1;  // O_APPEND descriptor of the current file; reopened after each Save
};

}  // namespace vgpu::checkpoint

// The manager's checkpoint: every slot record, written atomically (temp file, fsync, rename,
// fsync of the directory) with a CRC-32 (zlib) over the payload, so a torn or edited file is
// detected rather than trusted. Layout (JSON, one object):
//
//   {"format": "vgpu-manager-checkpoint", "version": 1,
//    "payload": {"slots": [ {...SlotRecord...}, ... ]},
//    "crc32": <u32 over payload.dump()>}
//
// nlohmann::json dumps objects with sorted keys, so payload.dump() is canonical.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "vgpu/slots/slot_record.h"
#include "vgpu/status.h"

namespace vgpu::checkpoint {

struct LoadResult {
  std::vector<slots::SlotRecord> records;
  bool found = false;                // a checkpoint file existed
  std::string corrupt_reason;        // non-empty when the file was corrupt
  std::filesystem::path kept_aside;  // where the corrupt file was moved (<path>.corrupt-<ts>)
};

std::string Serialize(const std::vector<slots::SlotRecord>& records);
// One record as it appears in payload.slots (compact, sorted keys). Callers that save often keep
// these per record and call SaveSerialized, so an unchanged record is not re-encoded.
std::string RecordJson(const slots::SlotRecord& record);
// The file text for already-encoded records; identical to Serialize() of the same records.
std::string SerializeEncoded(const std::vector<const std::string*>& record_json);
Result<std::vector<slots::SlotRecord>> Deserialize(std::string_view text);

class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path path) : path_(std::move(path)) {}
  const std::filesystem::path& path() const { return path_; }
  Status Save(const std::vector<slots::SlotRecord>& records) const;
  Status SaveEncoded(const std::vector<const std::string*>& record_json) const;
  // Missing file: empty, found=false. Corrupt file: renamed to <path>.corrupt-<unix seconds>,
  // empty records, corrupt_reason set; the caller rebuilds. Unreadable: error.
  Result<LoadResult> Load() const;

 private:
  std::filesystem::path path_;
};

}  // namespace vgpu::checkpoint

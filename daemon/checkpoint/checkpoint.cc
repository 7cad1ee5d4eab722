#include "vgpu/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "vgpu/slots/shim_backend.h"
#include "vgpu/slots/slot_record_json.h"
#include "vgpu/text.h"

namespace vgpu::checkpoint {
namespace {

using nlohmann::json;
constexpr std::string_view kFormat = "vgpu-manager-checkpoint";
constexpr int kVersion = 4;        // 3: settings named by uapi/vgpu_slot_fields.h; 4: ref clock
constexpr int kOldestVersion = 1;  // snapshot only, no journal

uint32_t Crc32(std::string_view data) {
  return static_cast<uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

// Records of versions 1 and 2 (before uapi/vgpu_slot_fields.h) spelled two settings otherwise
// and had no compute mode: every share then was a cap. Records before version 4 had no reference
// clock: unknown (0, the shim probes), as the slot's config then said.
json FromLegacyKeys(json j) {
  if (!j.contains("compute_ref_clock_mhz")) {
    j["compute_ref_clock_mhz"] = 0u;
  }
  if (!j.contains("memory_quota_bytes")) {
    return j;
  }
  j["mem_quota"] = j["memory_quota_bytes"];
  j.erase("memory_quota_bytes");
  if (j.contains("compute_share_percent")) {
    j["compute_share"] = j["compute_share_percent"];
    j.erase("compute_share_percent");
  }
  j["compute_mode"] = std::string(SettingValueName(ComputeMode::kCap));
  return j;
}

Result<slots::SlotRecord> FromJson(const json& record) {
  slots::SlotRecord r;
  const json j = FromLegacyKeys(record);
  try {
    slots::SlotConfig& c = r.config;
    c.id = j.at("id").get<uint32_t>();
    c.name = j.at("name").get<std::string>();
    c.gpu = j.at("gpu").get<uint32_t>();
    c.gpu_uuid = j.at("gpu_uuid").get<std::string>();
    c.exclusive = j.at("exclusive").get<bool>();
    r.memory_ids = j.at("memory_ids").get<std::vector<std::string>>();
    r.core_ids = j.at("core_ids").get<std::vector<std::string>>();
    r.gpu_ids = j.at("gpu_ids").get<std::vector<std::string>>();
    r.pod_namespace = j.at("pod_namespace").get<std::string>();
    r.pod_name = j.at("pod_name").get<std::string>();
    r.container = j.at("container").get<std::string>();
    r.linked = j.at("linked").get<bool>();
    r.manual = j.at("manual").get<bool>();
  } catch (const json::exception& e) {  // exceptions stay inside the parser
    return DataLossError(std::string("slot record: ") + e.what());
  }
  Status s = SettingsFromJson(j, r.config, /*require_all=*/true);
  if (!s.ok()) {
    return DataLossError("slot record: " + s.message());
  }
  return r;
}

}  // namespace

std::string RecordJson(const slots::SlotRecord& record) {
  return slots::SlotRecordToJson(record).dump();
}

std::string SerializeEncoded(const std::vector<const std::string*>& record_json) {
  // Exactly what json{{"slots", [...]}}.dump() prints, without building the tree again.
  size_t size = 16;
  for (const std::string* r : record_json) {
    size += r->size() + 1;
  }
  std::string payload;
  payload.reserve(size);
  payload += "{\"slots\":[";
  for (size_t i = 0; i < record_json.size(); ++i) {
    if (i != 0) {
      payload += ',';
    }
    payload += *record_json[i];
  }
  payload += "]}";
  // Top-level keys in the order nlohmann::json sorts them.
  std::string out;
  out.reserve(payload.size() + 96);
  out += "{\"crc32\":" + std::to_string(Crc32(payload)) + ",\"format\":\"" + std::string(kFormat) +
         "\",\"payload\":";
  out += payload;
  out += ",\"version\":" + std::to_string(kVersion) + "}\n";
  return out;
}

std::string Serialize(const std::vector<slots::SlotRecord>& records) {
  std::vector<std::string> encoded;
  encoded.reserve(records.size());
  for (const auto& r : records) {
    encoded.push_back(RecordJson(r));
  }
  std::vector<const std::string*> refs;
  for (const auto& e : encoded) {
    refs.push_back(&e);
  }
  return SerializeEncoded(refs);
}

std::string PutEntry(const std::string& record_json) {
  return "{\"crc32\":" + std::to_string(Crc32(record_json)) + ",\"put\":" + record_json + "}\n";
}

std::string DeleteEntry(uint32_t slot_id) {
  std::string id = std::to_string(slot_id);
  return "{\"crc32\":" + std::to_string(Crc32(id)) + ",\"delete\":" + id + "}\n";
}

namespace {

Result<std::vector<slots::SlotRecord>> ParseSnapshot(std::string_view line) {
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return DataLossError("not JSON");
  }
  if (doc.value("format", "") != kFormat) {
    return DataLossError("format is not " + std::string(kFormat));
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<int>() < kOldestVersion || doc["version"].get<int>() > kVersion) {
    return DataLossError("unsupported version");
  }
  if (!doc.contains("payload") || !doc.contains("crc32") || !doc["crc32"].is_number_unsigned()) {
    return DataLossError("payload or crc32 missing");
  }
  uint32_t want = doc["crc32"].get<uint32_t>();
  uint32_t got = Crc32(doc["payload"].dump());
  if (want != got) {
    return DataLossError("crc32 mismatch: file says " + std::to_string(want) + ", payload has " +
                         std::to_string(got));
  }
  const json& list = doc["payload"]["slots"];
  if (!list.is_array()) {
    return DataLossError("payload.slots is not an array");
  }
  std::vector<slots::SlotRecord> out;
  for (const auto& j : list) {
    auto r = FromJson(j);
    if (!r.ok()) {
      return r.status();
    }
    out.push_back(std::move(*r));
  }
  return out;
}

// Applies one journal line to `records` (a put replaces the record of its slot id, or adds one).
Status ApplyEntry(std::string_view line, std::vector<slots::SlotRecord>& records) {
  json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("crc32") ||
      !doc["crc32"].is_number_unsigned()) {
    return DataLossError("not a journal entry");
  }
  uint32_t want = doc["crc32"].get<uint32_t>();
  if (doc.contains("put")) {
    if (Crc32(doc["put"].dump()) != want) {
      return DataLossError("crc32 mismatch");
    }
    auto r = FromJson(doc["put"]);
    if (!r.ok()) {
      return r.status();
    }
    auto it = std::find_if(records.begin(), records.end(),
                           [&](const auto& x) { return x.config.id == r->config.id; });
    if (it == records.end()) {
      records.push_back(std::move(*r));
    } else {
      *it = std::move(*r);
    }
    return OkStatus();
  }
  if (doc.contains("delete") && doc["delete"].is_number_unsigned()) {
    if (Crc32(doc["delete"].dump()) != want) {
      return DataLossError("crc32 mismatch");
    }
    uint32_t id = doc["delete"].get<uint32_t>();
    std::erase_if(records, [&](const auto& x) { return x.config.id == id; });
    return OkStatus();
  }
  return DataLossError("journal entry is neither put nor delete");
}

}  // namespace

Result<std::vector<slots::SlotRecord>> Deserialize(std::string_view text, size_t* journal_entries,
                                                   bool* torn_tail) {
  size_t end = text.find('\n');
  if (end == std::string_view::npos) {
    // Version 1 files and hand edits may lack the final newline; a torn snapshot fails to parse.
    end = text.size();
  }
  auto snapshot = ParseSnapshot(text.substr(0, end));
  if (!snapshot.ok()) {
    return snapshot.status();
  }
  std::vector<slots::SlotRecord> records = std::move(*snapshot);
  size_t entries = 0;
  size_t pos = end == text.size() ? end : end + 1;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) {
      // An append cut short by a crash: never acknowledged as durable, so not part of the state.
      if (torn_tail != nullptr) {
        *torn_tail = true;
      }
      break;
    }
    ++entries;
    Status s = ApplyEntry(text.substr(pos, eol - pos), records);
    if (!s.ok()) {
      return DataLossError("journal entry " + std::to_string(entries) + ": " + s.message());
    }
    pos = eol + 1;
  }
  if (journal_entries != nullptr) {
    *journal_entries = entries;
  }
  return records;
}

CheckpointStore::~CheckpointStore() { CloseJournal(); }

void CheckpointStore::CloseJournal() {
  if (journal_fd_ >= 0) {
    ::close(journal_fd_);
    journal_fd_ = -1;
  }
}

Status CheckpointStore::Append(std::string_view lines) {
  VGPU_RETURN_IF_ERROR(Write(lines));
  return Sync();
}

Status CheckpointStore::Write(std::string_view lines) {
  if (journal_fd_ < 0) {
    journal_fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (journal_fd_ < 0) {
      return ErrnoError("checkpoint: open " + path_.string() + " for append", errno);
    }
  }
  Status written = WriteAll(journal_fd_, lines, path_.string());
  if (!written.ok()) {
    CloseJournal();  // the next append reopens; a torn tail is found and cut at load
    return written.Annotate("checkpoint: append");
  }
  return OkStatus();
}

Status CheckpointStore::Sync() {
  if (journal_fd_ < 0) {
    return OkStatus();  // nothing written since the last snapshot, which was flushed
  }
  // The size changes with every append, so fdatasync still writes the inode's size; it skips
  // only timestamps.
  if (::fdatasync(journal_fd_) != 0) {
    int err = errno;
    CloseJournal();
    return ErrnoError("checkpoint: fdatasync " + path_.string(), err);
  }
  return OkStatus();
}

Result<int> CheckpointStore::DupJournal() const {
  if (journal_fd_ < 0) {
    return -1;
  }
  int fd = ::fcntl(journal_fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    return ErrnoError("checkpoint: dup " + path_.string(), errno);
  }
  return fd;
}

Status CheckpointStore::Save(const std::vector<slots::SlotRecord>& records) {
  CloseJournal();  // the rename replaces the file it points at
  return slots::WriteFileAtomically(path_, Serialize(records)).Annotate("checkpoint");
}

Status CheckpointStore::SaveEncoded(const std::vector<const std::string*>& record_json) {
  CloseJournal();
  return slots::WriteFileAtomically(path_, SerializeEncoded(record_json)).Annotate("checkpoint");
}

Result<LoadResult> CheckpointStore::Load() const {
  // A corrupt file leaves no records: the caller rebuilds from live slots and the pod-resources
  // API, and the file is kept aside as evidence.
  LoadResult out;
  Status st = LoadStateFile(path_, "checkpoint", &out, &out.records, [&](std::string_view text) {
    return Deserialize(text, &out.journal_entries, &out.torn_tail);
  });
  if (!st.ok()) {
    return st;
  }
  return out;
}

}  // namespace vgpu::checkpoint

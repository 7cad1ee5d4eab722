#include "vgpu/reference_clock/reference_clock_file.h"

#include <zlib.h>

#include <nlohmann/json.hpp>

#include "vgpu/slot_settings.h"
#include "vgpu/slots/shim_backend.h"
#include "vgpu/text.h"

namespace vgpu::reference_clock {
namespace {

using nlohmann::json;
constexpr std::string_view kFormat = "vgpu-reference-clocks";
constexpr int kVersion = 1;

// The slot setting's valid range (uapi/vgpu_slot_fields.h): a figure outside it could not be
// written into a slot.
constexpr uint32_t kMaxMhz = setting_range::compute_ref_clock_mhz.max;

uint32_t Crc32(std::string_view data) {
  return static_cast<uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

}  // namespace

std::string SerializeReferences(const std::map<std::string, GpuReference>& gpus) {
  json list = json::object();
  for (const auto& [uuid, r] : gpus) {
    list[uuid] = {{"mhz", r.mhz},
                  {"power_limit_mw", r.power_limit_mw},
                  {"driver_version", r.driver_version},
                  {"learned_unix_s", r.learned_unix_s}};
  }
  json payload = {{"gpus", list}};
  return json{{"crc32", Crc32(payload.dump())},
              {"format", kFormat},
              {"payload", payload},
              {"version", kVersion}}
             .dump() +
         "\n";
}

Result<std::map<std::string, GpuReference>> ParseReferences(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return DataLossError("not JSON");
  }
  if (doc.value("format", "") != kFormat || doc.value("version", 0) != kVersion) {
    return DataLossError("not a version " + std::to_string(kVersion) + " " + std::string(kFormat) +
                         " file");
  }
  if (!doc.contains("payload") || !doc.contains("crc32") || !doc["crc32"].is_number_unsigned()) {
    return DataLossError("payload or crc32 missing");
  }
  if (doc["crc32"].get<uint32_t>() != Crc32(doc["payload"].dump())) {
    return DataLossError("crc32 mismatch");
  }
  const json& list = doc["payload"].value("gpus", json());
  if (!list.is_object()) {
    return DataLossError("payload.gpus is not an object");
  }
  std::map<std::string, GpuReference> out;
  for (const auto& [uuid, j] : list.items()) {
    GpuReference r;
    try {
      r.mhz = j.at("mhz").get<uint32_t>();
      r.power_limit_mw = j.at("power_limit_mw").get<uint32_t>();
      r.driver_version = j.at("driver_version").get<std::string>();
      r.learned_unix_s = j.at("learned_unix_s").get<uint64_t>();
    } catch (const json::exception& e) {  // exceptions stay inside the parser
      return DataLossError(uuid + ": " + e.what());
    }
    if (r.mhz == 0 || r.mhz > kMaxMhz) {
      return DataLossError(uuid + ": " + std::to_string(r.mhz) + " MHz is not in 1.." +
                           std::to_string(kMaxMhz));
    }
    out.emplace(uuid, std::move(r));
  }
  return out;
}

Result<LoadedReferences> ReferenceClockFile::Load() const {
  LoadedReferences out;
  Status st = LoadStateFile(path_, "reference clocks", &out, &out.gpus, ParseReferences);
  if (!st.ok()) {
    return st;
  }
  return out;
}

Status ReferenceClockFile::Save(const std::map<std::string, GpuReference>& gpus) const {
  return slots::WriteFileAtomically(path_, SerializeReferences(gpus)).Annotate("reference clocks");
}

}  // namespace vgpu::reference_clock

// Where the manager keeps its GPUs' reference clocks across restarts: one JSON file beside the
// checkpoint (<checkpoint-path>/reference-clocks.json), written atomically and flushed whenever a
// reference changes (rarely: a GPU's first counting stretch, a lower one, a new power limit).
//
//   {"crc32":<u32 over payload.dump()>,"format":"vgpu-reference-clocks","payload":{"gpus":{
//    "GPU-...":{"driver_version":"580.159.04","learned_unix_s":...,"mhz":1483,
//               "power_limit_mw":700000}}},"version":1}
//
// A file that does not parse, whose CRC does not match, or that holds a figure out of the slot
// setting's range is corrupt: it is moved aside (<path>.corrupt-<unix seconds>) and the book
// starts empty, so the GPUs are learned again from their next saturated stretches (the shim
// probes meanwhile). Nothing else depends on it: losing it costs a calibration, never a slot.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "vgpu/reference_clock/reference_clock_book.h"
#include "vgpu/status.h"
#include "vgpu/text.h"

namespace vgpu::reference_clock {

inline constexpr std::string_view kReferenceClockFileName = "reference-clocks.json";

// found, corrupt_reason and kept_aside: StateFileLoad's.
struct LoadedReferences : StateFileLoad {
  std::map<std::string, GpuReference> gpus;
};

class ReferenceClockFile {
 public:
  explicit ReferenceClockFile(std::filesystem::path path) : path_(std::move(path)) {}
  const std::filesystem::path& path() const { return path_; }
  // Missing: empty. Corrupt: moved aside, empty, corrupt_reason set. Unreadable: an error.
  Result<LoadedReferences> Load() const;
  Status Save(const std::map<std::string, GpuReference>& gpus) const;

 private:
  std::filesystem::path path_;
};

// The file's text, and back (errors say what is wrong); exposed for tests.
std::string SerializeReferences(const std::map<std::string, GpuReference>& gpus);
Result<std::map<std::string, GpuReference>> ParseReferences(std::string_view text);

}  // namespace vgpu::reference_clock

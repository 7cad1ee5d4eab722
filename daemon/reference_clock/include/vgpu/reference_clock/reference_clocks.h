// The manager's reference clocks, assembled: the book (reference_clock_book.h) loaded from its
// file beside the checkpoint (reference_clock_file.h), and the monitor (reference_clock_monitor.h)
// that keeps it current from NVML. main.cc holds one; SlotManager reads MhzFor for every slot it
// creates and links, and is told of changes.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "vgpu/reference_clock/reference_clock_monitor.h"

namespace vgpu::reference_clock {

class ReferenceClocks {
 public:
  // Loads the book from <dir>/reference-clocks.json: missing, empty; corrupt, moved aside
  // (loaded().corrupt_reason says why) and empty. An error only when the file cannot be read.
  static Result<std::unique_ptr<ReferenceClocks>> Load(const std::filesystem::path& dir);
  ~ReferenceClocks();

  uint32_t MhzFor(std::string_view gpu_uuid) const { return book_.MhzFor(gpu_uuid); }
  const LoadedReferences& loaded() const { return loaded_; }
  // Opens NVML and starts the monitor. Unavailable without a driver: the book keeps what it had
  // and slots get it, or 0 (the shim probes).
  Status Start(const std::string& nvml_library, ReferenceClockMonitor::OnChange on_change,
               ReferenceClockMonitor::OnError on_error);
  void Stop();

 private:
  ReferenceClocks(ReferenceClockFile file, LoadedReferences loaded)
      : file_(std::move(file)), loaded_(std::move(loaded)), book_(loaded_.gpus) {}
  ReferenceClockFile file_;
  LoadedReferences loaded_;
  ReferenceClockBook book_;
  std::unique_ptr<topology::GpuLoadSource> source_;
  std::unique_ptr<ReferenceClockMonitor> monitor_;  // stopped before source_ goes
};

}  // namespace vgpu::reference_clock

// Each GPU's reference clock: the lowest saturated-stretch figure (saturated_stretch.h) the GPU
// has shown, by GPU UUID. What the manager writes into every new slot on that GPU as
// compute_ref_clock_mhz (uapi/vgpu_slot_fields.h), so each tenant's clock weighting measures work
// against the GPU's clock rather than against a start-up probe's moment.
//
// Why the lowest: the power-limited clock of a saturated card falls as the card heats (the H200
// under one bf16 matmul loop: 1538 MHz on a card that had cooled for a minute, 1483 MHz right
// after a long saturated run; docs/results/e2e-h200.md, run H). A capped tenant's on phases run
// at a cooler card's boosted clock, and the work a busy second does is credited against the
// reference: a reference above the hot figure under-credits it and the cap over-delivers (run J:
// caps 70 and 90 by 3-5 points). The hot figure is what the GPU sustains however long a tenant
// runs, so that is the one kept.
//
// When it may rise: never from a later stretch alone (a cooler day or an idle night would move
// it up again, and caps would over-deliver in the next hot hour). A production operator changes
// what the GPU can sustain by changing its power limit (nvidia-smi -pl) or its driver; either
// invalidates the figure, and the next counting stretch sets it afresh, up or down. To recalibrate
// by hand, delete the file (reference_clock_file.h) and restart the manager.
// Thread-safe: the monitor's thread offers, the slot manager's threads read.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace vgpu::reference_clock {

struct GpuReference {
  uint32_t mhz = 0;
  uint32_t power_limit_mw = 0;  // enforced when learned; 0: NVML could not say
  std::string driver_version;   // "" when unknown
  uint64_t learned_unix_s = 0;  // when the figure was last lowered or set

  bool operator==(const GpuReference&) const = default;
};

class ReferenceClockBook {
 public:
  ReferenceClockBook() = default;
  explicit ReferenceClockBook(const std::map<std::string, GpuReference>& gpus)
      : gpus_(gpus.begin(), gpus.end()) {}

  // A counting stretch's figure for GPU `uuid`, with the GPU's power limit and driver now.
  // Returns true when the GPU's reference changed: first figure, lower figure, or a power limit
  // or driver other than the figure was learned under.
  bool Offer(const std::string& uuid, uint32_t mhz, uint32_t power_limit_mw,
             const std::string& driver_version, uint64_t now_unix_s);
  // The GPU's reference in MHz; 0 when none is known (the shim then probes).
  uint32_t MhzFor(std::string_view uuid) const;
  std::map<std::string, GpuReference> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, GpuReference, std::less<>> gpus_;
};

}  // namespace vgpu::reference_clock

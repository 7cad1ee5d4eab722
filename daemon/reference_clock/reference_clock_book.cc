#include "vgpu/reference_clock/reference_clock_book.h"

namespace vgpu::reference_clock {

bool ReferenceClockBook::Offer(const std::string& uuid, uint32_t mhz, uint32_t power_limit_mw,
                               const std::string& driver_version, uint64_t now_unix_s) {
  if (mhz == 0) {
    return false;
  }
  std::lock_guard lock(mu_);
  auto it = gpus_.find(uuid);
  const GpuReference fresh{mhz, power_limit_mw, driver_version, now_unix_s};
  if (it == gpus_.end()) {
    gpus_.emplace(uuid, fresh);
    return true;
  }
  GpuReference& r = it->second;
  // A value NVML could not read (0, "") says nothing about a change.
  const bool limit_changed =
      power_limit_mw != 0 && r.power_limit_mw != 0 && power_limit_mw != r.power_limit_mw;
  const bool driver_changed =
      !driver_version.empty() && !r.driver_version.empty() && driver_version != r.driver_version;
  if (limit_changed || driver_changed || mhz < r.mhz) {
    r = fresh;
    return true;
  }
  return false;
}

uint32_t ReferenceClockBook::MhzFor(std::string_view uuid) const {
  std::lock_guard lock(mu_);
  auto it = gpus_.find(uuid);
  return it == gpus_.end() ? 0 : it->second.mhz;
}

std::map<std::string, GpuReference> ReferenceClockBook::All() const {
  std::lock_guard lock(mu_);
  return {gpus_.begin(), gpus_.end()};
}

}  // namespace vgpu::reference_clock

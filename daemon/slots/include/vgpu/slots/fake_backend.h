// In-memory SlotBackend for tests and benchmarks: records calls, can be told to fail.
#pragma once

#include <map>
#include <mutex>
#include <optional>

#include "vgpu/slots/slot.h"

namespace vgpu::slots {

class FakeSlotBackend final : public SlotBackend {
 public:
  std::string_view Kind() const override { return "fake"; }
  Result<uint32_t> Create(const SlotConfig& config) override;
  Status Update(const SlotConfig& config) override;
  Status Destroy(uint32_t id) override;
  Result<std::vector<SlotConfig>> List() override;
  ContainerEdits Edits(const SlotConfig& config) const override;
  // What SetUsage stored for `id` (zero if never set); NotFound for a slot that does not exist.
  Result<SlotUsage> Usage(uint32_t id) override;

  // The next call of each kind fails with this status (once).
  void FailNextCreate(Status s);
  void FailNextDestroy(Status s);
  void SetUsage(uint32_t id, SlotUsage usage);
  // Usage(id) fails with `s` until cleared with OkStatus().
  void FailUsage(uint32_t id, Status s);
  int creates() const;
  int destroys() const;

 private:
  mutable std::mutex mu_;
  std::map<uint32_t, SlotConfig> slots_;   // guarded by mu_
  std::map<uint32_t, SlotUsage> usage_;    // guarded by mu_
  std::map<uint32_t, Status> fail_usage_;  // guarded by mu_
  std::optional<Status> fail_create_, fail_destroy_;
  int creates_ = 0, destroys_ = 0;
};

}  // namespace vgpu::slots

// SlotTable: the manager's slots by backend id, the lookups every decision needs, and which
// slots changed since the checkpoint last heard of them. Not thread-safe: SlotManager's mutex
// guards it. Whoever changes a record in place calls MarkChanged, so the checkpoint journal
// carries exactly the changed records (O(changes), not O(slots), per Allocate).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/checkpoint/checkpoint_writer.h"
#include "vgpu/slots/slot_record.h"

namespace vgpu::manager {

struct TrackedSlot {
  slots::SlotRecord record;
  std::chrono::steady_clock::time_point created;
  std::optional<std::chrono::steady_clock::time_point> unlisted_since;
};

class SlotTable {
 public:
  using Map = std::map<uint32_t, TrackedSlot>;

  const Map& all() const { return slots_; }
  Map& all() { return slots_; }
  size_t size() const { return slots_.size(); }

  TrackedSlot* Find(uint32_t id);
  // The slot whose identity key (SlotConfig::name) is `name`.
  TrackedSlot* FindByName(std::string_view name);
  // Exclusive slots on `gpu`.
  TrackedSlot* FindExclusive(uint32_t gpu);
  // Whether any slot sits on `gpu`; with `exclusive`, only slots of that mode.
  bool AnyOnGpu(uint32_t gpu, std::optional<bool> exclusive = std::nullopt) const;

  void Put(TrackedSlot slot);
  void MarkChanged(uint32_t id);
  void Erase(uint32_t id);
  void Clear();

  // Journal lines for the slots changed since the last call (put or delete), in id order.
  std::string TakeJournal();
  // Every record, encoded (cached per record until it changes); clears the changed set.
  checkpoint::EncodedRecords EncodeAll();

 private:
  Map slots_;
  std::map<uint32_t, std::shared_ptr<const std::string>> encoded_;  // record JSON cache
  std::set<uint32_t> changed_;
};

}  // namespace vgpu::manager

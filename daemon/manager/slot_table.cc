#include "vgpu/manager/slot_table.h"

#include <algorithm>

#include "vgpu/checkpoint/checkpoint.h"

namespace vgpu::manager {

TrackedSlot* SlotTable::Find(uint32_t id) {
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : &it->second;
}

TrackedSlot* SlotTable::FindByName(std::string_view name) {
  for (auto& [id, t] : slots_) {
    if (t.record.config.name == name) {
      return &t;
    }
  }
  return nullptr;
}

TrackedSlot* SlotTable::FindExclusive(uint32_t gpu) {
  for (auto& [id, t] : slots_) {
    if (t.record.config.gpu == gpu && t.record.config.exclusive) {
      return &t;
    }
  }
  return nullptr;
}

bool SlotTable::AnyOnGpu(uint32_t gpu, std::optional<bool> exclusive) const {
  return std::any_of(slots_.begin(), slots_.end(), [&](const auto& kv) {
    const auto& c = kv.second.record.config;
    return c.gpu == gpu && (!exclusive || c.exclusive == *exclusive);
  });
}

void SlotTable::Put(TrackedSlot slot) {
  uint32_t id = slot.record.config.id;
  slots_[id] = std::move(slot);
  MarkChanged(id);
}

void SlotTable::MarkChanged(uint32_t id) {
  encoded_.erase(id);
  changed_.insert(id);
}

void SlotTable::Erase(uint32_t id) {
  slots_.erase(id);
  MarkChanged(id);
}

void SlotTable::Clear() {
  slots_.clear();
  encoded_.clear();
  changed_.clear();
}

std::string SlotTable::TakeJournal() {
  std::string lines;
  for (uint32_t id : changed_) {
    auto it = slots_.find(id);
    if (it == slots_.end()) {
      lines += checkpoint::DeleteEntry(id);
      continue;
    }
    auto& cached = encoded_[id];
    if (cached == nullptr) {
      cached = std::make_shared<const std::string>(checkpoint::RecordJson(it->second.record));
    }
    lines += checkpoint::PutEntry(*cached);
  }
  changed_.clear();
  return lines;
}

checkpoint::EncodedRecords SlotTable::EncodeAll() {
  checkpoint::EncodedRecords out;
  out.reserve(slots_.size());
  for (const auto& [id, t] : slots_) {
    auto& cached = encoded_[id];
    if (cached == nullptr) {
      cached = std::make_shared<const std::string>(checkpoint::RecordJson(t.record));
    }
    out.push_back(cached);
  }
  changed_.clear();
  return out;
}

}  // namespace vgpu::manager

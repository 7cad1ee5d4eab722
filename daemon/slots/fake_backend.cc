#include "vgpu/slots/fake_backend.h"

namespace vgpu::slots {

Result<uint32_t> FakeSlotBackend::Create(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  if (fail_create_) {
    Status s = *fail_create_;
    fail_create_.reset();
    return s;
  }
  uint32_t id = 0;
  while (slots_.count(id) != 0) {
    ++id;
  }
  SlotConfig c = config;
  c.id = id;
  slots_[id] = c;
  ++creates_;
  return id;
}

Status FakeSlotBackend::Update(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(config.id);
  if (it == slots_.end()) {
    return NotFoundError("fake slot " + std::to_string(config.id) + " does not exist");
  }
  it->second = config;
  return OkStatus();
}

Status FakeSlotBackend::Destroy(uint32_t id) {
  std::lock_guard lock(mu_);
  if (fail_destroy_) {
    Status s = *fail_destroy_;
    fail_destroy_.reset();
    return s;
  }
  if (slots_.erase(id) == 0) {
    return NotFoundError("fake slot " + std::to_string(id) + " does not exist");
  }
  ++destroys_;
  return OkStatus();
}

Result<std::vector<SlotConfig>> FakeSlotBackend::List() {
  std::lock_guard lock(mu_);
  std::vector<SlotConfig> out;
  for (const auto& [id, c] : slots_) {
    out.push_back(c);
  }
  return out;
}

ContainerEdits FakeSlotBackend::Edits(const SlotConfig& c) const {
  ContainerEdits e;
  e.devices.push_back({"/dev/fake-vgpu" + std::to_string(c.id), "/dev/nvidia0", "rw"});
  e.envs["VGPU_FAKE_SLOT"] = std::to_string(c.id);
  return e;
}

void FakeSlotBackend::FailNextCreate(Status s) {
  std::lock_guard lock(mu_);
  fail_create_ = std::move(s);
}

void FakeSlotBackend::FailNextDestroy(Status s) {
  std::lock_guard lock(mu_);
  fail_destroy_ = std::move(s);
}

Result<SlotUsage> FakeSlotBackend::Usage(uint32_t id) {
  std::lock_guard lock(mu_);
  if (slots_.count(id) == 0) {
    return NotFoundError("fake slot " + std::to_string(id) + " does not exist");
  }
  if (auto f = fail_usage_.find(id); f != fail_usage_.end()) {
    return f->second;
  }
  auto it = usage_.find(id);
  return it == usage_.end() ? SlotUsage{} : it->second;
}

void FakeSlotBackend::SetUsage(uint32_t id, SlotUsage usage) {
  std::lock_guard lock(mu_);
  usage_[id] = usage;
}

void FakeSlotBackend::FailUsage(uint32_t id, Status s) {
  std::lock_guard lock(mu_);
  if (s.ok()) {
    fail_usage_.erase(id);
  } else {
    fail_usage_[id] = std::move(s);
  }
}

int FakeSlotBackend::creates() const {
  std::lock_guard lock(mu_);
  return creates_;
}

int FakeSlotBackend::destroys() const {
  std::lock_guard lock(mu_);
  return destroys_;
}

}  // namespace vgpu::slots

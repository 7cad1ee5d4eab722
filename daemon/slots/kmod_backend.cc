#include "vgpu/slots/kmod_backend.h"

#include "vgpu/kmodclient.h"

namespace vgpu::slots {
kmod::SlotConfig ToKmodConfig(const SlotConfig& c) {
  kmod::SlotConfig k;
  k.name = c.name;
#define VGPU_COPY_SETTING(field, ...) k.field = c.field;
  VGPU_SLOT_NUMBERS(VGPU_COPY_SETTING)
  VGPU_SLOT_ENUMS(VGPU_COPY_SETTING)
#undef VGPU_COPY_SETTING
  return k;
}

SlotConfig FromKmodInfo(const kmod::SlotInfo& s) {
  SlotConfig c;
  c.id = s.id;
  c.gpu = s.gpu;
  c.name = s.name;
#define VGPU_COPY_SETTING(field, ...) c.field = s.field;
  VGPU_SLOT_NUMBERS(VGPU_COPY_SETTING)
#undef VGPU_COPY_SETTING
  // An enum setting the module does not report (0, a module predating it) keeps the default.
#define VGPU_COPY_SETTING(field, type, ...) \
  if (s.field != 0) {                       \
    c.field = static_cast<type>(s.field);   \
  }
  VGPU_SLOT_ENUMS(VGPU_COPY_SETTING)
#undef VGPU_COPY_SETTING
  // The module stores no "exclusive" bit; whole-GPU slots are named "g<N>-whole".
  c.exclusive = c.name.ends_with("-whole");
  return c;
}

Result<std::unique_ptr<KmodSlotBackend>> KmodSlotBackend::Open() {
  auto client = kmod::Client::Open();
  if (!client.ok()) {
    return client.status().Annotate(
        "--enforcement=kmod: vgpu.ko's netlink family (load the module, or use "
        "--enforcement=shim)");
  }
  return std::unique_ptr<KmodSlotBackend>(new KmodSlotBackend(std::move(*client)));
}

KmodSlotBackend::KmodSlotBackend(std::unique_ptr<kmod::Client> client)
    : client_(std::move(client)) {}

KmodSlotBackend::~KmodSlotBackend() = default;

Result<uint32_t> KmodSlotBackend::Create(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  kmod::SlotSpec spec;
  spec.gpu = config.gpu;
  spec.flags = VGPU_SLOT_F_UVM;
  spec.config = ToKmodConfig(config);
  auto info = client_->CreateSlot(spec);
  if (!info.ok()) {
    return info.status();
  }
  return info->id;
}

Status KmodSlotBackend::Update(const SlotConfig& config) {
  std::lock_guard lock(mu_);
  auto info = client_->UpdateSlot(config.id, ToKmodConfig(config));
  return info.ok() ? OkStatus() : info.status();
}

Status KmodSlotBackend::Destroy(uint32_t id) {
  std::lock_guard lock(mu_);
  return client_->DestroySlot(id, 0);
}

Result<std::vector<SlotConfig>> KmodSlotBackend::List() {
  std::lock_guard lock(mu_);
  auto list = client_->ListSlots();
  if (!list.ok()) {
    return list.status();
  }
  std::vector<SlotConfig> out;
  for (const auto& s : *list) {
    if (s.state == VGPU_SLOT_STATE_DYING) {
      continue;  // already destroyed, waiting for its last file
    }
    SlotConfig c = FromKmodInfo(s);
    out.push_back(std::move(c));
  }
  return out;
}

ContainerEdits KmodSlotBackend::Edits(const SlotConfig& c) const {
  ContainerEdits e;
  std::string id = std::to_string(c.id);
  e.devices.push_back({"/dev/vgpuctl" + id, "/dev/nvidiactl", "rw"});
  e.devices.push_back({"/dev/vgpu" + id, "/dev/nvidia0", "rw"});
  e.devices.push_back({"/dev/vgpu-uvm" + id, "/dev/nvidia-uvm", "rw"});
  return e;
}

Result<SlotUsage> KmodSlotBackend::Usage(uint32_t id) {
  std::lock_guard lock(mu_);
  auto info = client_->GetSlot(id);
  if (!info.ok()) {
    return info.status();
  }
  // The module's per-slot counters (uapi/vgpu_genl.h enum vgpu_stat).
  SlotUsage u;
  u.memory_charged_bytes = info->stats[VGPU_STAT_MEM_CHARGED];
  u.memory_peak_bytes = info->stats[VGPU_STAT_MEM_PEAK];
  u.memory_denials = info->stats[VGPU_STAT_MEM_DENIALS];
  u.unknown_ioctls = info->stats[VGPU_STAT_UNKNOWN_IOCTLS];
  u.gpu_busy_ns = info->stats[VGPU_STAT_GPU_BUSY_NS];
  u.throttled_ns = info->stats[VGPU_STAT_THROTTLED_NS];
  u.achieved_share_1s_pm = static_cast<uint32_t>(info->stats[VGPU_STAT_SHARE_1S_PM]);
  u.achieved_share_10s_pm = static_cast<uint32_t>(info->stats[VGPU_STAT_SHARE_10S_PM]);
  return u;
}

}  // namespace vgpu::slots

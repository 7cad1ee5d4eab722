// Kmod backend: slots live in vgpu.ko, created and configured over its generic-netlink family
// through daemon/kmodclient (uapi/vgpu_genl.h is the manual). The module keeps slots across a
// manager restart, so List() is how the manager reattaches. A slot's nodes are
// /dev/vgpuctl<ID>, /dev/vgpu<ID> and /dev/vgpu-uvm<ID>, mapped in the container to
// /dev/nvidiactl, /dev/nvidia0 and /dev/nvidia-uvm.
#pragma once

#include <memory>
#include <mutex>

#include "vgpu/slots/slot.h"

namespace vgpu::kmod {
class Client;
struct SlotConfig;
struct SlotInfo;
}  // namespace vgpu::kmod

namespace vgpu::slots {

// The slot as the module is asked for it, and back from the module's report: every setting of
// uapi/vgpu_slot_fields.h is copied, none is left behind.
kmod::SlotConfig ToKmodConfig(const SlotConfig& config);
SlotConfig FromKmodInfo(const kmod::SlotInfo& info);

class KmodSlotBackend final : public SlotBackend {
 public:
  // NotFound (with what to do) when vgpu.ko is not loaded.
  static Result<std::unique_ptr<KmodSlotBackend>> Open();
  ~KmodSlotBackend() override;
  std::string_view Kind() const override { return "kmod"; }
  Result<uint32_t> Create(const SlotConfig& config) override;
  Status Update(const SlotConfig& config) override;
  Status Destroy(uint32_t id) override;
  Result<std::vector<SlotConfig>> List() override;
  ContainerEdits Edits(const SlotConfig& config) const override;
  Result<SlotUsage> Usage(uint32_t id) override;

 private:
  explicit KmodSlotBackend(std::unique_ptr<kmod::Client> client);
  std::mutex mu_;  // kmod::Client is not thread-safe
  std::unique_ptr<kmod::Client> client_;
};

}  // namespace vgpu::slots

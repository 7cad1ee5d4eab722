#include "vgpu/dra/device_model.h"

#include <charconv>

namespace vgpu::dra {

std::optional<DeviceRef> ParseDeviceName(std::string_view name) {
  if (!name.starts_with("gpu-")) {
    return std::nullopt;
  }
  name.remove_prefix(4);
  DeviceRef ref;
  if (name.ends_with("-share")) {
    ref.share = true;
    name.remove_suffix(6);
  }
  if (name.empty() || (name.size() > 1 && name[0] == '0')) {
    return std::nullopt;
  }
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), ref.gpu);
  if (ec != std::errc() || end != name.data() + name.size()) {
    return std::nullopt;
  }
  return ref;
}

}  // namespace vgpu::dra

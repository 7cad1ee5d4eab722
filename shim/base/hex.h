// Lower-case hex encoding for trace records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vgpu::shim {

inline void AppendHex(std::string& out, const void* data, size_t len) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  size_t at = out.size();
  out.resize(at + 2 * len);
  for (size_t i = 0; i < len; ++i) {
    out[at + 2 * i] = kDigits[p[i] >> 4];
    out[at + 2 * i + 1] = kDigits[p[i] & 0xf];
  }
}

}  // namespace vgpu::shim

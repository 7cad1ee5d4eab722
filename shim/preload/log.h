// One-line diagnostics on stderr for the shim: "vgpu-shim[PID] slot N: message".
#pragma once

#include <cstdarg>

#include "config.h"

namespace vgpu::shim {

void SetLogLevel(LogLevel level, uint32_t slot_id);
bool LogEnabled(LogLevel level);
void Logf(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace vgpu::shim

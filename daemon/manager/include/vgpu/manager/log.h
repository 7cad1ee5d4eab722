// Daemon log lines: one line per event, "key=value" with stable keys (slot, pod, container,
// gpu, resource), written to stderr with a UTC timestamp and level (STYLE.md, vgpu conventions).
#pragma once

#include <string_view>

namespace vgpu::manager {

enum class LogLevel { kInfo, kWarn, kError };

void LogLine(LogLevel level, std::string_view line);
inline void LogInfo(std::string_view line) { LogLine(LogLevel::kInfo, line); }
inline void LogWarn(std::string_view line) { LogLine(LogLevel::kWarn, line); }
inline void LogError(std::string_view line) { LogLine(LogLevel::kError, line); }
// Silences LogInfo (benchmarks); warnings and errors still print.
void SetQuietInfo(bool quiet);

}  // namespace vgpu::manager

#include "vgpu/manager/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace vgpu::manager {
namespace {
std::atomic<bool> quiet_info{false};
std::mutex log_mu;  // keeps lines whole when threads log at once
}  // namespace

void SetQuietInfo(bool quiet) { quiet_info = quiet; }

void LogLine(LogLevel level, std::string_view line) {
  if (level == LogLevel::kInfo && quiet_info) {
    return;
  }
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  const char* lvl = level == LogLevel::kInfo ? "info" : level == LogLevel::kWarn ? "warn" : "error";
  std::lock_guard lock(log_mu);
  std::fprintf(stderr, "%s %s %.*s\n", stamp, lvl, static_cast<int>(line.size()), line.data());
}

}  // namespace vgpu::manager

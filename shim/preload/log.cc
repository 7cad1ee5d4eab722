#include "log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace vgpu::shim {
namespace {

std::atomic<int> level{static_cast<int>(LogLevel::kWarn)};
std::atomic<uint32_t> slot{0};

}  // namespace

void SetLogLevel(LogLevel l, uint32_t slot_id) {
  level.store(static_cast<int>(l), std::memory_order_relaxed);
  slot.store(slot_id, std::memory_order_relaxed);
}

bool LogEnabled(LogLevel l) { return static_cast<int>(l) <= level.load(std::memory_order_relaxed); }

void Logf(LogLevel l, const char* fmt, ...) {
  if (!LogEnabled(l)) {
    return;
  }
  char buf[512];
  int n = snprintf(buf, sizeof buf, "vgpu-shim[%d] slot %u: ", static_cast<int>(getpid()),
                   slot.load(std::memory_order_relaxed));
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof buf - 2) {
    len = sizeof buf - 2;
  }
  buf[len++] = '\n';
  // One write: lines from several threads and processes never interleave.
  ssize_t w = write(STDERR_FILENO, buf, len);
  (void)w;
}

}  // namespace vgpu::shim

// What every latency benchmark here prints: per-call samples in microseconds summarized as
// min/p50/p99/max, and a process's memory from /proc/<pid>/status.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace vgpu::bench {

inline double Micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

struct Stats {
  double min, p50, p99, max;
};

inline Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return {v.front(), at(0.50), at(0.99), v.back()};
}

inline void Print(const char* what, const Stats& s) {
  std::printf("  %-44s min %8.1f us  p50 %8.1f us  p99 %8.1f us  max %8.1f us\n", what, s.min,
              s.p50, s.p99, s.max);
}

// A "VmRSS:"-style field of /proc/<pid>/status in KiB; -1 when absent.
inline long ProcStatusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      return std::stol(line.substr(std::string(field).size()));
    }
  }
  return -1;
}

}  // namespace vgpu::bench

// The metrics exporter: a sampler thread that pulls a NodeSnapshot from a StatsSource every
// sample period and renders it once, and an HTTP server that serves the last rendering on
// GET /metrics (scrapes never block on the manager's locks or the module).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "vgpu/metrics/prometheus_text.h"
#include "vgpu/metrics/stats_source.h"
#include "vgpu/status.h"

namespace httplib {
class Server;
}

namespace vgpu::metrics {

struct ExporterOptions {
  std::string node_name;                 // --hostname-override; labels every series
  std::string bind_address = "0.0.0.0";  // where --query-port listens
  int port = 0;                          // --query-port; 0 picks a free port (tests)
  std::chrono::milliseconds sample_period{std::chrono::seconds(5)};  // --sample-period
};

class MetricsExporter {
 public:
  MetricsExporter(ExporterOptions options, StatsSource& source);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  // Samples once (so the first scrape has data), binds the port, starts the sampler and server
  // threads. A failed first sample is not fatal (served as sample_failures_total); a failed bind
  // is.
  Status Start();
  // Idempotent; joins both threads.
  void Stop();

  int port() const { return bound_port_; }
  // Takes a snapshot now and re-renders (the sampler calls this; tests call it directly).
  Status SampleNow();
  std::string CurrentText() const;

 private:
  void SamplerLoop();

  const ExporterOptions options_;
  StatsSource& source_;
  std::unique_ptr<httplib::Server> server_;
  int bound_port_ = -1;

  mutable std::mutex mu_;  // guards text_, counters_, last_snapshot_, stopping_
  std::condition_variable wake_;
  std::string text_;
  ExporterCounters counters_;
  NodeSnapshot last_snapshot_;
  bool stopping_ = false;

  std::thread sampler_;
  std::thread http_;
};

}  // namespace vgpu::metrics

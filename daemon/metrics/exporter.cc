#include "vgpu/metrics/exporter.h"

#include <httplib.h>

#include <sys/socket.h>

#include <cstdio>

namespace vgpu::metrics {

MetricsExporter::MetricsExporter(ExporterOptions options, StatsSource& source)
    : options_(std::move(options)), source_(source), server_(std::make_unique<httplib::Server>()) {}

MetricsExporter::~MetricsExporter() { Stop(); }

Status MetricsExporter::SampleNow() {
  Result<NodeSnapshot> snapshot = source_.Snapshot();
  std::lock_guard<std::mutex> lock(mu_);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (snapshot.ok()) {
    ++counters_.samples;
    counters_.last_sample_unix_seconds = now;
    last_snapshot_ = std::move(snapshot).value();
  } else {
    // Keep serving the last good snapshot; the failure is visible as a counter.
    ++counters_.sample_failures;
  }
  text_ = RenderNodeMetrics(options_.node_name, last_snapshot_, counters_);
  return snapshot.ok() ? OkStatus() : snapshot.status().Annotate("metrics sample");
}

std::string MetricsExporter::CurrentText() const {
  std::lock_guard<std::mutex> lock(mu_);
  return text_;
}

Status MetricsExporter::Start() {
  if (options_.sample_period <= std::chrono::milliseconds(0)) {
    return InvalidArgumentError("--sample-period must be positive");
  }
  Status first = SampleNow();
  if (!first.ok()) {
    std::fprintf(stderr, "vgpu-metrics: level=warn msg=\"first sample failed\" error=\"%s\"\n",
                 first.ToString().c_str());
  }
  // cpp-httplib's default socket options add SO_REUSEPORT, which would let a second manager
  // (an old pod still terminating) share the port silently; keep SO_REUSEADDR only.
  server_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(CurrentText(), std::string(kExpositionContentType).c_str());
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  if (options_.port == 0) {
    bound_port_ = server_->bind_to_any_port(options_.bind_address.c_str());
  } else if (server_->bind_to_port(options_.bind_address.c_str(), options_.port)) {
    bound_port_ = options_.port;
  }
  if (bound_port_ <= 0) {
    bound_port_ = -1;
    return UnavailableError("--query-port: cannot listen on " + options_.bind_address + ":" +
                            std::to_string(options_.port));
  }
  http_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() is a no-op until the listen loop runs: wait for it, or a quick Stop()
  // would leave the thread blocked in accept() forever.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  sampler_ = std::thread([this] { SamplerLoop(); });
  return OkStatus();
}

void MetricsExporter::SamplerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (wake_.wait_for(lock, options_.sample_period, [this] { return stopping_; })) {
      break;
    }
    lock.unlock();
    Status s = SampleNow();
    if (!s.ok()) {
      std::fprintf(stderr, "vgpu-metrics: level=warn msg=\"sample failed\" error=\"%s\"\n",
                   s.ToString().c_str());
    }
    lock.lock();
  }
}

void MetricsExporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) {
    sampler_.join();
  }
  server_->stop();
  if (http_.joinable()) {
    http_.join();
  }
}

}  // namespace vgpu::metrics

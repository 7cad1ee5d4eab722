// Keeps the node's ResourceSlices in the API server equal to BuildSlices() of the current GPU
// health: lists the slices labelled with this node, creates the missing ones, replaces the
// ones that differ (PUT with their resourceVersion) and deletes the ones no longer wanted.
// Runs at start, on every manager change (health from daemon/health bumps the generation the
// thread waits on) and every resync period, which is what brings the slices back after the
// kubelet deleted them (it wipes a node's slices at its own start and after a plugin stayed
// away; docs/dra.md). The pool generation goes up whenever the content changes, starting above
// whatever a previous run left.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vgpu/dra/kube_client.h"
#include "vgpu/dra/slice_builder.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/status.h"

namespace vgpu::dra {

struct PublisherOptions {
  SliceOptions slices;
  std::chrono::milliseconds resync{std::chrono::seconds(10)};
};

class SlicePublisher {
 public:
  SlicePublisher(KubeApi& api, const manager::SlotManager& slots, PublisherOptions options);
  ~SlicePublisher();

  // One reconciliation pass; returns what it did as "created=N updated=N deleted=N".
  Result<std::string> SyncOnce();
  void Start();
  void Stop();
  // Passes that changed something in the API server, for tests and the log.
  uint64_t writes() const { return writes_; }

 private:
  void Run();
  Result<std::string> SyncLocked();
  Result<std::vector<nlohmann::json>> ListOurs();

  KubeApi& api_;
  const manager::SlotManager& slots_;
  PublisherOptions options_;
  std::mutex mu_;                // SyncOnce from the thread and from the caller
  nlohmann::json last_content_;  // desired slices without the generation
  int64_t generation_ = 0;       // 0: not yet chosen (first sync reads the server's)
  std::atomic<uint64_t> writes_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace vgpu::dra

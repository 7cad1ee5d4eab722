// Placement: which GPUs of a node a request lands on. This header is the contract between
// topology/ and the manager's allocator (daemon/): the allocator keeps one GpuLoad per GPU,
// asks an Evaluator for a Placement, and commits it.
//
// Evaluators (MakeEvaluator):
//   firstfit  lowest-indexed GPUs that fit; the baseline every other policy is measured against.
//   binpack   fill partly used GPUs first (best fit on the dominant resource, cores or memory,
//             after placement), so whole GPUs stay free: least fragmentation.
//   spread    least loaded GPU first: balances load, most headroom per pod.
//   topology  like binpack, but when a fresh GPU must be opened, take the one least connected to
//             the other free GPUs, keeping the best-linked free sets intact for multi-GPU pods.
//   memory    most free memory first.
// Every evaluator but firstfit gives a multi-GPU request the best-connected set that fits:
// first the best worst-pair link (LinkRank), then the best sum over pairs, then its own
// preference. The node config picks the evaluator (--placement). There is no per-pod override: a
// device plugin is not told which pod GetPreferredAllocation is for (device-plugin-api.md §2.6,
// §4), so reading a pod annotation there would mean guessing the pod, which the manager refuses
// to do (docs/design.md "Which container is this for?").
// Evaluators hold no state: Place is const and may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/status.h"
#include "vgpu/topology/fixture.h"
#include "vgpu/topology/topology.h"

namespace vgpu::topology {

// What is already on one GPU. The allocator keeps one per GPU, indexed like Topology::gpus().
struct GpuLoad {
  int cores_used = 0;        // 0..100, percent of the GPU's compute already granted
  uint64_t memory_used = 0;  // bytes already granted
  bool exclusive = false;    // held whole by one pod: nothing else may land on it
  bool healthy = true;       // an unhealthy GPU takes nothing
};

struct PlacementRequest {
  int gpu_count = 1;          // how many GPUs, each getting the share below
  int cores = 100;            // per GPU, 1..100 (ignored when whole_gpu)
  uint64_t memory_bytes = 0;  // per GPU (ignored when whole_gpu)
  bool whole_gpu = false;     // exclusive use: only entirely free GPUs qualify
};

struct Placement {
  std::vector<int> gpus;  // GPU indexes, ascending
  double score = 0;       // evaluator-specific, higher is better; for logs and comparisons
  // Worst link between any two chosen GPUs (kSelf for one GPU) and its rank (LinkRank).
  LinkLevel worst_link = LinkLevel::kSelf;
  int worst_link_rank = 0;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string_view Name() const = 0;
  // loads[i] is the load of topology.gpu(i). Errors: InvalidArgument for a malformed request or
  // a loads/topology size mismatch; ResourceExhausted when no set of GPUs fits.
  virtual Result<Placement> Place(const Topology& topology, std::span<const GpuLoad> loads,
                                  const PlacementRequest& request) const = 0;
};

// "binpack", "spread", "topology", "memory", "firstfit". Unknown name: InvalidArgument naming it
// and listing the known ones.
Result<std::unique_ptr<Evaluator>> MakeEvaluator(std::string_view name);
// The names MakeEvaluator knows, in the order above.
std::span<const std::string_view> EvaluatorNames();

// Checks the request on its own and against the topology/loads sizes.
Status ValidateRequest(const Topology& topology, std::span<const GpuLoad> loads,
                       const PlacementRequest& request);
// Whether one GPU can take one per-GPU share of the request.
bool Fits(const Gpu& gpu, const GpuLoad& load, const PlacementRequest& request);
// Adds a placed request to loads (what the allocator does on commit; the simulator uses it too).
void Apply(const Topology& topology, std::span<GpuLoad> loads, const PlacementRequest& request,
           std::span<const int> gpus);
// Undoes Apply (a pod leaving).
void Release(const Topology& topology, std::span<GpuLoad> loads, const PlacementRequest& request,
             std::span<const int> gpus);

// Link quality of a set of GPUs: the worst pair's rank, then the sum of all pairs' ranks. A set
// of one GPU has worst = LinkRankOf(kSelf, 0) and sum 0.
struct SetLinkQuality {
  int worst_rank = 0;
  int64_t rank_sum = 0;
  auto operator<=>(const SetLinkQuality&) const = default;
};
SetLinkQuality LinkQuality(const Topology& topology, std::span<const int> gpus);

}  // namespace vgpu::topology

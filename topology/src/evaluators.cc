// The evaluators. All but firstfit share one search: filter the GPUs that fit, then
//  - one GPU: the GPU the evaluator prefers most;
//  - several GPUs: the set with the best worst-pair link, then the best sum of pair links, then
//    the highest sum of the evaluator's per-GPU preference, then the lowest indexes.
// The multi-GPU search walks link thresholds from best to worst and looks for a clique of
// gpu_count GPUs whose pairs all reach the threshold (the first threshold with one is the optimal
// worst link), then enumerates the cliques at that threshold for the rest of the order. Pairs
// under the threshold prune whole subtrees, so a busy or badly linked machine costs little.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "vgpu/topology/placement.h"

namespace vgpu::topology {
namespace {

// Past this many search steps the best set found so far is returned (only reachable on machines
// far beyond 8 GPUs with huge cliques, e.g. 64 GPUs on one NVSwitch fabric asking for 32).
constexpr int64_t kMaxSearchSteps = 2'000'000;

double UsedFraction(const Gpu& gpu, const GpuLoad& load) {
  double memory = gpu.memory_bytes == 0 ? 0.0
                                        : static_cast<double>(load.memory_used) /
                                              static_cast<double>(gpu.memory_bytes);
  return load.cores_used / 100.0 + std::min(memory, 1.0);
}

bool EntirelyFree(const GpuLoad& load) {
  return load.healthy && !load.exclusive && load.cores_used == 0 && load.memory_used == 0;
}

// A per-GPU preference, higher is better. Called only for GPUs that fit.
using PreferenceFn =
    std::function<double(const Topology&, std::span<const GpuLoad>, int, const PlacementRequest&)>;

class MultiGpuSearch {
 public:
  MultiGpuSearch(const Topology& topology, std::vector<int> candidates,
                 std::vector<double> preference, int count)
      : topology_(topology),
        candidates_(std::move(candidates)),
        preference_(std::move(preference)),
        count_(count) {}

  // Returns positions into candidates, or empty when no set exists.
  std::vector<int> Run() {
    std::set<int, std::greater<>> thresholds;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      for (size_t j = i + 1; j < candidates_.size(); ++j) {
        thresholds.insert(topology_.LinkRank(candidates_[i], candidates_[j]));
      }
    }
    for (int threshold : thresholds) {
      threshold_ = threshold;
      best_.clear();
      chosen_.clear();
      Walk(0, 0, 0.0);
      if (!best_.empty()) {
        return best_;
      }
    }
    return {};
  }

 private:
  void Walk(size_t from, int64_t rank_sum, double preference) {
    if (static_cast<int>(chosen_.size()) == count_) {
      if (best_.empty() || rank_sum > best_rank_sum_ ||
          (rank_sum == best_rank_sum_ && preference > best_preference_)) {
        best_ = chosen_;
        best_rank_sum_ = rank_sum;
        best_preference_ = preference;
      }
      return;
    }
    for (size_t i = from; i < candidates_.size(); ++i) {
      if (candidates_.size() - i < static_cast<size_t>(count_) - chosen_.size()) {
        return;
      }
      if (++steps_ > kMaxSearchSteps && !best_.empty()) {
        return;
      }
      int gpu = candidates_[i];
      int64_t added = 0;
      bool ok = true;
      for (int position : chosen_) {
        int rank = topology_.LinkRank(candidates_[position], gpu);
        if (rank < threshold_) {
          ok = false;
          break;
        }
        added += rank;
      }
      if (!ok) {
        continue;
      }
      chosen_.push_back(static_cast<int>(i));
      Walk(i + 1, rank_sum + added, preference + preference_[i]);
      chosen_.pop_back();
    }
  }

  const Topology& topology_;
  std::vector<int> candidates_;
  std::vector<double> preference_;
  int count_;
  int threshold_ = 0;
  int64_t steps_ = 0;
  std::vector<int> chosen_;
  std::vector<int> best_;
  int64_t best_rank_sum_ = 0;
  double best_preference_ = 0;
};

Placement MakePlacement(const Topology& topology, std::vector<int> gpus, double score) {
  std::sort(gpus.begin(), gpus.end());
  Placement placement;
  SetLinkQuality quality = LinkQuality(topology, gpus);
  placement.worst_link_rank = quality.worst_rank;
  placement.worst_link = LinkLevel::kSelf;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      if (topology.LinkRank(gpus[i], gpus[j]) == quality.worst_rank) {
        placement.worst_link = topology.Link(gpus[i], gpus[j]);
      }
    }
  }
  placement.gpus = std::move(gpus);
  placement.score = score;
  return placement;
}

Status NoFit(const PlacementRequest& request, size_t fitting) {
  std::string what = request.whole_gpu ? std::string("whole GPU")
                                       : std::to_string(request.cores) + "% cores and " +
                                             std::to_string(request.memory_bytes) + " bytes";
  return ResourceExhaustedError("placement: " + std::to_string(request.gpu_count) + " x " + what +
                                " requested, " + std::to_string(fitting) + " GPU(s) fit");
}

class ScoringEvaluator final : public Evaluator {
 public:
  ScoringEvaluator(std::string_view name, PreferenceFn preference, bool link_aware)
      : name_(name), preference_(std::move(preference)), link_aware_(link_aware) {}

  std::string_view Name() const override { return name_; }

  Result<Placement> Place(const Topology& topology, std::span<const GpuLoad> loads,
                          const PlacementRequest& request) const override {
    VGPU_RETURN_IF_ERROR(ValidateRequest(topology, loads, request));
    std::vector<int> candidates;
    for (int i = 0; i < topology.size(); ++i) {
      if (Fits(topology.gpu(i), loads[i], request)) {
        candidates.push_back(i);
      }
    }
    if (candidates.size() < static_cast<size_t>(request.gpu_count)) {
      return NoFit(request, candidates.size());
    }
    if (!link_aware_) {  // firstfit: the lowest indexes, nothing else considered
      candidates.resize(request.gpu_count);
      return MakePlacement(topology, std::move(candidates), 0.0);
    }
    std::vector<double> preference;
    preference.reserve(candidates.size());
    for (int gpu : candidates) {
      preference.push_back(preference_(topology, loads, gpu, request));
    }
    if (request.gpu_count == 1) {
      size_t best = 0;
      for (size_t i = 1; i < candidates.size(); ++i) {
        if (preference[i] > preference[best]) {
          best = i;
        }
      }
      return MakePlacement(topology, {candidates[best]}, preference[best]);
    }
    MultiGpuSearch search(topology, candidates, preference, request.gpu_count);
    std::vector<int> positions = search.Run();
    if (positions.empty()) {  // cannot happen: any gpu_count candidates form a clique at the
      return NoFit(request, candidates.size());  // worst threshold; kept as a guard
    }
    std::vector<int> gpus;
    double score = 0;
    for (int position : positions) {
      gpus.push_back(candidates[position]);
      score += preference[position];
    }
    return MakePlacement(topology, std::move(gpus), score);
  }

 private:
  std::string name_;
  PreferenceFn preference_;
  bool link_aware_;
};

// binpack: the fullest GPU that still fits, so partly used GPUs fill up before a free one is
// opened and whole GPUs stay available.
double BinpackPreference(const Topology& topology, std::span<const GpuLoad> loads, int gpu,
                         const PlacementRequest& request) {
  // Best fit on the dominant resource: the GPU whose fuller dimension (cores or memory) is
  // fullest once the pod is on it, i.e. the least capacity left stranded.
  const Gpu& g = topology.gpu(gpu);
  const GpuLoad& load = loads[gpu];
  double cores = (load.cores_used + (request.whole_gpu ? 100 : request.cores)) / 100.0;
  double memory = g.memory_bytes == 0
                      ? 0.0
                      : static_cast<double>(load.memory_used + request.memory_bytes) /
                            static_cast<double>(g.memory_bytes);
  return std::max(cores, memory) + 1e-3 * std::min(cores, memory);
}

// spread: the emptiest GPU.
double SpreadPreference(const Topology& topology, std::span<const GpuLoad> loads, int gpu,
                        const PlacementRequest&) {
  return -UsedFraction(topology.gpu(gpu), loads[gpu]);
}

// memory: the most free memory, in GiB so scores stay readable.
double MemoryPreference(const Topology& topology, std::span<const GpuLoad> loads, int gpu,
                        const PlacementRequest&) {
  uint64_t total = topology.gpu(gpu).memory_bytes;
  uint64_t used = std::min(loads[gpu].memory_used, total);
  return static_cast<double>(total - used) / (1024.0 * 1024.0 * 1024.0);
}

// topology: binpack first (a partly used GPU costs no free GPU). When a free GPU must be opened,
// the one with the weakest links to the other free GPUs, so the best-linked free sets survive
// for multi-GPU pods.
double TopologyPreference(const Topology& topology, std::span<const GpuLoad> loads, int gpu,
                          const PlacementRequest& request) {
  if (UsedFraction(topology.gpu(gpu), loads[gpu]) > 0) {
    return 10.0 + BinpackPreference(topology, loads, gpu, request);
  }
  double connectivity = 0;
  for (int other = 0; other < topology.size(); ++other) {
    if (other != gpu && EntirelyFree(loads[other])) {
      connectivity += topology.LinkRank(gpu, other);
    }
  }
  // In (-1, 0]: below any partly used GPU, ordered by connectivity.
  return -connectivity / (static_cast<double>(topology.size()) * 1001.0);
}

double NoPreference(const Topology&, std::span<const GpuLoad>, int, const PlacementRequest&) {
  return 0.0;
}

constexpr std::array<std::string_view, 5> kEvaluatorNames = {"binpack", "spread", "topology",
                                                             "memory", "firstfit"};

}  // namespace

std::span<const std::string_view> EvaluatorNames() { return kEvaluatorNames; }

Result<std::unique_ptr<Evaluator>> MakeEvaluator(std::string_view name) {
  std::unique_ptr<Evaluator> evaluator;
  if (name == "binpack") {
    evaluator = std::make_unique<ScoringEvaluator>(name, BinpackPreference, true);
  } else if (name == "spread") {
    evaluator = std::make_unique<ScoringEvaluator>(name, SpreadPreference, true);
  } else if (name == "topology") {
    evaluator = std::make_unique<ScoringEvaluator>(name, TopologyPreference, true);
  } else if (name == "memory") {
    evaluator = std::make_unique<ScoringEvaluator>(name, MemoryPreference, true);
  } else if (name == "firstfit") {
    evaluator = std::make_unique<ScoringEvaluator>(name, NoPreference, false);
  } else {
    std::string names;
    for (std::string_view known : kEvaluatorNames) {
      names += names.empty() ? "" : "|";
      names += known;
    }
    return InvalidArgumentError("placement: unknown evaluator \"" + std::string(name) +
                                "\" (known: " + names + ")");
  }
  return evaluator;
}

}  // namespace vgpu::topology

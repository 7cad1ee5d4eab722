// Placement simulator: replays a stream of pod requests (arrivals and departures) against one
// machine and one evaluator, and measures what the policy did to the machine.
//
// The standard stream (StandardStream) is the yardstick the evaluators are compared on:
//   seed 20260707, 3000 requests, Poisson arrivals, offered load 1.1 x the machine's cores;
//   65 % fractional single-GPU pods: cores uniform in {10, 20, 25, 30, 40, 50} %, memory that
//        share of the (smallest) GPU's memory times a factor uniform in [0.5, 1.5);
//   25 % whole single-GPU pods;
//   10 % whole multi-GPU pods of 2 or 4 GPUs (even odds; capped at the machine's GPU count);
//   lifetimes uniform in [50, 150] time units for every kind.
// A pod that does not fit when it arrives is rejected (counted by kind), not queued.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vgpu/topology/placement.h"

namespace vgpu::topology::sim {

enum class Kind { kFractional = 0, kWholeSingle = 1, kWholeMulti = 2 };
inline constexpr int kKinds = 3;
const char* KindName(Kind kind);

struct SimRequest {
  Kind kind = Kind::kFractional;
  PlacementRequest request;
  double arrival = 0;   // time units
  double duration = 0;  // time units
};

struct StreamSpec {
  uint32_t seed = 20260707;
  int requests = 3000;
  double offered_load = 1.1;  // mean demanded cores / machine cores
  double fractional_share = 0.65;
  double whole_single_share = 0.25;  // the rest is whole multi-GPU
  double min_duration = 50;
  double max_duration = 150;
};

// Deterministic for a given spec and machine (own generator, no std distributions).
std::vector<SimRequest> MakeStream(const Topology& topology, const StreamSpec& spec);
inline std::vector<SimRequest> StandardStream(const Topology& topology) {
  return MakeStream(topology, StreamSpec{});
}

struct SimReport {
  std::string evaluator;
  std::array<int, kKinds> arrived{};
  std::array<int, kKinds> rejected{};
  double utilisation = 0;    // time-weighted mean of granted cores / machine cores
  double fragmentation = 0;  // time-weighted mean share of free cores stranded on partly used GPUs
  double free_whole_gpus = 0;  // time-weighted mean count of entirely free GPUs
  // Multi-GPU placements: how many, how many at the best link the free GPUs allowed at that
  // moment (exhaustive check), and a histogram of their worst link ("NV12", "PXB", ...).
  // Whole-GPU requests rejected although the free cores on the machine added up to enough: the
  // rejections fragmentation caused, as opposed to a full machine.
  int whole_rejected_with_room = 0;
  int multi_placed = 0;
  int multi_at_optimum = 0;
  std::map<std::string, int> multi_worst_link;
  std::vector<double> decision_ns;  // one per Place call, when timing was asked for

  int WholeRejected() const {
    return rejected[static_cast<int>(Kind::kWholeSingle)] +
           rejected[static_cast<int>(Kind::kWholeMulti)];
  }
  int TotalRejected() const { return rejected[0] + rejected[1] + rejected[2]; }
};

struct SimOptions {
  bool time_decisions = false;     // fill SimReport::decision_ns
  bool check_link_optimum = true;  // exhaustive check per multi-GPU placement (<= 20 GPUs)
};

SimReport Simulate(const Topology& topology, const Evaluator& evaluator,
                   const std::vector<SimRequest>& stream, const SimOptions& options = {});

// A table, one row per report: arrivals/rejections by kind, utilisation, fragmentation, free
// whole GPUs, multi-GPU link quality; plus each row's whole-GPU rejections against the row named
// `baseline` (e.g. "binpack: 12 fewer whole-GPU rejections than firstfit (-40 %)").
std::string FormatReports(const std::string& title, const std::vector<SimReport>& reports,
                          const std::string& baseline);

}  // namespace vgpu::topology::sim

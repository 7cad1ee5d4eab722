#include "simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <queue>

#include "brute_force_oracle.h"

namespace vgpu::topology::sim {
namespace {

// splitmix64: tiny, fast, and the same sequence on every standard library (std::*_distribution
// is not specified bit-for-bit, so a stream built from it could differ between machines).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int Pick(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

constexpr int kFractionalCores[] = {10, 20, 25, 30, 40, 50};

struct Running {
  double departure;
  int request;
  std::vector<int> gpus;
  bool operator>(const Running& other) const {
    return departure != other.departure ? departure > other.departure : request > other.request;
  }
};

std::string WorstLinkLabel(const Topology& topology, const std::vector<int>& gpus) {
  int worst_rank = LinkQuality(topology, gpus).worst_rank;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      if (topology.LinkRank(gpus[i], gpus[j]) == worst_rank) {
        return topology.LinkLabel(gpus[i], gpus[j]);
      }
    }
  }
  return "X";
}

}  // namespace

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kFractional:
      return "fractional";
    case Kind::kWholeSingle:
      return "whole-1";
    case Kind::kWholeMulti:
      return "whole-N";
  }
  return "?";
}

std::vector<SimRequest> MakeStream(const Topology& topology, const StreamSpec& spec) {
  std::vector<SimRequest> stream;
  const int n = topology.size();
  if (n == 0) {
    return stream;
  }
  uint64_t min_memory = topology.gpu(0).memory_bytes;
  for (const Gpu& gpu : topology.gpus()) {
    min_memory = std::min(min_memory, gpu.memory_bytes);
  }
  const int multi_small = std::min(2, n);
  const int multi_large = std::min(4, n);
  double mean_fractional = 0;
  for (int cores : kFractionalCores) {
    mean_fractional += cores;
  }
  mean_fractional /= std::size(kFractionalCores);
  const double multi_share = 1.0 - spec.fractional_share - spec.whole_single_share;
  const double mean_cores = spec.fractional_share * mean_fractional +
                            spec.whole_single_share * 100.0 +
                            multi_share * 100.0 * (multi_small + multi_large) / 2.0;
  const double mean_duration = (spec.min_duration + spec.max_duration) / 2.0;
  // Arrival rate that makes mean demanded cores = offered_load x capacity (Little's law).
  const double rate = spec.offered_load * n * 100.0 / (mean_cores * mean_duration);

  Rng rng(spec.seed);
  double now = 0;
  for (int i = 0; i < spec.requests; ++i) {
    now += -std::log(1.0 - rng.Uniform()) / rate;
    SimRequest r;
    r.arrival = now;
    r.duration = spec.min_duration + (spec.max_duration - spec.min_duration) * rng.Uniform();
    double kind = rng.Uniform();
    if (kind < spec.fractional_share) {
      r.kind = Kind::kFractional;
      int cores = kFractionalCores[rng.Pick(std::size(kFractionalCores))];
      // Memory follows the core share, scaled by 0.5..1.5: pods are rarely exactly balanced.
      double scale = 0.5 + rng.Uniform();
      double share = std::min(1.0, cores / 100.0 * scale);
      r.request = {.gpu_count = 1,
                   .cores = cores,
                   .memory_bytes = static_cast<uint64_t>(share * static_cast<double>(min_memory))};
    } else if (kind < spec.fractional_share + spec.whole_single_share) {
      r.kind = Kind::kWholeSingle;
      r.request = {.gpu_count = 1, .whole_gpu = true};
    } else {
      int count = rng.Pick(2) == 0 ? multi_small : multi_large;
      r.kind = count > 1 ? Kind::kWholeMulti : Kind::kWholeSingle;
      r.request = {.gpu_count = count, .whole_gpu = true};
    }
    stream.push_back(r);
  }
  return stream;
}

SimReport Simulate(const Topology& topology, const Evaluator& evaluator,
                   const std::vector<SimRequest>& stream, const SimOptions& options) {
  SimReport report;
  report.evaluator = std::string(evaluator.Name());
  const int n = topology.size();
  std::vector<GpuLoad> loads(n);
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  const bool check_optimum = options.check_link_optimum && n <= 20;

  double last = stream.empty() ? 0 : stream.front().arrival;
  double span = 0;
  // Integrates the time-weighted metrics of the current state up to `until`.
  auto advance = [&](double until) {
    double dt = until - last;
    if (dt <= 0) {
      return;
    }
    int granted = 0;
    int free_cores = 0;
    int stranded = 0;
    int whole_free = 0;
    for (const GpuLoad& load : loads) {
      granted += load.cores_used;
      if (!load.healthy || load.exclusive) {
        continue;
      }
      int free = 100 - load.cores_used;
      free_cores += free;
      if (load.cores_used > 0 || load.memory_used > 0) {
        stranded += free;
      } else {
        ++whole_free;
      }
    }
    report.utilisation += dt * granted / (100.0 * n);
    report.fragmentation += dt * (free_cores > 0 ? static_cast<double>(stranded) / free_cores : 0);
    report.free_whole_gpus += dt * whole_free;
    span += dt;
    last = until;
  };

  for (size_t i = 0; i < stream.size(); ++i) {
    const SimRequest& r = stream[i];
    while (!running.empty() && running.top().departure <= r.arrival) {
      advance(running.top().departure);
      Release(topology, loads, stream[running.top().request].request, running.top().gpus);
      running.pop();
    }
    advance(r.arrival);
    const int kind = static_cast<int>(r.kind);
    report.arrived[kind]++;

    std::optional<int> best_rank;
    if (check_optimum && r.request.gpu_count > 1) {
      if (std::optional<SetLinkQuality> best = BruteForceBest(topology, loads, r.request)) {
        best_rank = best->worst_rank;
      }
    }
    auto start = std::chrono::steady_clock::now();
    Result<Placement> placement = evaluator.Place(topology, loads, r.request);
    auto stop = std::chrono::steady_clock::now();
    if (options.time_decisions) {
      report.decision_ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
    }
    if (!placement.ok()) {
      report.rejected[kind]++;
      if (r.request.whole_gpu) {
        int free_cores = 0;
        for (const GpuLoad& load : loads) {
          free_cores += load.healthy && !load.exclusive ? 100 - load.cores_used : 0;
        }
        report.whole_rejected_with_room += free_cores >= 100 * r.request.gpu_count ? 1 : 0;
      }
      continue;
    }
    Apply(topology, loads, r.request, placement->gpus);
    running.push({r.arrival + r.duration, static_cast<int>(i), placement->gpus});
    if (r.request.gpu_count > 1) {
      report.multi_placed++;
      report.multi_worst_link[WorstLinkLabel(topology, placement->gpus)]++;
      if (best_rank && placement->worst_link_rank == *best_rank) {
        report.multi_at_optimum++;
      }
    }
  }
  if (span > 0) {
    report.utilisation /= span;
    report.fragmentation /= span;
    report.free_whole_gpus /= span;
  }
  return report;
}

std::string FormatReports(const std::string& title, const std::vector<SimReport>& reports,
                          const std::string& baseline) {
  std::string out = title + "\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-9s %13s %13s %13s %9s %6s %6s %6s %12s  %s\n", "evaluator",
                "fractional", "whole-1", "whole-N", "whole rej", "util%", "frag%", "freeG",
                "multi@best", "multi worst links");
  out += line;
  std::snprintf(line, sizeof(line), "%-9s %13s %13s %13s %9s\n", "", "rejected/arr", "rejected/arr",
                "rejected/arr", "w/ room");
  out += line;
  const SimReport* base = nullptr;
  for (const SimReport& r : reports) {
    if (r.evaluator == baseline) {
      base = &r;
    }
    auto cell = [&r](int kind) {
      return std::to_string(r.rejected[kind]) + "/" + std::to_string(r.arrived[kind]);
    };
    std::string links;
    for (const auto& [label, count] : r.multi_worst_link) {
      links += (links.empty() ? "" : " ") + label + ":" + std::to_string(count);
    }
    std::string at_best = std::to_string(r.multi_at_optimum) + "/" + std::to_string(r.multi_placed);
    std::snprintf(line, sizeof(line), "%-9s %13s %13s %13s %9d %6.1f %6.1f %6.2f %12s  %s\n",
                  r.evaluator.c_str(), cell(0).c_str(), cell(1).c_str(), cell(2).c_str(),
                  r.whole_rejected_with_room, 100 * r.utilisation, 100 * r.fragmentation,
                  r.free_whole_gpus, at_best.c_str(), links.empty() ? "-" : links.c_str());
    out += line;
  }
  if (base != nullptr) {
    for (const SimReport& r : reports) {
      if (&r == base) {
        continue;
      }
      int diff = base->WholeRejected() - r.WholeRejected();
      double pct = base->WholeRejected() > 0 ? 100.0 * diff / base->WholeRejected() : 0.0;
      std::snprintf(line, sizeof(line),
                    "  %-9s whole-GPU rejections %4d vs %s %4d: %+d (%s%.1f %%); of them with "
                    "enough free cores (fragmentation) %d vs %d; all rejections %d vs %d\n",
                    r.evaluator.c_str(), r.WholeRejected(), baseline.c_str(), base->WholeRejected(),
                    -diff, diff > 0 ? "-" : "+", std::abs(pct), r.whole_rejected_with_room,
                    base->whole_rejected_with_room, r.TotalRejected(), base->TotalRejected());
      out += line;
    }
  }
  return out;
}

}  // namespace vgpu::topology::sim

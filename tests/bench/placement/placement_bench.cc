// Placement bench (CTest label "bench"): the simulator's standard stream on every committed
// machine shape, for each evaluator, as a table against firstfit; then the decision latency of
// each evaluator on the 8-GPU shapes, in interleaved rounds, with p50/p99 as min and median over
// rounds and the ratio to firstfit measured in the same run. Printed, never asserted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "simulator.h"

namespace vgpu::topology::sim {
namespace {

const char* const kMachines[] = {"dgx-h100-8gpu-nvswitch.json",
                                 "pcie-8gpu-2socket-nvlink-pairs.json", "pcie-4gpu-2socket.json",
                                 "single-gpu.json"};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * (values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

double Median(std::vector<double> values) { return Percentile(std::move(values), 0.5); }
double Min(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::min_element(values.begin(), values.end());
}

// The search's worst case: every multi-GPU size on an empty 8-GPU machine (most candidate sets),
// 100 decisions per size and round, rounds interleaved across evaluators.
void WorstCase(const std::vector<std::unique_ptr<Evaluator>>& evaluators, int rounds) {
  for (const char* machine : {kMachines[0], kMachines[1]}) {
    Result<Topology> topology = LoadFixture(std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + machine);
    if (!topology.ok()) {
      return;
    }
    std::vector<GpuLoad> empty(topology->size());
    std::printf(
        "%s, empty machine, whole-GPU requests of 2..%d GPUs (us per decision)\n  %-9s "
        "%17s %17s\n",
        machine, topology->size(), "evaluator", "p50 min/med", "p99 min/med");
    std::map<std::string, std::vector<double>> p50s, p99s;
    for (int round = 0; round < rounds; ++round) {
      for (const auto& evaluator : evaluators) {
        std::vector<double> ns;
        for (int count = 2; count <= topology->size(); ++count) {
          PlacementRequest request{.gpu_count = count, .whole_gpu = true};
          for (int i = 0; i < 100; ++i) {
            auto start = std::chrono::steady_clock::now();
            Result<Placement> placement = evaluator->Place(*topology, empty, request);
            auto stop = std::chrono::steady_clock::now();
            if (!placement.ok()) {
              std::fprintf(stderr, "unexpected: %s\n", placement.status().ToString().c_str());
              return;
            }
            ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
          }
        }
        std::string name(evaluator->Name());
        p50s[name].push_back(Percentile(ns, 0.50) / 1000);
        p99s[name].push_back(Percentile(ns, 0.99) / 1000);
      }
    }
    for (const auto& evaluator : evaluators) {
      std::string name(evaluator->Name());
      std::printf("  %-9s %8.2f/%8.2f %8.2f/%8.2f\n", name.c_str(), Min(p50s[name]),
                  Median(p50s[name]), Min(p99s[name]), Median(p99s[name]));
    }
  }
}

int Run(int rounds) {
  std::vector<std::unique_ptr<Evaluator>> evaluators;
  for (std::string_view name : EvaluatorNames()) {
    Result<std::unique_ptr<Evaluator>> evaluator = MakeEvaluator(name);
    if (!evaluator.ok()) {
      std::fprintf(stderr, "%s\n", evaluator.status().ToString().c_str());
      return 1;
    }
    evaluators.push_back(std::move(*evaluator));
  }
  std::printf("standard stream: seed %u, %d requests, offered load %.2f x cores\n\n",
              StreamSpec{}.seed, StreamSpec{}.requests, StreamSpec{}.offered_load);
  for (const char* machine : kMachines) {
    Result<Topology> topology = LoadFixture(std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + machine);
    if (!topology.ok()) {
      std::fprintf(stderr, "%s\n", topology.status().ToString().c_str());
      return 1;
    }
    std::vector<SimRequest> stream = StandardStream(*topology);
    std::vector<SimReport> reports;
    for (const auto& evaluator : evaluators) {
      reports.push_back(Simulate(*topology, *evaluator, stream));
    }
    std::printf("%s\n", FormatReports(std::string(machine) + " (" +
                                          std::to_string(topology->size()) + " GPUs)",
                                      reports, "firstfit")
                            .c_str());
  }

  std::printf(
      "decision latency, standard stream, %d interleaved rounds (us; min / median over "
      "rounds; ratio = median p99 / firstfit's)\n",
      rounds);
  for (const char* machine : {kMachines[0], kMachines[1]}) {
    Result<Topology> topology = LoadFixture(std::string(VGPU_TOPOLOGY_FIXTURES) + "/" + machine);
    if (!topology.ok()) {
      return 1;
    }
    std::vector<SimRequest> stream = StandardStream(*topology);
    std::map<std::string, std::vector<double>> p50s, p99s, maxes;
    SimOptions options{.time_decisions = true, .check_link_optimum = false};
    for (int round = 0; round < rounds; ++round) {
      for (const auto& evaluator : evaluators) {
        SimReport report = Simulate(*topology, *evaluator, stream, options);
        std::string name(evaluator->Name());
        p50s[name].push_back(Percentile(report.decision_ns, 0.50) / 1000);
        p99s[name].push_back(Percentile(report.decision_ns, 0.99) / 1000);
        maxes[name].push_back(Percentile(report.decision_ns, 1.0) / 1000);
      }
    }
    std::printf("%s\n  %-9s %17s %17s %10s %9s %s\n", machine, "evaluator", "p50 min/med",
                "p99 min/med", "max med", "p99 ratio", "p99 <= 1 ms");
    double base = Median(p99s["firstfit"]);
    for (const auto& evaluator : evaluators) {
      std::string name(evaluator->Name());
      double p99 = Median(p99s[name]);
      std::printf("  %-9s %8.2f/%8.2f %8.2f/%8.2f %10.2f %9.2f %s\n", name.c_str(), Min(p50s[name]),
                  Median(p50s[name]), Min(p99s[name]), p99, Median(maxes[name]),
                  base > 0 ? p99 / base : 0.0, p99 <= 1000 ? "yes" : "NO");
    }
  }
  WorstCase(evaluators, rounds);
  return 0;
}

}  // namespace
}  // namespace vgpu::topology::sim

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  return vgpu::topology::sim::Run(rounds > 0 ? rounds : 5);
}

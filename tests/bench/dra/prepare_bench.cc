// NodePrepareResources latency and memory of vgpu-manager --kubelet-api=dra on an 8-GPU node
// (the DGX H100 fixture), measured as the kubelet sees them.
//
// The real manager binary (shim backend: one slot directory and config file per slot; checkpoint
// journal written before the answer and group-committed with fdatasync after it) talks to the
// fake API server on
// 127.0.0.1 (one GET per claim) and the fake kubelet calls it over the real unix socket. Each
// run prepares 1000 claims of one share each (1 GiB, 1 % of a GPU, spread over the 8 GPUs) and
// unprepares each claim 400 claims later, so ~400 slots are live while it is measured (a GPU
// holds at most 100 one-percent shares). Every prepare is interleaved with the baseline: a
// NodePrepareResources with no claims on the same socket, a gRPC round trip that does no work.
// Three runs; per run and over all, p50/p99 of both and the ratios of min and median, and the
// p99 difference (target <= 2 ms). RSS (VmRSS and the peak VmHWM) from /proc at the end
// (target <= 40 MiB). No timed assertions: the numbers go to docs/results/dra.md.
//
// Usage: dra_prepare_bench [CHECKPOINT_PARENT [RUN_PARENT]] (defaults /tmp and /dev/shm). The
// layout of a node (docs/operator-guide.md): the checkpoint, which must survive a reboot, on
// the disk; the slot directories and ledgers (--slot-path, /run/vgpu-manager) and the CDI specs
// (/var/run/cdi), which start-up rebuilds from the checkpoint, on a tmpfs. Both parents the same
// directory puts everything there (the layout before slot dirs moved to /run).
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "fake_api_server.h"
#include "fake_dra_kubelet.h"
#include "manager_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using vgpu::testing::ClaimId;

constexpr int kClaims = 1000;
constexpr int kLive = 400;
constexpr int kRuns = 3;
constexpr int kGpus = 8;
constexpr const char* kDriver = "gpu.vgpu.io";
constexpr const char* kNode = "bench-node";

using vgpu::bench::Micros;
using vgpu::bench::Print;
using vgpu::bench::Stats;
using vgpu::bench::Summarize;

void Compare(const char* title, const std::vector<double>& prep, const std::vector<double>& base) {
  Stats p = Summarize(prep), b = Summarize(base);
  std::printf("%s (%zu pairs)\n", title, prep.size());
  Print("NodePrepareResources (1 claim)", p);
  Print("baseline: empty NodePrepareResources", b);
  std::printf("  ratio prepare/baseline: min %.2f  median %.2f\n", p.min / b.min, p.p50 / b.p50);
  std::printf("  prepare minus baseline: p50 %.1f us  p99 %.1f us (target p99 <= 2000 us)\n",
              p.p50 - b.p50, p.p99 - b.p99);
}

}  // namespace

std::string MakeTempDir(const std::string& parent) {
  std::string tmpl = parent + "/vgpu-dra-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror(tmpl.c_str());
    std::exit(1);
  }
  return tmpl;
}

int main(int argc, char** argv) {
  const std::string checkpoint_dir = MakeTempDir(argc > 1 ? argv[1] : "/tmp");
  const std::string dir = MakeTempDir(argc > 2 ? argv[2] : "/dev/shm");
  vgpu::testing::FakeApiServer api;
  api.WriteKubeconfig(dir + "/kubeconfig");
  vgpu::testing::ManagerProcess manager(VGPU_MANAGER_BIN, dir);
  manager.set_fixture(VGPU_BENCH_FIXTURE);
  if (!manager.Start({"--kubelet-api=dra", "--kubelet-dir=" + dir + "/kubelet",
                      "--kubeconfig=" + dir + "/kubeconfig",
                      "--hostname-override=" + std::string(kNode), "--cdi-spec-dir=" + dir + "/cdi",
                      "--checkpoint-path=" + checkpoint_dir})) {
    std::fprintf(stderr, "manager did not start; log: %s\n", manager.LogFile().c_str());
    return 1;
  }
  vgpu::testing::FakeDraKubelet kubelet(dir + "/kubelet");
  if (!kubelet.Register(kDriver, std::chrono::seconds(10))) {
    std::fprintf(stderr, "no registration\n");
    return 1;
  }
  std::printf(
      "dra_prepare_bench: vgpu-manager --kubelet-api=dra, shim backend, %d GPUs "
      "(dgx-h100-8gpu-nvswitch.json), %d claims per run, %d live, %d runs, checkpoint in %s, "
      "slot dirs and CDI specs in %s\n",
      kGpus, kClaims, kLive, kRuns, checkpoint_dir.c_str(), dir.c_str());
  std::vector<double> all_prep, all_base;
  int failures = 0;
  for (int run = 0; run < kRuns; ++run) {
    std::vector<double> prep, base;
    auto uid = [&](int i) { return "r" + std::to_string(run) + "-c" + std::to_string(i); };
    for (int i = 0; i < kClaims; ++i) {
      json results = json::array({{{"device", "gpu-" + std::to_string(i % kGpus) + "-share"},
                                   {"shareID", "s-" + uid(i)},
                                   {"consumedCapacity", {{"memory", "1Gi"}, {"cores", "1"}}}}});
      api.PutClaim(
          vgpu::testing::MakeClaim("bench", "c" + uid(i), uid(i), kDriver, kNode, results));
    }
    for (int i = 0; i < kClaims; ++i) {
      vgpu::testing::drav1::NodePrepareResourcesResponse none, one;
      auto t0 = Clock::now();
      kubelet.Prepare({}, &none);
      auto t1 = Clock::now();
      grpc::Status s = kubelet.Prepare({{"bench", "c" + uid(i), uid(i)}}, &one);
      auto t2 = Clock::now();
      if (!s.ok() || one.claims().at(uid(i)).error() != "") {
        ++failures;
        if (failures < 5) {
          std::fprintf(stderr, "prepare %s failed: %s %s\n", uid(i).c_str(),
                       s.error_message().c_str(),
                       s.ok() ? one.claims().at(uid(i)).error().c_str() : "");
        }
      }
      base.push_back(Micros(t1 - t0));
      prep.push_back(Micros(t2 - t1));
      if (i >= kLive) {
        vgpu::testing::drav1::NodeUnprepareResourcesResponse un;
        kubelet.Unprepare({{"bench", "c" + uid(i - kLive), uid(i - kLive)}}, &un);
      }
    }
    for (int i = std::max(0, kClaims - kLive); i < kClaims; ++i) {
      vgpu::testing::drav1::NodeUnprepareResourcesResponse un;
      kubelet.Unprepare({{"bench", "c" + uid(i), uid(i)}}, &un);
    }
    Compare(("run " + std::to_string(run + 1)).c_str(), prep, base);
    all_prep.insert(all_prep.end(), prep.begin(), prep.end());
    all_base.insert(all_base.end(), base.begin(), base.end());
  }
  Compare("all runs", all_prep, all_base);
  long rss = vgpu::bench::ProcStatusKiB(manager.pid(), "VmRSS:"),
       hwm = vgpu::bench::ProcStatusKiB(manager.pid(), "VmHWM:");
  std::printf("manager memory: VmRSS %.1f MiB, peak VmHWM %.1f MiB (target <= 40 MiB)\n",
              rss / 1024.0, hwm / 1024.0);
  std::printf("claims failed: %d of %d; slots left: %zu\n", failures, kClaims * kRuns,
              manager.Slots().size());
  manager.Kill(SIGTERM);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(checkpoint_dir);
  return failures == 0 ? 0 : 1;
}

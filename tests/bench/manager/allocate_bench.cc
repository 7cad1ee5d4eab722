// Allocate latency and manager memory on an 8-GPU node.
//
// Part A (in-process, fake backend): a SlotManager with the fake SlotBackend and a real
// checkpoint behind the real v1beta1 gRPC server on a unix socket; the client issues 1000
// Allocate calls (2 memory units each, spread over the 8 GPUs), interleaved round by round with
// a baseline RPC of the same transport that does no work (GetDevicePluginOptions). Slot creation
// and queueing the checkpoint journal entry are included; the module call is not (fake backend).
// The journal's write+fdatasync runs on the writer thread meanwhile (group commit), competing
// for the same cores, and compacts every 256 entries; its batch count is printed.
// Part B (real process): the vgpu-manager binary (shim backend: one config file per slot,
// written atomically without a flush: slots::Durability) driven by the fake kubelet with 1000
// Allocates; RSS read from /proc.
//
// Prints p50/p99 and min/median ratios against the baseline. No timed assertions.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench_stats.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "fake_kubelet.h"
#include "manager_process.h"
#include "vgpu/alloc/inventory.h"
#include "vgpu/manager/log.h"
#include "vgpu/manager/slot_manager.h"
#include "vgpu/plugin/device_plugin.h"
#include "vgpu/slots/fake_backend.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using vgpu::alloc::FormatDeviceId;
using vgpu::alloc::ResourceKind;

constexpr int kAllocations = 1000;
constexpr int kUnitsPerAlloc = 2;

using vgpu::bench::Micros;
using vgpu::bench::Print;
using vgpu::bench::Stats;
using vgpu::bench::Summarize;

// The i-th allocation's memory IDs: GPU i%8, units consecutive per GPU.
std::vector<std::string> MemIds(int i, int gpus) {
  int gpu = i % gpus, first = (i / gpus) * kUnitsPerAlloc;
  std::vector<std::string> ids;
  for (int u = first; u < first + kUnitsPerAlloc; ++u) {
    ids.push_back(FormatDeviceId(
        {ResourceKind::kMemory, static_cast<uint32_t>(gpu), static_cast<uint32_t>(u)}));
  }
  return ids;
}

long RssKiB(pid_t pid, const char* field) { return vgpu::bench::ProcStatusKiB(pid, field); }

int InProcess(const std::string& dir, const std::string& checkpoint_dir, const char* label,
              size_t compact_after) {
  auto inv = vgpu::alloc::LoadGpuFixture(VGPU_BENCH_FIXTURE);
  if (!inv.ok()) {
    std::fprintf(stderr, "%s\n", inv.status().ToString().c_str());
    return 1;
  }
  vgpu::slots::FakeSlotBackend backend;
  vgpu::checkpoint::CheckpointStore store(checkpoint_dir + "/cp");
  auto placer = vgpu::alloc::MakePlacer("firstfit", inv->gpus);
  vgpu::manager::ManagerOptions options;
  options.checkpoint_compact_after = compact_after;
  vgpu::manager::SlotManager slots(options, inv->gpus, backend, store, nullptr, std::move(*placer),
                                   [] { return Clock::now(); });
  if (!slots.Reconcile().ok()) {
    return 1;
  }
  vgpu::plugin::PluginServer server(
      {dir, "bench-memory.sock", "tencent.com/vcuda-memory", ResourceKind::kMemory}, slots);
  if (!server.Serve().ok()) {
    return 1;
  }
  auto channel =
      grpc::CreateChannel("unix://" + server.SocketPath(), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  int gpus = static_cast<int>(inv->gpus.size());
  std::vector<double> alloc_us, base_us;
  for (int i = 0; i < kAllocations; ++i) {
    {  // baseline round: same transport, no work
      grpc::ClientContext ctx;
      v1beta1::Empty e;
      v1beta1::DevicePluginOptions o;
      auto t0 = Clock::now();
      if (!stub->GetDevicePluginOptions(&ctx, e, &o).ok()) {
        return 1;
      }
      base_us.push_back(Micros(Clock::now() - t0));
    }
    grpc::ClientContext ctx;
    // One container per request, as the kubelet sends.
    v1beta1::AllocateRequest one;
    auto* cr = one.add_container_requests();
    for (const auto& id : MemIds(i, gpus)) {
      cr->add_devices_ids(id);
    }
    v1beta1::AllocateResponse resp;
    auto t0 = Clock::now();
    grpc::Status s = stub->Allocate(&ctx, one, &resp);
    alloc_us.push_back(Micros(Clock::now() - t0));
    if (!s.ok()) {
      std::fprintf(stderr, "Allocate %d failed: %s\n", i, s.error_message().c_str());
      return 1;
    }
  }
  std::printf("A. in-process, fake backend, %d GPUs, %d Allocates of %d units, checkpoint on %s\n",
              gpus, kAllocations, kUnitsPerAlloc, label);
  Stats a = Summarize(alloc_us), b = Summarize(base_us);
  Print("Allocate (gRPC, slot + checkpoint)", a);
  Print("baseline GetDevicePluginOptions (gRPC)", b);
  std::printf("  ratio Allocate/baseline: min %.2f  p50 %.2f\n", a.min / b.min, a.p50 / b.p50);
  std::printf("  Allocate minus baseline: p50 %.1f us  p99 %.1f us (target p99 <= 1000 us)\n",
              a.p50 - b.p50, a.p99 - b.p99);
  if (!slots.FlushCheckpoint(std::chrono::seconds(30))) {
    std::fprintf(stderr, "checkpoint writer did not catch up\n");
    return 1;
  }
  auto w = slots.CheckpointCounters();
  std::printf(
      "  checkpoint: %llu journal entries in %llu write+fdatasync batches (group commit), "
      "%llu compactions, %llu failures\n",
      static_cast<unsigned long long>(w.entries), static_cast<unsigned long long>(w.batches),
      static_cast<unsigned long long>(w.compactions), static_cast<unsigned long long>(w.failures));
  std::printf("  slots: %zu, backend creates: %d, in-process RSS after: %ld KiB\n",
              slots.Snapshot().size(), backend.creates(), RssKiB(::getpid(), "VmRSS:"));
  server.Stop();
  return 0;
}

int RealProcess(const std::string& dir) {
  vgpu::testing::FakeKubelet kubelet(dir);
  kubelet.Start();
  vgpu::testing::ManagerProcess manager(VGPU_MANAGER_BIN, dir);
  auto since = Clock::now();
  if (!manager.Start({"--gpu-fixture=" VGPU_BENCH_FIXTURE})) {
    std::fprintf(stderr, "manager did not start; log in %s\n", manager.LogFile().c_str());
    return 1;
  }
  if (!kubelet.WaitForRegistration("tencent.com/vcuda-memory", since, std::chrono::seconds(10)) ||
      !kubelet.WaitForDevices("tencent.com/vcuda-memory", std::chrono::seconds(10))) {
    return 1;
  }
  pid_t pid = -1;
  {  // The manager is this thread's only child.
    std::ifstream children("/proc/self/task/" + std::to_string(::getpid()) + "/children");
    children >> pid;
  }
  long rss_start = RssKiB(pid, "VmRSS:");
  std::vector<double> alloc_us;
  for (int i = 0; i < kAllocations; ++i) {
    v1beta1::AllocateResponse resp;
    auto t0 = Clock::now();
    grpc::Status s = kubelet.Allocate("tencent.com/vcuda-memory", MemIds(i, 8), &resp);
    alloc_us.push_back(Micros(Clock::now() - t0));
    if (!s.ok()) {
      std::fprintf(stderr, "Allocate %d failed: %s\n", i, s.error_message().c_str());
      return 1;
    }
  }
  std::printf(
      "B. vgpu-manager process, shim backend (config file per slot, written atomically), %d "
      "Allocates\n",
      kAllocations);
  Print("Allocate (gRPC, slot dir + checkpoint)", Summarize(alloc_us));
  std::printf(
      "  manager RSS: at start %ld KiB, after %d allocations %ld KiB, peak %ld KiB "
      "(target <= 30720 KiB)\n",
      rss_start, kAllocations, RssKiB(pid, "VmRSS:"), RssKiB(pid, "VmHWM:"));
  manager.Kill(SIGTERM);
  kubelet.Stop();
  return 0;
}

}  // namespace

int main() {
  vgpu::manager::SetQuietInfo(true);
  char tmpl[] = "/tmp/vgpu-bench-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  // Journal compacted every 256 entries (so compactions fall inside the measured run; the
  // daemon's default is 1024), on disk and on tmpfs; then, for comparison in the same run, a
  // snapshot after every batch: the whole-file rewrite the manager did before the journal.
  int rc = InProcess(dir, dir, "disk (/tmp), journal", 256);
  if (rc == 0 && fs::is_directory("/dev/shm")) {
    char shm[] = "/dev/shm/vgpu-bench-XXXXXX";
    std::string shm_dir = ::mkdtemp(shm);
    fs::remove(dir + "/bench-memory.sock");
    rc = InProcess(dir, shm_dir, "tmpfs (/dev/shm), journal", 256);
    fs::remove_all(shm_dir);
  }
  if (rc == 0) {
    fs::remove(dir + "/bench-memory.sock");
    fs::remove(dir + "/cp");
    rc = InProcess(dir, dir, "disk (/tmp), whole-file rewrite per batch (old scheme)", 1);
  }
  if (rc == 0) {
    std::string real = dir + "/real";
    fs::create_directories(real);
    rc = RealProcess(real);
  }
  fs::remove_all(dir);
  return rc;
}

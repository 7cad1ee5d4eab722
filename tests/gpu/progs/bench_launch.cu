// Launch-bound loop: empty-kernel launches in batches of N, after W warm-up batches; steady-state
// microseconds per launch over B measured batches (median and min of the batches).
// usage: bench_launch [N=20000] [B=5] [W=2]
//   prints "RESULT us_per_launch=MEDIAN us_min=MIN batches=B ioctls_in_loop=K mmaps_in_loop=M"
// Under libvgpu-shim.so with VGPU_SHIM_COUNT=1, ioctls_in_loop/mmaps_in_loop are the calls the
// measured batches made through the shim's wrappers (all fds, all threads); otherwise "n/a".
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void Empty() {}

struct Counters {  // struct vshim_counters, shim/include/vshim_diag.h
  uint64_t ioctls, nvidia_ioctls, mmaps, opens, closes;
  uint32_t enabled, reserved;
};
using GetCounters = int (*)(Counters*);

static double Batch(int n) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) Empty<<<1, 1>>>();
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  int batches = argc > 2 ? atoi(argv[2]) : 5;
  int warm = argc > 3 ? atoi(argv[3]) : 2;
  Empty<<<1, 1>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    printf("RESULT error=launch\n");
    return 1;
  }
  for (int w = 0; w < warm; w++) Batch(n);
  auto get = reinterpret_cast<GetCounters>(dlsym(RTLD_DEFAULT, "vshim_get_counters"));
  Counters c0{}, c1{};
  if (get != nullptr) get(&c0);
  std::vector<double> us;
  for (int b = 0; b < batches; b++) us.push_back(Batch(n));
  if (get != nullptr) get(&c1);
  std::sort(us.begin(), us.end());
  double med = us.size() % 2 ? us[us.size() / 2] : (us[us.size() / 2 - 1] + us[us.size() / 2]) / 2;
  char io[64] = "n/a", mm[64] = "n/a";
  if (get != nullptr && c1.enabled) {
    snprintf(io, sizeof io, "%llu", static_cast<unsigned long long>(c1.ioctls - c0.ioctls));
    snprintf(mm, sizeof mm, "%llu", static_cast<unsigned long long>(c1.mmaps - c0.mmaps));
  }
  printf(
      "RESULT us_per_launch=%.4f us_min=%.4f batches=%d launches=%d ioctls_in_loop=%s "
      "mmaps_in_loop=%s\n",
      med, us.front(), batches, n * batches, io, mm);
  return 0;
}

// Launch-bound loop: N empty-kernel launches, best of R repetitions, µs per launch.
// usage: bench_launch [N=100000] [R=5]   prints "RESULT us_per_launch=X"
#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void Empty() {}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  Empty<<<1, 1>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) {
    printf("RESULT error=launch\n");
    return 1;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++) Empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    if (us < best) best = us;
  }
  printf("RESULT us_per_launch=%.4f\n", best);
  return 0;
}

// Context creation + 1000 cuMemAlloc/cuMemFree cycles of 2 MiB, timed inside the process.
// usage: bench_alloc [cycles=1000]   prints "RESULT ms=X ctx_ms=Y"
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 1000;
  double t0 = NowMs();
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev)) {
    printf("RESULT error=init\n");
    return 1;
  }
  double t1 = NowMs();
  for (int i = 0; i < cycles; i++) {
    CUdeviceptr p;
    if (cuMemAlloc(&p, 2u << 20) || cuMemFree(p)) {
      printf("RESULT error=alloc\n");
      return 1;
    }
  }
  cuCtxDestroy(ctx);
  double t2 = NowMs();
  printf("RESULT ms=%.3f ctx_ms=%.3f\n", t2 - t0, t1 - t0);
  return 0;
}

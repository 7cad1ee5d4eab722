// Context creation + 1000 cuMemAlloc/cuMemFree cycles of 2 MiB, timed inside the process.
// usage: bench_alloc [cycles=1000]
//   prints "RESULT ms=TOTAL ctx_ms=CTX loop_ms=LOOP ioctls_ctx=A ioctls_loop=B"
// ioctls_* are the ioctls through libvgpu-shim.so's wrapper (VGPU_SHIM_COUNT=1), else n/a.
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct Counters {  // struct vshim_counters, shim/include/vshim_diag.h
  uint64_t ioctls, nvidia_ioctls, mmaps, opens, closes;
  uint32_t enabled, reserved;
};
typedef int (*GetCounters)(struct Counters*);

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  int cycles = argc > 1 ? atoi(argv[1]) : 1000;
  GetCounters get = (GetCounters)dlsym(RTLD_DEFAULT, "vshim_get_counters");
  struct Counters c0 = {0}, c1 = {0}, c2 = {0};
  if (get) get(&c0);
  double t0 = NowMs();
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev)) {
    printf("RESULT error=init\n");
    return 1;
  }
  double t1 = NowMs();
  if (get) get(&c1);
  for (int i = 0; i < cycles; i++) {
    CUdeviceptr p;
    if (cuMemAlloc(&p, 2u << 20) || cuMemFree(p)) {
      printf("RESULT error=alloc\n");
      return 1;
    }
  }
  if (get) get(&c2);
  double t2 = NowMs();
  cuCtxDestroy(ctx);
  double t3 = NowMs();
  char a[32] = "n/a", b[32] = "n/a";
  if (get && c2.enabled) {
    snprintf(a, sizeof a, "%llu", (unsigned long long)(c1.ioctls - c0.ioctls));
    snprintf(b, sizeof b, "%llu", (unsigned long long)(c2.ioctls - c1.ioctls));
  }
  printf("RESULT ms=%.3f ctx_ms=%.3f loop_ms=%.3f ioctls_ctx=%s ioctls_loop=%s\n", t3 - t0, t1 - t0,
         t2 - t1, a, b);
  return 0;
}

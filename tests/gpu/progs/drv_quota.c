// Allocates device memory until refusal through one driver-API path, then reports where it
// stopped. usage: drv_quota alloc|vmm|async [hold]
//   alloc: cuMemAlloc; vmm: cuMemCreate (physical handles, the VMM path); async: cuMemAllocAsync
//   from the device's default pool (release threshold = max, so chunks stay in the pool).
// Steps: 64 MiB chunks until the first failure, then 2 MiB chunks until the next, so the last
// success ends within one 2 MiB granule of whatever limit applies. With "hold", prints HOLD and
// sleeps (for an outside observer) until killed.
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define MAX_ALLOCS 100000

static CUmemGenericAllocationHandle handles[MAX_ALLOCS];
static CUdeviceptr ptrs[MAX_ALLOCS];
static int n_allocs = 0;

static CUresult AllocOne(const char* mode, size_t bytes, CUstream s) {
  if (n_allocs >= MAX_ALLOCS) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r;
  if (strcmp(mode, "vmm") == 0) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    r = cuMemCreate(&handles[n_allocs], bytes, &prop, 0);
  } else if (strcmp(mode, "async") == 0) {
    r = cuMemAllocAsync(&ptrs[n_allocs], bytes, s);
    if (r == CUDA_SUCCESS) r = cuStreamSynchronize(s);
  } else {
    r = cuMemAlloc(&ptrs[n_allocs], bytes);
  }
  if (r == CUDA_SUCCESS) n_allocs++;
  return r;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "alloc";
  int hold = argc > 2 && strcmp(argv[2], "hold") == 0;
  CUdevice dev;
  CUcontext ctx;
  CUstream s = 0;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx)) {
    printf("RESULT mode=%s error=init\n", mode);
    return 2;
  }
  if (strcmp(mode, "async") == 0) {
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, dev);
    cuuint64_t thr = ~0ull;
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
    cuStreamCreate(&s, 0);
  }
  size_t free0 = 0, total0 = 0;
  cuMemGetInfo(&free0, &total0);
  unsigned long long allocated = 0;
  CUresult last = CUDA_SUCCESS;
  const size_t steps[2] = {64 * MiB, 2 * MiB};
  for (int phase = 0; phase < 2; phase++) {
    for (;;) {
      last = AllocOne(mode, steps[phase], s);
      if (last != CUDA_SUCCESS) break;
      allocated += steps[phase];
    }
  }
  const char* err_name = "?";
  cuGetErrorName(last, &err_name);
  size_t free1 = 0, total1 = 0;
  cuMemGetInfo(&free1, &total1);
  printf(
      "RESULT mode=%s allocated=%llu allocs=%d refusal=%s free_before=%zu total=%zu "
      "free_after=%zu total_after=%zu\n",
      mode, allocated, n_allocs, err_name, free0, total0, free1, total1);
  fflush(stdout);
  if (hold) {
    printf("HOLD pid=%d\n", (int)getpid());
    fflush(stdout);
    for (;;) pause();
  }
  // Free everything: the charge must return to zero.
  for (int i = 0; i < n_allocs; i++) {
    if (strcmp(mode, "vmm") == 0)
      cuMemRelease(handles[i]);
    else if (strcmp(mode, "async") == 0)
      cuMemFreeAsync(ptrs[i], s);
    else
      cuMemFree(ptrs[i]);
  }
  if (s) {
    cuStreamSynchronize(s);
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, dev);
    cuMemPoolTrimTo(pool, 0);
  }
  size_t free2 = 0, total2 = 0;
  cuMemGetInfo(&free2, &total2);
  printf("FREED free=%zu total=%zu\n", free2, total2);
  return last == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}

// How a stream-ordered pool (cuMemAllocAsync) grows, and what it does when a growth is refused.
// Investigates why "async until refusal" stops one pool chunk, not one 2 MiB granule, below the
// quota (docs/results/shim-h200.md). Run under the shim with a slot quota and VGPU_LOG=info:
// every refusal is then one stderr line naming the request, so the stderr lines between our
// own markers show exactly what the driver asked for. usage: async_pool growth|edge
//   growth: for each request size, one allocation from an empty pool (default pool, then an
//           explicit cuMemPoolCreate pool, then one with maxSize = 64 MiB): the pool's reserved
//           bytes (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) and the slot charge it caused.
//   edge:   fill the slot with cuMemAlloc to the last 2 MiB, then free K MiB of it and ask each
//           pool for 2 MiB: does it succeed with less than a chunk left, does the driver retry
//           smaller after a refusal?
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#define MiB (1ull << 20)

static CUstream stream;

static unsigned long long Charge(void) {  // quota - free: the slot charge under the shim
  size_t f = 0, t = 0;
  cuMemGetInfo(&f, &t);
  return (unsigned long long)(t - f);
}

static unsigned long long Reserved(CUmemoryPool pool) {
  cuuint64_t v = 0;
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
  return (unsigned long long)v;
}

static CUresult PoolAlloc(CUmemoryPool pool, CUdeviceptr* p, size_t bytes) {
  CUresult r = cuMemAllocFromPoolAsync(p, bytes, pool, stream);
  if (r == CUDA_SUCCESS) r = cuStreamSynchronize(stream);
  return r;
}

static void Empty(CUmemoryPool pool, CUdeviceptr* ptrs, int n) {
  for (int i = 0; i < n; i++) cuMemFreeAsync(ptrs[i], stream);
  cuStreamSynchronize(stream);
  cuMemPoolTrimTo(pool, 0);
}

static CUmemoryPool NewPool(CUdevice dev, size_t max_size) {
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = (int)dev;
  props.maxSize = max_size;
  CUmemoryPool pool = NULL;
  CUresult r = cuMemPoolCreate(&pool, &props);
  if (r != CUDA_SUCCESS) {
    const char* e = "?";
    cuGetErrorName(r, &e);
    printf("POOL create maxSize=%zu failed %s\n", max_size, e);
    return NULL;
  }
  cuuint64_t thr = ~0ull;
  cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
  return pool;
}

static void Growth(CUmemoryPool pool, const char* name) {
  static const unsigned sizes_mib[] = {1, 2, 4, 16, 30, 32, 34, 48, 64, 66, 100, 256};
  for (unsigned i = 0; i < sizeof sizes_mib / sizeof sizes_mib[0]; i++) {
    size_t bytes = sizes_mib[i] * MiB;
    unsigned long long c0 = Charge();
    CUdeviceptr p[2];
    CUresult r = PoolAlloc(pool, &p[0], bytes);
    unsigned long long after_one = Charge(), res_one = Reserved(pool);
    // A second allocation of the same size: served from the first chunk's rest, or a new one?
    CUresult r2 = r == CUDA_SUCCESS ? PoolAlloc(pool, &p[1], bytes) : r;
    unsigned long long after_two = Charge(), res_two = Reserved(pool);
    printf(
        "GROWTH pool=%s request_mib=%u ok=%d reserved_mib=%.1f charge_delta_mib=%.1f "
        "second_ok=%d reserved2_mib=%.1f charge_delta2_mib=%.1f\n",
        name, sizes_mib[i], r == CUDA_SUCCESS, res_one / (double)MiB,
        (after_one - c0) / (double)MiB, r2 == CUDA_SUCCESS, res_two / (double)MiB,
        (after_two - c0) / (double)MiB);
    Empty(pool, p, (r == CUDA_SUCCESS) + (r == CUDA_SUCCESS && r2 == CUDA_SUCCESS));
  }
}

#define MAX_FILL 4096
static CUdeviceptr fill[MAX_FILL];
static int n_fill;

static void Edge(CUmemoryPool* pools, const char** names, int n_pools) {
  // Fill the slot: 64 MiB, then 2 MiB blocks, until refusal.
  const size_t steps[2] = {64 * MiB, 2 * MiB};
  for (int s = 0; s < 2; s++)
    while (n_fill < MAX_FILL && cuMemAlloc(&fill[n_fill], steps[s]) == CUDA_SUCCESS) n_fill++;
  fprintf(stderr, "MARK filled charge=%llu\n", Charge());
  static const unsigned leave_mib[] = {2, 8, 16, 26, 30, 32, 34};
  for (unsigned i = 0; i < sizeof leave_mib / sizeof leave_mib[0]; i++) {
    // Free 2 MiB blocks (the tail of the fill) until the slot has leave_mib[i] MiB free.
    size_t f = 0, t = 0;
    cuMemGetInfo(&f, &t);
    while (f < leave_mib[i] * MiB && n_fill > 0) {
      cuMemFree(fill[--n_fill]);
      cuMemGetInfo(&f, &t);
    }
    for (int k = 0; k < n_pools; k++) {
      fprintf(stderr, "MARK begin pool=%s free_mib=%.1f\n", names[k], f / (double)MiB);
      CUdeviceptr p;
      CUresult r = PoolAlloc(pools[k], &p, 2 * MiB);
      const char* e = "?";
      cuGetErrorName(r, &e);
      fprintf(stderr, "MARK end pool=%s\n", names[k]);
      printf(
          "EDGE pool=%s slot_free_mib=%.1f request_mib=2 result=%s reserved_mib=%.1f "
          "charge_mib=%.1f\n",
          names[k], f / (double)MiB, e, Reserved(pools[k]) / (double)MiB, Charge() / (double)MiB);
      Empty(pools[k], &p, r == CUDA_SUCCESS);
    }
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "growth";
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuStreamCreate(&stream, 0)) {
    printf("RESULT error=init\n");
    return 2;
  }
  CUmemoryPool def;
  cuDeviceGetDefaultMemPool(&def, dev);
  cuuint64_t thr = ~0ull;
  cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr);
  CUmemoryPool pools[3] = {def, NewPool(dev, 0), NewPool(dev, 64 * MiB)};
  const char* names[3] = {"default", "created", "created-max64M"};
  setvbuf(stdout, NULL, _IONBF, 0);
  for (int k = 0; k < 3; k++)
    if (pools[k] == NULL) return 1;
  if (strcmp(mode, "growth") == 0) {
    for (int k = 0; k < 3; k++) Growth(pools[k], names[k]);
    // Near its maxSize, does a pool grow by less than a chunk? 2 MiB steps into a 40 MiB pool.
    CUmemoryPool small = NewPool(dev, 40 * MiB);
    if (small != NULL) {
      CUdeviceptr p[64];
      int n = 0;
      while (n < 64 && PoolAlloc(small, &p[n], 2 * MiB) == CUDA_SUCCESS) n++;
      printf("MAXSIZE pool=created-max40M allocs_of_2mib=%d reserved_mib=%.1f\n", n,
             Reserved(small) / (double)MiB);
      Empty(small, p, n);
    }
  } else {
    Edge(pools, names, 3);
  }
  printf("RESULT mode=%s done=1\n", mode);
  return 0;
}

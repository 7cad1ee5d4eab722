// Driver-API program for the recorded corpus: every allocation path libcuda
// has, each freed again, so a replay ends with nothing charged. Prints one line per step.
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"

static void MemInfo(const char* when) {
  size_t fr = 0, tot = 0;
  CK(cuMemGetInfo(&fr, &tot));
  printf("meminfo %s free=%zu total=%zu\n", when, fr, tot);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  MemInfo("start");

  const size_t sizes[] = {4096, 2u << 20, 3u << 20, 64u << 20, 1ull << 30};
  CUdeviceptr p[5] = {0};
  for (int i = 0; i < 5; i++) {
    CK(cuMemAlloc(&p[i], sizes[i]));
    printf("cuMemAlloc %zu -> %s\n", sizes[i], p[i] ? "ok" : "fail");
  }
  MemInfo("after-alloc");

  // The driver's own out-of-memory (NV_ERR_NO_MEMORY 0x51 in the reply, nvidia-rm-abi.md §4.3).
  CUdeviceptr huge = 0;
  CUresult r = cuMemAlloc(&huge, 200ull << 30);
  printf("cuMemAlloc 200GiB -> %d (expect 2)\n", (int)r);

  // VMM: cuMemCreate + reserve + map + access + unmap + release.
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  size_t vsz = 32u << 20;
  CUmemGenericAllocationHandle h;
  CUdeviceptr va = 0;
  CK(cuMemCreate(&h, vsz, &prop, 0));
  CK(cuMemAddressReserve(&va, vsz, 0, 0, 0));
  CK(cuMemMap(va, vsz, 0, h, 0));
  CUmemAccessDesc ad;
  memset(&ad, 0, sizeof ad);
  ad.location = prop.location;
  ad.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CK(cuMemSetAccess(va, vsz, &ad, 1));
  CK(cuMemsetD8(va, 1, vsz));
  CK(cuCtxSynchronize());
  CK(cuMemUnmap(va, vsz));
  CK(cuMemAddressFree(va, vsz));
  CK(cuMemRelease(h));
  printf("cuMemCreate 32MiB gran=%zu done\n", gran);

  // Stream-ordered pool: alloc, use, free, trim to zero.
  CUstream s;
  CUdeviceptr a = 0;
  CUmemoryPool pool;
  CK(cuStreamCreate(&s, 0));
  CK(cuMemAllocAsync(&a, 64u << 20, s));
  CK(cuMemsetD8Async(a, 0, 64u << 20, s));
  CK(cuMemFreeAsync(a, s));
  CK(cuStreamSynchronize(s));
  CK(cuDeviceGetDefaultMemPool(&pool, dev));
  CK(cuMemPoolTrimTo(pool, 0));
  CK(cuStreamDestroy(s));
  printf("cuMemAllocAsync 64MiB done\n");

  void* hp = NULL;
  CK(cuMemAllocHost(&hp, 64u << 20));
  if (hp) memset(hp, 1, 64u << 20);
  CK(cuMemFreeHost(hp));
  printf("cuMemAllocHost 64MiB done\n");

  CUdeviceptr m = 0;
  r = cuMemAllocManaged(&m, 64u << 20, CU_MEM_ATTACH_GLOBAL);
  printf("cuMemAllocManaged 64MiB -> %d\n", (int)r);
  if (r == CUDA_SUCCESS) {
    CK(cuMemsetD8(m, 0, 64u << 20));
    CK(cuCtxSynchronize());
    CK(cuMemFree(m));
  }

  MemInfo("before-free");
  for (int i = 0; i < 5; i++) {
    if (p[i]) CK(cuMemFree(p[i]));
  }
  MemInfo("end");
  CK(cuDevicePrimaryCtxRelease(dev));
  printf("drv_corpus failures=%d\n", failures);
  return failures ? 1 : 0;
}

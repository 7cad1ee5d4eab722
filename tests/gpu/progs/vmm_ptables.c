// Measures the page tables the driver builds in video memory when ONE 2 MiB physical allocation
// (cuMemCreate) is mapped at many virtual addresses (cuMemAddressReserve + cuMemMap +
// cuMemSetAccess), spaced 2 MiB, 1 GiB and 512 GiB apart (issue 17 F11.1; the core charges the
// allocation once and the page tables not at all). libcuda maps each piece with
// UVM_CREATE_EXTERNAL_RANGE + UVM_MAP_EXTERNAL_ALLOCATION (tests/data/traces/cuda-driver-api),
// so this is the UVM external-mapping path too. Reads, before and after each checkpoint:
// cuMemGetInfo's free bytes, NVML's device memory used and this process's used memory (NVML
// loaded at run time: no link flag beyond build.sh's -lcuda). Results:
// docs/results/rm-internal-memory-h200.md.
//   build: nvcc -O2 -arch=sm_90 -o vmm_ptables tests/gpu/progs/vmm_ptables.c -lcuda
//   usage: vmm_ptables [max_maps] [seconds_per_spacing]   (default 65536, 60)
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_check.h"

// NVML's types as nvml.h (CUDA 13) has them; the header is not on every build machine.
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {  // nvmlProcessInfo_t (v2 layout), what ..._v3 fills
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
#define NVML_SUCCESS 0

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static struct {
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);
  nvmlDevice_t dev;
  int ok;
} nvml;

static void NvmlOpen(void) {
  void* so = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!so) return (void)printf("NVML: %s\n", dlerror());
  nvml.init = (nvmlReturn_t(*)(void))dlsym(so, "nvmlInit_v2");
  nvml.handle =
      (nvmlReturn_t(*)(unsigned, nvmlDevice_t*))dlsym(so, "nvmlDeviceGetHandleByIndex_v2");
  nvml.mem = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t*))dlsym(so, "nvmlDeviceGetMemoryInfo");
  nvml.procs = (nvmlReturn_t(*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*))dlsym(
      so, "nvmlDeviceGetComputeRunningProcesses_v3");
  nvml.ok = nvml.init && nvml.handle && nvml.mem && nvml.procs && nvml.init() == NVML_SUCCESS &&
            nvml.handle(0, &nvml.dev) == NVML_SUCCESS;
  if (!nvml.ok) printf("NVML: not usable\n");
}

// One reading: free bytes (cuMemGetInfo), device used and this process's used (NVML).
struct Reading {
  long long cu_free, dev_used, proc_used;
};

static struct Reading Read(void) {
  struct Reading r = {-1, -1, -1};
  size_t fr = 0, total = 0;
  if (cuMemGetInfo(&fr, &total) == CUDA_SUCCESS) r.cu_free = (long long)fr;
  if (nvml.ok) {
    nvmlMemory_t m;
    if (nvml.mem(nvml.dev, &m) == NVML_SUCCESS) r.dev_used = (long long)m.used;
    nvmlProcessInfo_t p[64];
    unsigned n = 64;
    if (nvml.procs(nvml.dev, &n, p) == NVML_SUCCESS)
      for (unsigned i = 0; i < n; ++i)
        if (p[i].pid == (unsigned)getpid()) r.proc_used = (long long)p[i].usedGpuMemory;
  }
  return r;
}

static void Report(const char* what, struct Reading a, struct Reading b, unsigned long n) {
  const double mib = (double)MiB;
  const long long d_cu = a.cu_free - b.cu_free, d_dev = b.dev_used - a.dev_used,
                  d_proc = b.proc_used - a.proc_used;
  printf("%-44s n=%-6lu cuMemGetInfo -%.3f MiB, NVML device +%.3f MiB, process +%.3f MiB", what, n,
         d_cu / mib, d_dev / mib, d_proc / mib);
  if (n)
    printf("; per mapping %.1f / %.1f / %.1f KiB", d_cu / 1024.0 / n, d_dev / 1024.0 / n,
           d_proc / 1024.0 / n);
  printf("\n");
  fflush(stdout);
}

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// The largest reservation of at most `want` bytes (halving) aligned to `align`.
static CUdeviceptr Reserve(unsigned long long want, unsigned long long align,
                           unsigned long long* got) {
  for (unsigned long long size = want; size >= align; size /= 2) {
    CUdeviceptr p = 0;
    if (cuMemAddressReserve(&p, size, align, 0, 0) == CUDA_SUCCESS) {
      *got = size;
      return p;
    }
  }
  *got = 0;
  return 0;
}

// Maps `h` (2 MiB) at base + i * spacing for i < max_maps (or until the reservation, a
// refusal or the time runs out), reading at 1, 1024, 8192, 65536 maps; then unmaps all.
static void Spacing(CUmemGenericAllocationHandle h, unsigned long long spacing,
                    unsigned long max_maps, double seconds) {
  unsigned long long got = 0;
  const unsigned long long align = spacing < GiB ? 2 * MiB : spacing;
  CUdeviceptr base = Reserve((unsigned long long)max_maps * spacing, align, &got);
  const unsigned long fit = (unsigned long)(got / spacing);
  printf("spacing %llu MiB: reserved %llu GiB at 0x%llx (room for %lu maps)\n", spacing / MiB,
         got / GiB, (unsigned long long)base, fit);
  if (!fit) return;
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof acc);
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = 0;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const struct Reading r0 = Read();
  const double t0 = Now();
  unsigned long mapped = 0;
  CUresult st = CUDA_SUCCESS;
  while (mapped < fit && mapped < max_maps) {
    const CUdeviceptr va = base + mapped * spacing;
    st = cuMemMap(va, 2 * MiB, 0, h, 0);
    if (st == CUDA_SUCCESS) {
      st = cuMemSetAccess(va, 2 * MiB, &acc, 1);
      if (st != CUDA_SUCCESS) cuMemUnmap(va, 2 * MiB);
    }
    if (st != CUDA_SUCCESS) break;
    ++mapped;
    if (mapped == 1 || mapped == 1024 || mapped == 8192 || mapped == 65536) {
      char what[64];
      snprintf(what, sizeof what, "  %llu MiB apart, %lu maps", spacing / MiB, mapped);
      Report(what, r0, Read(), mapped);
    }
    if (Now() - t0 > seconds) break;
  }
  const struct Reading r1 = Read();
  const char* err = "?";
  if (st != CUDA_SUCCESS) cuGetErrorName(st, &err);
  printf("  stopped at %lu maps after %.2f s (%s)\n", mapped, Now() - t0,
         st != CUDA_SUCCESS   ? err
         : mapped >= max_maps ? "max"
         : mapped >= fit      ? "range"
                              : "time");
  Report("  all maps", r0, r1, mapped);
  for (unsigned long i = 0; i < mapped; ++i) CK(cuMemUnmap(base + i * spacing, 2 * MiB));
  CK(cuMemAddressFree(base, got));
  Report("  unmapped and released (vs before maps)", r0, Read(), 0);
}

int main(int argc, char** argv) {
  const unsigned long max_maps = argc > 1 ? strtoul(argv[1], 0, 0) : 65536;
  const double seconds = argc > 2 ? atof(argv[2]) : 60;
  NvmlOpen();
  const CUdevice dev = UsePrimaryContext();
  if (failures) return 1;
  const struct Reading r0 = Read();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h;
  CK(cuMemCreate(&h, 2 * MiB, &prop, 0));
  if (failures) return 1;
  Report("cuMemCreate 2 MiB (unmapped)", r0, Read(), 0);
  Spacing(h, 2 * MiB, max_maps, seconds);
  Spacing(h, 1 * GiB, max_maps, seconds);
  Spacing(h, 512 * GiB, max_maps, seconds);
  CK(cuMemRelease(h));
  Report("end (vs after the context)", r0, Read(), 0);
  CK(cuDevicePrimaryCtxRelease(dev));
  return failures ? 1 : 0;
}

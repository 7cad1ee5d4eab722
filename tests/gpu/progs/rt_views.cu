// Runtime-API checks. usage: rt_views meminfo | managed
//   meminfo: cudaMemGetInfo → "RESULT free=N total=N"
//   managed: cudaMallocManaged 64 MiB, a kernel writes it, host reads back →
//            "RESULT managed=ok" or "RESULT managed=fail err=NAME"
#include <cstdio>
#include <cstring>

__global__ void Fill(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = i;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "meminfo";
  if (strcmp(mode, "managed") == 0) {
    const int n = 16 << 20;  // 64 MiB of ints
    // The context must work (plain device memory) before managed memory is judged.
    void* d = nullptr;
    cudaError_t e = cudaMalloc(&d, 2 << 20);
    if (e != cudaSuccess) {
      printf("RESULT ctx=fail managed=untested err=%s\n", cudaGetErrorName(e));
      return 1;
    }
    cudaFree(d);
    int* p = nullptr;
    e = cudaMallocManaged(&p, n * sizeof(int));
    if (e != cudaSuccess) {
      printf("RESULT ctx=ok managed=fail err=%s\n", cudaGetErrorName(e));
      return 0;
    }
    Fill<<<(n + 255) / 256, 256>>>(p, n);
    e = cudaDeviceSynchronize();
    bool ok = e == cudaSuccess && p[12345] == 12345 && p[n - 1] == n - 1;
    printf("RESULT ctx=ok managed=%s err=%s\n", ok ? "ok" : "fail", cudaGetErrorName(e));
    cudaFree(p);
    return 0;
  }
  size_t fr = 0, tot = 0;
  cudaError_t e = cudaMemGetInfo(&fr, &tot);
  printf("RESULT free=%zu total=%zu err=%s\n", fr, tot, cudaGetErrorName(e));
  return e == cudaSuccess ? 0 : 1;
}

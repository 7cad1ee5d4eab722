// Two-process slot test. usage:
//   drv_hold hold MiB          allocate MiB, print HOLD, sleep until killed
//   drv_hold try MiB FLAGFILE  try MiB (print TRY1 ok|fail), wait for FLAGFILE to exist,
//                              try again (print TRY2 ok|fail)
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  size_t bytes = strtoull(argv[2], NULL, 10) << 20;
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx)) {
    printf("INIT fail\n");
    return 2;
  }
  CUdeviceptr p = 0;
  if (strcmp(argv[1], "hold") == 0) {
    CUresult r = cuMemAlloc(&p, bytes);
    printf("HOLD %s pid=%d\n", r == CUDA_SUCCESS ? "ok" : "fail", (int)getpid());
    fflush(stdout);
    for (;;) pause();
  }
  if (argc < 4) return 2;
  CUresult r = cuMemAlloc(&p, bytes);
  printf("TRY1 %s\n", r == CUDA_SUCCESS ? "ok" : "fail");
  fflush(stdout);
  if (r == CUDA_SUCCESS) cuMemFree(p);
  for (int i = 0; i < 600 && access(argv[3], F_OK) != 0; i++) usleep(50000);
  r = cuMemAlloc(&p, bytes);
  printf("TRY2 %s\n", r == CUDA_SUCCESS ? "ok" : "fail");
  fflush(stdout);
  return 0;
}

// CK(call): runs a CUDA driver-API call; on failure prints "FAIL <call> -> <error name>" and
// counts it in `failures`, so a program reports every failed step and exits non-zero at the end.
#pragma once
#include <cuda.h>
#include <stdio.h>

static int failures = 0;
#define CK(x)                            \
  do {                                   \
    CUresult r_ = (x);                   \
    if (r_ != CUDA_SUCCESS) {            \
      const char* s_ = "?";              \
      cuGetErrorName(r_, &s_);           \
      printf("FAIL %s -> %s\n", #x, s_); \
      failures++;                        \
    }                                    \
  } while (0)

// cuInit, device 0's primary context retained and made current (each step through CK).
static inline CUdevice UsePrimaryContext(void) {
  CUdevice dev = 0;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  return dev;
}

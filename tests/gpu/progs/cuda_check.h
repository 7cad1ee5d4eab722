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

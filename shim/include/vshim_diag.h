/*
 * vshim_diag.h - diagnostic counters of libvgpu-shim.so, for benchmarks and debug runs.
 *
 * With VGPU_SHIM_COUNT=1 in the environment the wrappers count every call that reaches them;
 * without it nothing is counted (the wrappers test one flag they read anyway). A program run
 * under the shim finds the function with dlsym(RTLD_DEFAULT, "vshim_get_counters") and takes
 * two snapshots around a loop: the differences are the calls the loop made (all fds, all
 * threads). The GPU suite uses this to show that a kernel-launch loop makes no ioctl at all.
 */
#ifndef VSHIM_DIAG_H
#define VSHIM_DIAG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vshim_counters {
  uint64_t ioctls;        /* every ioctl() through the wrapper, any fd */
  uint64_t nvidia_ioctls; /* those on a filtered NVIDIA fd (ctl, gpu, uvm) */
  uint64_t mmaps;         /* every mmap() through the wrapper */
  uint64_t opens;         /* every open*() through the wrappers */
  uint64_t closes;        /* every close() through the wrapper */
  uint32_t enabled;       /* 1 when VGPU_SHIM_COUNT=1, else the counts stay 0 */
  uint32_t reserved;
};

/* Fills *out (sizeof(struct vshim_counters) bytes). Returns 0, or -1 when out is NULL. */
int vshim_get_counters(struct vshim_counters* out);

#ifdef __cplusplus
}
#endif

#endif /* VSHIM_DIAG_H */

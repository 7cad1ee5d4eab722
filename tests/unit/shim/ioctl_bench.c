// Cost of one ioctl through libvgpu-shim.so, without a GPU. usage:
//   ioctl_bench other N   FIONREAD on a pipe (the non-NVIDIA fast path)
//   ioctl_bench rm N      FB_GET_INFO_V2 on the fake ctl node (core + view rewrite + fake driver)
//   ioctl_bench alloc N   RM_ALLOC of 2 MiB video memory (class 0x40) + RM_FREE on the fake ctl
//                         node: the charge/refund path cuMemAlloc/cuMemFree take (per ioctl)
// prints "RESULT ns_per_ioctl=X" (best of 5 batches).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "other";
  long n = argc > 2 ? atol(argv[2]) : 100000;
  int fd;
  unsigned long req;
  void* arg;
  int avail = 0;
  uint32_t nvos[8] = {0};
  uint8_t params[1028] = {0};
  if (strcmp(mode, "alloc") == 0) {
    char path[512];
    snprintf(path, sizeof path, "%s/nvidiactl", getenv("VGPU_DEV_DIR"));
    fd = open(path, O_RDWR | O_CLOEXEC);
    // NVOS64 (nvidia-rm-abi.md §3): hRoot@0 hParent@4 hNew@8 class@12 params@16 ... status@40.
    uint8_t cp[120] = {0}, dp[56] = {0}, mp[128] = {0};
    uint32_t sp = 0;
    uint32_t a[12] = {0};
    a[3] = 0x41;
    uint64_t p = (uint64_t)(uintptr_t)cp;
    memcpy(&a[4], &p, 8);
    if (fd < 0 || ioctl(fd, 0xC030462Bul, a) != 0 || a[10] != 0) {
      printf("RESULT error=setup\n");
      return 1;
    }
    uint32_t client = a[2];
    uint32_t dev[12] = {client, client, 0x5c000001u, 0x80},
             sub[12] = {client, 0x5c000001u, 0x5c000002u, 0x2080};
    p = (uint64_t)(uintptr_t)dp;
    memcpy(&dev[4], &p, 8);
    p = (uint64_t)(uintptr_t)&sp;
    memcpy(&sub[4], &p, 8);
    if (ioctl(fd, 0xC030462Bul, dev) != 0 || dev[10] != 0 || ioctl(fd, 0xC030462Bul, sub) != 0 ||
        sub[10] != 0) {
      printf("RESULT error=setup-device\n");
      return 1;
    }
    uint64_t size = 2u << 20;
    memcpy(mp + 64, &size, 8);
    double best = 1e30;
    for (int b = 0; b < 5; b++) {
      double t0 = NowNs();
      for (long i = 0; i < n; i++) {
        uint32_t m[12] = {client, 0x5c000001u, 0x5c001000u, 0x40};
        p = (uint64_t)(uintptr_t)mp;
        memcpy(&m[4], &p, 8);
        uint32_t f[4] = {client, 0x5c000001u, 0x5c001000u, 0};
        if (ioctl(fd, 0xC030462Bul, m) != 0 || m[10] != 0 || ioctl(fd, 0xC0104629ul, f) != 0 ||
            f[3] != 0) {
          printf("RESULT error=alloc status=0x%x/0x%x\n", m[10], f[3]);
          return 1;
        }
      }
      double ns = (NowNs() - t0) / (2.0 * n);
      if (ns < best) best = ns;
    }
    printf("RESULT ns_per_ioctl=%.1f\n", best);
    return 0;
  }
  if (strcmp(mode, "rm") == 0) {
    char path[512];
    snprintf(path, sizeof path, "%s/nvidiactl", getenv("VGPU_DEV_DIR"));
    fd = open(path, O_RDWR | O_CLOEXEC);
    // Root client first, so the control names a client the core knows.
    uint8_t cp[120] = {0};
    uint32_t alloc[12] = {0};
    alloc[3] = 0x41;
    uint64_t p = (uint64_t)(uintptr_t)cp;
    memcpy(&alloc[4], &p, 8);
    if (fd < 0 || ioctl(fd, 0xC030462Bul, alloc) != 0) {
      printf("RESULT error=setup\n");
      return 1;
    }
    uint32_t count = 3, idx[3] = {0x09, 0x16, 0x10};
    memcpy(params, &count, 4);
    for (int i = 0; i < 3; i++) memcpy(params + 4 + 8 * i, &idx[i], 4);
    nvos[0] = alloc[2];  // hClient
    nvos[1] = alloc[2];
    nvos[2] = 0x20801303u;
    p = (uint64_t)(uintptr_t)params;
    memcpy(&nvos[4], &p, 8);
    nvos[6] = sizeof params;
    req = 0xC020462Aul;
    arg = nvos;
  } else {
    int pfd[2];
    if (pipe(pfd) != 0) return 1;
    fd = pfd[0];
    req = FIONREAD;
    arg = &avail;
  }
  double best = 1e30;
  for (int b = 0; b < 5; b++) {
    double t0 = NowNs();
    for (long i = 0; i < n; i++) ioctl(fd, req, arg);
    double ns = (NowNs() - t0) / n;
    if (ns < best) best = ns;
  }
  printf("RESULT ns_per_ioctl=%.1f\n", best);
  return 0;
}

// Cost of one ioctl through libvgpu-shim.so, without a GPU. usage:
//   ioctl_bench other N   FIONREAD on a pipe (the non-NVIDIA fast path)
//   ioctl_bench rm N      FB_GET_INFO_V2 on the fake ctl node (core + view rewrite + fake driver)
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

// Allocates what a CUDA context does for compute (nvidia-rm-abi.md §6.1: a GR TSG with 8 Hopper
// channels, a copy TSG with 4) through libvgpu-shim.so on the fake driver, waits argv[2] ms
// (default 0: libcuda's per-channel setup and UVM registration), schedules both TSGs with
// GPFIFO_SCHEDULE(bEnable=1) as libcuda does last, then runs for argv[1] ms and exits normally
// (the shim's destructor must leave the channels enabled).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  uint32_t h_root, h_parent, h_new, h_class;
  uint64_t params, rights;
  uint32_t params_size, flags, status, pad;
} Nvos64;

static int ctl = -1;
static uint32_t client = 0;

static uint32_t Alloc(uint32_t parent, uint32_t handle, uint32_t cls, void* params) {
  Nvos64 a = {client, parent, handle, cls, (uint64_t)(uintptr_t)params, 0, 0, 0, 0, 0};
  if (ioctl(ctl, 0xC030462Bul, &a) != 0) {
    printf("ioctl alloc class %#x errno=%d\n", cls, errno);
    return 0xffff;
  }
  if (cls == 0x41 && a.status == 0) client = a.h_new;
  return a.status;
}

static uint32_t Schedule(uint32_t tsg) {
  uint8_t params[3] = {1, 0, 0};  // bEnable, bSkipSubmit, bSkipEnable
  struct {
    uint32_t h_client, h_object, cmd, flags;
    uint64_t params;
    uint32_t params_size, status;
  } c = {client, tsg, 0xa06c0101u, 0, (uint64_t)(uintptr_t)params, sizeof params, 0};
  if (ioctl(ctl, 0xC020462Aul, &c) != 0) {
    printf("ioctl schedule errno=%d\n", errno);
    return 0xffff;
  }
  return c.status;
}

static void SleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  char path[512];
  snprintf(path, sizeof path, "%s/nvidiactl", getenv("VGPU_DEV_DIR"));
  ctl = open(path, O_RDWR | O_CLOEXEC);
  if (ctl < 0) return 1;
  uint8_t client_params[120] = {0}, dev_params[56] = {0}, ch_params[368] = {0};
  uint32_t sub_params = 0;
  if (Alloc(0, 0, 0x41, client_params) || Alloc(client, 0x5c000001, 0x80, dev_params) ||
      Alloc(0x5c000001, 0x5c000002, 0x2080, &sub_params)) {
    printf("SETUP fail\n");
    return 1;
  }
  uint32_t tsg_params[5] = {0, 0, 0, 1, 0};  // engineType@12 = 1 (GR)
  uint32_t copy_params[5] = {0, 0, 0, 11, 0};
  if (Alloc(0x5c000001, 0x5c000010, 0xa06c, tsg_params) ||
      Alloc(0x5c000001, 0x5c000020, 0xa06c, copy_params)) {
    printf("TSG fail\n");
    return 1;
  }
  for (uint32_t i = 0; i < 8; i++) {
    if (Alloc(0x5c000010, 0x5c000100 + i, 0xc86f, ch_params)) return 1;
  }
  for (uint32_t i = 0; i < 4; i++) {
    if (Alloc(0x5c000020, 0x5c000200 + i, 0xc86f, ch_params)) return 1;
  }
  SleepMs(argc > 2 ? atol(argv[2]) : 0);
  if (Schedule(0x5c000010) || Schedule(0x5c000020)) {
    printf("SCHEDULE fail\n");
    return 1;
  }
  printf("READY\n");
  SleepMs(argc > 1 ? atol(argv[1]) : 1000);
  printf("DONE\n");
  return 0;
}

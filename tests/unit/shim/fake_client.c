// Drives the fake driver through libvgpu-shim.so the way libcuda would (raw RM structs).
// usage: fake_client quota [MAX_ALLOCS] | hold N | managed | pids
//   quota: client+device+subdevice, 2 MiB class-0x40 allocations until refused (or MAX),
//          FB_GET_INFO_V2 view, free 3, view again.
//   hold N: N allocations, print READY, sleep until killed.
//   managed: mmap 2 MiB of nvidia-uvm, twice.
//   contexts: context-sized (2 MiB) mappings of nvidia-uvm until refused, the view after each
//             step; then munmap, a partial munmap, an mremap shrink, the fd's close and the
//             last munmaps, each followed by the view (a second CUDA context maps 2 MiB more).
//   counters: the shim's diagnostic counters around a few known calls (VGPU_SHIM_COUNT).
//   delta: calls of the made-up test branch (tests/unit/core/delta_branch.h).
//   gpus: what the tenant learns of the node's GPUs and whether it attaches the second one
//         (fake driver with FAKENV_GPUS=2): CARD_INFO entries, GET_PROBED_IDS / GET_ATTACHED_IDS
//         ids, GET_ID_INFO_V2 / ATTACH_IDS / ATTACH_GPUS_TO_FD of GPU 1, own ATTACH_IDS.
//   sysmem N: N class-0x3e system memory allocations of 256 MiB; what the fake driver holds.
//   xfer: an XFER-wrapped 2 MiB allocation, then an XFER-wrapped control whose 32 bytes read
//         as NVOS21 allocate 96 MiB (security review F2): what the fake driver holds each time.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/core/delta_branch.h"

typedef struct {
  uint32_t h_root, h_parent, h_new, h_class;
  uint64_t params, rights;
  uint32_t params_size, flags, status, pad;
} Nvos64;
typedef struct {
  uint32_t h_client, h_object, cmd, flags;
  uint64_t params;
  uint32_t params_size, status;
} Nvos54;
typedef struct {
  uint32_t h_root, h_parent, h_old, status;
} Nvos00;

static int ctl = -1;
static uint32_t client = 0;
#define DEVICE 0x5c000001u
#define SUBDEVICE 0x5c000002u
#define MEM0 0x5c001000u

static uint32_t Alloc(uint32_t parent, uint32_t handle, uint32_t cls, void* params) {
  Nvos64 a = {client, parent, handle, cls, (uint64_t)(uintptr_t)params, 0, 0, 0, 0, 0};
  if (ioctl(ctl, 0xC030462Bul, &a) != 0) {
    printf("ioctl alloc errno=%d\n", errno);
    return 0xffff;
  }
  if (cls == 0x41 && a.status == 0) client = a.h_new;
  return a.status;
}

static uint32_t FreeObj(uint32_t parent, uint32_t handle) {
  Nvos00 f = {client, parent, handle, 0};
  if (ioctl(ctl, 0xC0104629ul, &f) != 0) return 0xffff;
  return f.status;
}

// Up to `max` allocations of class `cls` (NV_MEMORY_ALLOCATION_PARAMS, size @64) under the
// device, handles from `base`, until the first refusal (its status in *status): how many passed.
static int AllocUntilRefused(uint32_t cls, uint32_t base, uint64_t size, int max,
                             uint32_t* status) {
  int n = 0;
  *status = 0;
  for (; n < max; n++) {
    uint8_t mp[128] = {0};
    memcpy(mp + 64, &size, 8);
    *status = Alloc(DEVICE, base + n, cls, mp);
    if (*status != 0) break;
  }
  return n;
}

static void ViewBy(uint32_t cmd, const char* when) {
  uint8_t p[1028];
  memset(p, 0, sizeof p);
  uint32_t idx[3] = {0x09, 0x16, 0x10};
  uint32_t n = 3;
  memcpy(p, &n, 4);
  for (int i = 0; i < 3; i++) memcpy(p + 4 + 8 * i, &idx[i], 4);
  Nvos54 c = {client, SUBDEVICE, cmd, 0, (uint64_t)(uintptr_t)p, sizeof p, 0};
  int rc = ioctl(ctl, 0xC020462Aul, &c);
  uint32_t heap, freek;
  memcpy(&heap, p + 8, 4);
  memcpy(&freek, p + 16, 4);
  printf("VIEW %s rc=%d status=0x%x total=%llu free=%llu\n", when, rc, c.status,
         (unsigned long long)heap << 10, (unsigned long long)freek << 10);
}

static void View(const char* when) { ViewBy(0x20801303u, when); }

static uint32_t Control(uint32_t cmd, void* params, uint32_t size) {
  Nvos54 c = {client, client, cmd, 0, (uint64_t)(uintptr_t)params, size, 0};
  if (ioctl(ctl, 0xC020462Aul, &c) != 0) return 0xffff;
  return c.status;
}

// How many ids an INVALID-terminated gpuIds[32] names.
static int IdCount(const uint32_t* ids) {
  int n = 0;
  while (n < 32 && ids[n] != 0xffffffffu) n++;
  return n;
}

// F11.3 in shim mode: the second GPU of the fake node (its id from the fake driver, since a
// confined CARD_INFO no longer names it) must be neither listed nor described nor attached.
static int Gpus(void) {
  uint32_t (*gpu_id)(uint32_t) = (uint32_t(*)(uint32_t))dlsym(RTLD_DEFAULT, "vshim_fakenv_gpu_id");
  uint32_t (*attached)(void) = (uint32_t(*)(void))dlsym(RTLD_DEFAULT, "vshim_fakenv_attached_mask");
  if (gpu_id == NULL || attached == NULL) return 1;
  const uint32_t mine = gpu_id(0), other = gpu_id(1);
  uint8_t ci[32 * 72];
  memset(ci, 0, sizeof ci);
  int rc = ioctl(ctl, 0xC90046C8ul, ci);  // NV_ESC_CARD_INFO, 32 entries
  int cards = 0;
  for (int i = 0; i < 32; i++) cards += ci[72 * i] != 0;
  uint32_t first = 0;
  memcpy(&first, ci + 16, 4);
  printf("CARD_INFO rc=%d entries=%d first=0x%x own=%d\n", rc, cards, first, first == mine);
  uint32_t probed[96], listed[32];
  memset(probed, 0, sizeof probed);
  uint32_t st = Control(0x214, probed, sizeof probed);  // GET_PROBED_IDS
  printf("PROBED status=0x%x n=%d\n", st, IdCount(probed));
  uint32_t own_attach[33] = {mine, 0xffffffffu};
  printf("ATTACH_OWN status=0x%x\n", Control(0x215, own_attach, sizeof own_attach));
  uint32_t info[8] = {other};
  printf("ID_INFO_OTHER status=0x%x\n", Control(0x205, info, sizeof info));
  uint32_t attach[33] = {other, 0xffffffffu};
  st = Control(0x215, attach, sizeof attach);
  uint32_t all[33] = {0xffffu, 0xffffffffu};  // ATTACH_ALL_PROBED_IDS
  uint32_t st_all = Control(0x215, all, sizeof all);
  uint32_t ids[32] = {other};
  rc = ioctl(ctl, 0xC08046D4ul, ids);  // NV_ESC_ATTACH_GPUS_TO_FD, 32 ids
  printf("ATTACH_OTHER status=0x%x all=0x%x to_fd rc=%d errno=%d other_attached=%u\n", st, st_all,
         rc, rc ? errno : 0, (attached() >> 1) & 1);
  memset(listed, 0, sizeof listed);
  st = Control(0x201, listed, sizeof listed);  // GET_ATTACHED_IDS
  printf("ATTACHED status=0x%x n=%d\n", st, IdCount(listed));
  return 0;
}

// F10 in shim mode: 256 MiB class-0x3e allocations until refused (or N).
static int Sysmem(int max) {
  uint64_t (*held)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "vshim_fakenv_sysmem_bytes");
  if (held == NULL) return 1;
  uint32_t status = 0;
  int n = AllocUntilRefused(0x3e, 0x5c003000u, 256ull << 20, max, &status);
  printf("SYSMEM n=%d last_status=0x%x driver_mib=%llu\n", n, status,
         (unsigned long long)(held() >> 20));
  return 0;
}

static int Setup(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/nvidiactl", getenv("VGPU_DEV_DIR"));
  ctl = open(path, O_RDWR | O_CLOEXEC);
  if (ctl < 0) {
    printf("OPEN fail errno=%d\n", errno);
    return -1;
  }
  uint8_t client_params[120] = {0};
  uint8_t dev_params[56] = {0};
  uint32_t sub_params = 0;
  if (Alloc(0, 0, 0x41, client_params) || Alloc(client, DEVICE, 0x80, dev_params) ||
      Alloc(DEVICE, SUBDEVICE, 0x2080, &sub_params)) {
    printf("SETUP fail\n");
    return -1;
  }
  return 0;
}

static uint32_t mem_base = MEM0;

static int AllocMem(int max) {
  uint32_t status = 0;
  int n = AllocUntilRefused(0x40, mem_base, 2u << 20, max, &status);
  printf("ALLOCS n=%d last_status=0x%x\n", n, status);
  return n;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "quota";
  setvbuf(stdout, NULL, _IONBF, 0);
  if (strcmp(mode, "managed") == 0) {
    char path[512];
    snprintf(path, sizeof path, "%s/nvidia-uvm", getenv("VGPU_DEV_DIR"));
    int uvm = open(path, O_RDWR | O_CLOEXEC);
    // libcuda's context mapping is 2 MiB; so is a second context's.
    for (int i = 0; i < 2; i++) {
      void* p = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_SHARED, uvm, 0);
      printf("MANAGED%d %s errno=%d\n", i, p == MAP_FAILED ? "fail" : "ok",
             p == MAP_FAILED ? errno : 0);
    }
    return 0;
  }
  if (Setup() != 0) return 1;
  if (strcmp(mode, "contexts") == 0) {
    char path[512];
    snprintf(path, sizeof path, "%s/nvidia-uvm", getenv("VGPU_DEV_DIR"));
    int uvm = open(path, O_RDWR | O_CLOEXEC);
    void* maps[8];
    int n = 0;
    for (; n < 8; n++) {
      maps[n] = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_SHARED, uvm, 0);
      if (maps[n] == MAP_FAILED) break;
    }
    printf("CONTEXTS mapped=%d errno=%d\n", n, n < 8 ? errno : 0);
    View("mapped");
    if (n < 4) return 0;
    munmap(maps[1], 2u << 20);
    View("unmapped");
    munmap(maps[2], 1u << 20);
    View("half-unmapped");
    void* r = mremap(maps[3], 2u << 20, 1u << 20, 0);
    printf("MREMAP shrink %s\n", r == maps[3] ? "ok" : "fail");
    View("shrunk");
    close(uvm);
    View("fd-closed");
    munmap((char*)maps[2] + (1u << 20), 1u << 20);
    munmap(maps[3], 1u << 20);
    munmap(maps[0], 2u << 20);
    for (int i = 4; i < n; i++) munmap(maps[i], 2u << 20);
    View("all-unmapped");
    return 0;
  }
  if (strcmp(mode, "fork") == 0) {
    // Parent 10 x 2 MiB; a fork child 5 more (its own ledger member), shown while it lives,
    // then gone from the slot once it exits.
    AllocMem(10);
    int ready[2], done[2];
    if (pipe(ready) != 0 || pipe(done) != 0) return 1;
    pid_t child = fork();
    if (child == 0) {
      mem_base = MEM0 + 0x100;  // handles of its own, as a real child's allocations would be
      AllocMem(5);
      char c = 'r';
      if (write(ready[1], &c, 1) != 1) _exit(1);
      if (read(done[0], &c, 1) != 1) _exit(1);
      exit(0);  // normal exit: the shim's destructor leaves the slot
    }
    char c;
    if (read(ready[0], &c, 1) != 1) return 1;
    View("child-alive");
    c = 'd';
    if (write(done[1], &c, 1) != 1) return 1;
    int st;
    waitpid(child, &st, 0);
    View("child-exited");
    return 0;
  }
  if (strcmp(mode, "vfork") == 0) {
    // CPython's subprocess: a vfork child closes every fd above 2 and execs. It shares our
    // memory, so the shim must not treat its closes as the parent's.
    AllocMem(10);
    pid_t child = vfork();
    if (child == 0) {
      close_range(3, ~0u, 0);
      close(ctl);
      dup2(2, 1);
      execl("/bin/true", "true", (char*)NULL);
      _exit(127);
    }
    int st;
    waitpid(child, &st, 0);
    View("after-vfork");
    mem_base = MEM0 + 0x100;
    AllocMem(100);
    return 0;
  }
  if (strcmp(mode, "closerange") == 0) {
    // The ctl fd goes away through close_range (no close() call); a socket then takes its
    // number and must not be filtered as a ctl file.
    int old = ctl;
    AllocMem(5);
    close_range((unsigned)ctl, (unsigned)ctl, 0);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    int n = -1;
    int rc = ioctl(old == sv[0] ? sv[0] : sv[1], FIONREAD, &n);
    printf("REUSED %d SOCKET_IOCTL rc=%d n=%d\n", old == sv[0] || old == sv[1], rc, n);
    return 0;
  }
  if (strcmp(mode, "delta") == 0) {
    // Over the made-up test branch (tests/unit/core/delta_branch.h, NOT a driver branch):
    // 4 x 2 MiB, the view through its renumbered FB_GET_INFO_V2 and through the old number, a
    // TSG and a channel of its new classes, then the TSG and the client freed.
    AllocMem(4);
    ViewBy(DELTA_TEST_CTRL_FB_GET_INFO_V2, "delta");
    ViewBy(0x20801303u, "old-number");
    uint8_t tsg_params[20] = {0};
    uint32_t engine = 1;
    memcpy(tsg_params + 12, &engine, 4);
    uint8_t ch_params[368] = {0};
    printf("TSG 0x%x\n", Alloc(DEVICE, 0x5c002000u, DELTA_TEST_CLASS_TSG, tsg_params));
    printf("CHANNEL 0x%x\n", Alloc(0x5c002000u, 0x5c002001u, DELTA_TEST_CLASS_CHANNEL, ch_params));
    printf("FREE_TSG 0x%x\n", FreeObj(DEVICE, 0x5c002000u));
    printf("FREE_CLIENT 0x%x\n", FreeObj(client, client));
    return 0;
  }
  if (strcmp(mode, "tsg") == 0) {
    // A TSG on GR0 with one channel (nvidia-rm-abi.md §6.1, §6.3), then the TSG freed, then the
    // client.
    uint8_t tsg_params[20] = {0};
    uint32_t engine = 1;
    memcpy(tsg_params + 12, &engine, 4);
    uint8_t ch_params[368] = {0};
    printf("TSG 0x%x\n", Alloc(DEVICE, 0x5c002000u, 0xa06c, tsg_params));
    printf("CHANNEL 0x%x\n", Alloc(0x5c002000u, 0x5c002001u, 0xc86f, ch_params));
    printf("FREE_TSG 0x%x\n", FreeObj(DEVICE, 0x5c002000u));
    printf("FREE_CLIENT 0x%x\n", FreeObj(client, client));
    return 0;
  }
  if (strcmp(mode, "counters") == 0) {
    // vshim_get_counters (shim/include/vshim_diag.h) around 3 pipe ioctls, 2 RM allocations,
    // one mmap and an open/close pair: the differences are what the wrappers saw.
    typedef struct {
      uint64_t ioctls, nvidia_ioctls, mmaps, opens, closes;
      uint32_t enabled, reserved;
    } Counters;
    int (*get)(Counters*) = (int (*)(Counters*))dlsym(RTLD_DEFAULT, "vshim_get_counters");
    if (get == NULL) {
      printf("COUNTERS none\n");
      return 0;
    }
    Counters a, b;
    get(&a);
    int p[2], n = 0;
    if (pipe(p) != 0) return 1;
    for (int i = 0; i < 3; i++) ioctl(p[0], FIONREAD, &n);
    AllocMem(2);
    void* m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int fd = open("/dev/null", O_RDONLY);
    close(fd);
    get(&b);
    printf("COUNTERS enabled=%u ioctls=%llu nvidia=%llu mmaps=%llu opens=%llu closes=%llu\n",
           b.enabled, (unsigned long long)(b.ioctls - a.ioctls),
           (unsigned long long)(b.nvidia_ioctls - a.nvidia_ioctls),
           (unsigned long long)(b.mmaps - a.mmaps), (unsigned long long)(b.opens - a.opens),
           (unsigned long long)(b.closes - a.closes));
    munmap(m, 4096);
    return 0;
  }
  if (strcmp(mode, "gpus") == 0) return Gpus();
  if (strcmp(mode, "sysmem") == 0) return Sysmem(argc > 2 ? atoi(argv[2]) : 1000);
  if (strcmp(mode, "xfer") == 0) {
    uint64_t (*used)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "vshim_fakenv_used_bytes");
    if (used == NULL) return 1;
    typedef struct {
      uint32_t cmd, size;
      uint64_t ptr;
    } Xfer;
    // A plain XFER-wrapped RM_ALLOC (NVOS64): the filter must see and charge it.
    uint8_t mp[128] = {0};
    uint64_t size = 2u << 20;
    memcpy(mp + 64, &size, 8);
    Nvos64 a = {client, DEVICE, MEM0, 0x40, (uint64_t)(uintptr_t)mp, 0, 0, 0, 0, 0};
    Xfer x = {0x2b, sizeof a, (uint64_t)(uintptr_t)&a};
    int rc = ioctl(ctl, 0xC01046D3ul, &x);
    printf("XFER_ALLOC rc=%d status=0x%x driver_mib=%llu\n", rc, a.status,
           (unsigned long long)(used() >> 20));
    View("xfer-alloc");
    // NVOS21 {client, DEVICE, 0x101, 0x40, &mp, 0, status}: read as NVOS54 it is control 0x101
    // (NV0000 GET_BUILD_VERSION, any size) on the device; as NVOS21 an allocation of 96 MiB.
    uint8_t big[128] = {0};
    uint64_t big_size = 96u << 20;
    memcpy(big + 64, &big_size, 8);
    uint32_t nvos21[8] = {client, DEVICE, 0x101, 0x40, 0, 0, 0, 0};
    uint64_t p = (uint64_t)(uintptr_t)big;
    memcpy(&nvos21[4], &p, 8);
    Xfer y = {0x2a, sizeof nvos21, (uint64_t)(uintptr_t)nvos21};
    rc = ioctl(ctl, 0xC01046D3ul, &y);
    printf("XFER_SWAPPED rc=%d status=0x%x driver_mib=%llu\n", rc, nvos21[7],
           (unsigned long long)(used() >> 20));
    View("xfer-swapped");
    return 0;
  }
  if (strcmp(mode, "hold") == 0) {
    AllocMem(argc > 2 ? atoi(argv[2]) : 1);
    printf("READY\n");
    for (;;) pause();
  }
  int max = argc > 2 ? atoi(argv[2]) : 100000;
  View("before");
  int n = AllocMem(max);
  View("full");
  for (int i = 0; i < 3 && i < n; i++) FreeObj(DEVICE, MEM0 + i);
  View("freed3");
  FreeObj(client, client);  // client teardown refunds the rest
  printf("DONE\n");
  return 0;
}

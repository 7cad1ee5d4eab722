// libvgpu-compute-preload.so: the shim host's compute controller (shim/compute/ComputeHost) on
// its own, for measuring on a real GPU without the rest of libvgpu-shim.so. It interposes
// ioctl() only to learn RM clients, TSGs and channels from successful RM_ALLOC/RM_FREE replies
// on /dev/nvidiactl (NVOS64/NVOS21 layouts, nvidia-rm-abi.md §3, §6.3), exactly what the shim's
// hooks report, and issues the controller's RM controls on the owning ctl fd with a raw
// syscall (so they do not come back through this interposer).
//
// Environment:
//   VGPU_COMPUTE_SHARE, VGPU_COMPUTE_MODE (cap|weight), VGPU_COMPUTE_FOREIGN_SHARE,
//   VGPU_COMPUTE_LOG, VGPU_COMPUTE_CLOCK, VGPU_COMPUTE_REF_CLOCK_MHZ,
//   VGPU_COMPUTE_CLOCK_SCALING_PM
//                          as in shim/compute/compute_shim.cc;
//   VGPU_COMPUTE_CTL_FILE  a file polled every 20 ms; its content "<share> <cap|weight>" is
//                          applied when it changes (the benchmark drives its phases this way).
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "shim/compute/compute_host.h"

namespace {

namespace vc = vgpu::shim::compute;

constexpr unsigned kEscRmFree = 0x29;
constexpr unsigned kEscRmControl = 0x2a;
constexpr uint32_t kCtrlTsgGpfifoSchedule = 0xa06c0101;
constexpr unsigned kEscRmAlloc = 0x2b;

std::mutex mu;                      // guards client_fd, host creation
std::map<uint32_t, int> client_fd;  // RM client -> ctl fd it was allocated on
vc::ComputeHost* host = nullptr;
pid_t host_pid = 0;

uint32_t Load32(const void* p, size_t off) {
  uint32_t v;
  memcpy(&v, static_cast<const uint8_t*>(p) + off, 4);
  return v;
}

int RawIoctl(int fd, unsigned long req, void* arg) {
  return static_cast<int>(syscall(SYS_ioctl, fd, req, arg));
}

int RmControl(void*, uint32_t h_client, uint32_t h_object, uint32_t cmd, void* params,
              uint32_t size, uint32_t* status) {
  int fd;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = client_fd.find(h_client);
    if (it == client_fd.end()) {
      return -EBADF;
    }
    fd = it->second;
  }
  struct {
    uint32_t h_client, h_object, cmd, flags;
    uint64_t params;
    uint32_t params_size, status;
  } p{h_client, h_object, cmd, 0, reinterpret_cast<uint64_t>(params), size, 0};
  static_assert(sizeof p == 32);
  const int rc = RawIoctl(fd, 0xC020462AUL, &p);
  *status = p.status;
  return rc < 0 ? -errno : 0;
}

void* CtlFileThread(void*) {
  const char* path = getenv("VGPU_COMPUTE_CTL_FILE");
  char last[64] = "";
  while (path != nullptr) {
    char buf[64] = "";
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = read(fd, buf, sizeof buf - 1);
      close(fd);
      buf[n > 0 ? n : 0] = '\0';
    }
    if (buf[0] != '\0' && strcmp(buf, last) != 0) {
      unsigned share = 0;
      char mode[16] = "";
      if (sscanf(buf, "%u %15s", &share, mode) == 2 && share >= 1 && share <= 100) {
        host->Set(share,
                  strcmp(mode, "weight") == 0 ? VCORE_SCHED_MODE_WEIGHT : VCORE_SCHED_MODE_CAP);
        snprintf(last, sizeof last, "%s", buf);
      }
    }
    usleep(20000);
  }
  return nullptr;
}

void EnsureHost() {
  if (host != nullptr) {
    return;
  }
  vc::ComputeConfig cfg;
  const char* share = getenv("VGPU_COMPUTE_SHARE");
  cfg.share = share != nullptr ? static_cast<uint32_t>(atoi(share)) : 100;
  if (cfg.share < 1 || cfg.share > 100) {
    cfg.share = 100;
  }
  const char* mode = getenv("VGPU_COMPUTE_MODE");
  cfg.mode = mode != nullptr && strcmp(mode, "weight") == 0 ? VCORE_SCHED_MODE_WEIGHT
                                                            : VCORE_SCHED_MODE_CAP;
  if (const char* f = getenv("VGPU_COMPUTE_FOREIGN_SHARE")) {
    cfg.foreign_share = static_cast<uint32_t>(atoi(f));
  }
  if (const char* log = getenv("VGPU_COMPUTE_LOG")) {
    cfg.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (const char* settle = getenv("VGPU_COMPUTE_SETTLE_MS")) {
    cfg.settle_ns = static_cast<uint64_t>(atoi(settle)) * 1'000'000;
  }
  if (const char* ref = getenv("VGPU_COMPUTE_REF_CLOCK_MHZ")) {
    cfg.ref_clock_mhz = static_cast<uint32_t>(atoi(ref));
  }
  if (const char* c = getenv("VGPU_COMPUTE_CLOCK_SCALING_PM")) {
    cfg.clock_scaling_pm = static_cast<uint32_t>(atoi(c));
  }
  const char* clk = getenv("VGPU_COMPUTE_CLOCK");
  if (clk == nullptr || strcmp(clk, "off") != 0) {
    cfg.clock = new vc::NvmlClock();  // lives as long as the process
  }
  host = new vc::ComputeHost(cfg, RmControl, nullptr);
  host_pid = getpid();
  host->Start();
  if (getenv("VGPU_COMPUTE_CTL_FILE") != nullptr) {
    pthread_t t;
    pthread_create(&t, nullptr, CtlFileThread, nullptr);
    pthread_detach(t);
  }
}

void AfterAlloc(int fd, const void* arg, unsigned size) {
  if (Load32(arg, size == 48 ? 40 : 28) != 0) {
    return;  // RM refused: nothing allocated
  }
  const uint32_t root = Load32(arg, 0), parent = Load32(arg, 4), obj = Load32(arg, 8);
  const uint32_t cls = Load32(arg, 12);
  if (cls == 0x0 || cls == 0x1 || cls == 0x41) {
    std::lock_guard<std::mutex> lock(mu);
    client_fd[obj] = fd;
    EnsureHost();
    return;
  }
  // Host calls happen without `mu`: the control thread takes its own lock, then `mu` (RmControl).
  vc::ComputeHost* h;
  {
    std::lock_guard<std::mutex> lock(mu);
    h = host;
  }
  if (h == nullptr) {
    return;
  }
  if (cls == 0x2080) {
    h->OnSubdevice(root, parent, obj);
  } else if (cls == 0xa06c) {
    uint64_t params;
    memcpy(&params, static_cast<const uint8_t*>(arg) + 16, 8);
    const uint32_t engine = params >= 4096 ? Load32(reinterpret_cast<const void*>(params), 12) : 0;
    h->OnTsg(root, parent, obj, engine);
  } else if ((cls & 0xff) == 0x6f && cls >= 0xc36f && cls <= 0xcfff) {
    h->OnChannel(root, parent, obj);
  }
}

void AfterFree(const void* arg) {
  if (Load32(arg, 12) != 0 || host == nullptr) {
    return;
  }
  const uint32_t root = Load32(arg, 0), obj = Load32(arg, 8);
  if (obj == root) {
    host->OnClientGone(root);
    std::lock_guard<std::mutex> lock(mu);
    client_fd.erase(root);
  } else {
    host->OnTsgFreed(root, obj);
    host->OnChannelFreed(root, obj);
  }
}

// NVA06C_CTRL_CMD_GPFIFO_SCHEDULE succeeded on a TSG: the host controls it from now on
// (compute_objects.cc, "Scheduled TSGs only").
void AfterControl(const void* arg) {
  if (Load32(arg, 8) != kCtrlTsgGpfifoSchedule || Load32(arg, 28) != 0 || Load32(arg, 24) < 1 ||
      host == nullptr) {
    return;
  }
  uint64_t params;
  memcpy(&params, static_cast<const uint8_t*>(arg) + 16, 8);
  if (params >= 4096) {
    host->OnTsgScheduled(Load32(arg, 0), Load32(arg, 4),
                         *reinterpret_cast<const uint8_t*>(params) != 0);
  }
}

__attribute__((destructor)) void Fini() {
  if (host != nullptr && host_pid == getpid()) {
    host->Stop();
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  const int rc = RawIoctl(fd, req, arg);
  const unsigned nr = req & 0xff, size = (req >> 16) & 0x3fff, type = (req >> 8) & 0xff;
  if (rc == 0 && type == 'F' && arg != nullptr) {
    if (nr == kEscRmAlloc && (size == 48 || size == 32)) {
      AfterAlloc(fd, arg, size);
    } else if (nr == kEscRmFree && size == 16) {
      AfterFree(arg);
    } else if (nr == kEscRmControl && size == 32) {
      AfterControl(arg);
    }
  }
  return rc;  // syscall() already set errno on failure
}

// libvshim-fakecompute.so: the compute controls of a fake RM, for the end-to-end test of the
// compute thread inside libvgpu-shim.so. Preloaded after the shim and before the shim's own
// fake driver (tests/unit/shim/fake_nv.cc), it answers the controls the compute thread issues
// (GET_CHILD_HANDLE, FIFO_DISABLE_CHANNELS, PREEMPT, SET_TIMESLICE, perfmon samples) on files
// under $VGPU_DEV_DIR and passes everything else on. Each control is appended as one line to
// $VGPU_FAKE_COMPUTE_OUT. The modelled GPU is one saturating tenant: busy while its channels are
// enabled, perfmon samples every 20 ms naming this process.
#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

namespace {

std::mutex mu;  // guards everything below
uint32_t subdevice = 0;
bool enabled = true;
uint64_t last_ns = 0, sample_start = 0, busy_in_sample = 0;
std::deque<std::pair<uint64_t, uint32_t>> samples;  // (epoch ns, util 0.01 %)

uint64_t Now(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool IsFake(int fd) {
  const char* dir = getenv("VGPU_DEV_DIR");
  char link[64], target[512];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (dir == nullptr || n <= 0) {
    return false;
  }
  target[n] = '\0';
  return strncmp(target, dir, strlen(dir)) == 0;
}

void Log(const char* fmt, ...) {
  const char* path = getenv("VGPU_FAKE_COMPUTE_OUT");
  if (path == nullptr) {
    return;
  }
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return;
  }
  char line[128];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0) {
    (void)!write(fd, line, static_cast<size_t>(n));
  }
  close(fd);
}

// Closes 20 ms samples up to now (lock held).
void Advance() {
  const uint64_t now = Now(CLOCK_REALTIME);
  if (last_ns == 0) {
    last_ns = sample_start = now;
    return;
  }
  if (enabled) {
    busy_in_sample += now - last_ns;
  }
  last_ns = now;
  while (now - sample_start >= 20000000) {
    sample_start += 20000000;
    samples.push_back({sample_start, static_cast<uint32_t>(busy_in_sample * 10000 / 20000000)});
    busy_in_sample = 0;
    if (samples.size() > 72) {
      samples.pop_front();
    }
  }
}

// Returns true if handled.
bool Control(void* a) {
  uint32_t cmd, size;
  uint64_t params;
  memcpy(&cmd, static_cast<uint8_t*>(a) + 8, 4);
  memcpy(&params, static_cast<uint8_t*>(a) + 16, 8);
  memcpy(&size, static_cast<uint8_t*>(a) + 24, 4);
  auto* p = reinterpret_cast<uint8_t*>(params);
  uint32_t status = 0;
  std::lock_guard<std::mutex> lock(mu);
  Advance();
  switch (cmd) {
    case 0xd05:  // NV0000_CTRL_CMD_CLIENT_GET_CHILD_HANDLE
      memcpy(p + 8, &subdevice, 4);
      Log("child %#x\n", subdevice);
      break;
    case 0x2080110b:  // FIFO_DISABLE_CHANNELS
      if (size != 536) {
        status = 0x1f;
        break;
      }
      enabled = p[0] == 0;
      uint32_t n;
      memcpy(&n, p + 4, 4);
      Log("disable %u only_sched=%u channels=%u\n", p[0], p[8], n);
      break;
    case 0xa06c0105:  // PREEMPT
      Log("preempt wait=%u\n", p[0]);
      break;
    case 0xa06c0103: {  // SET_TIMESLICE
      uint64_t us;
      memcpy(&us, p, 8);
      Log("timeslice %llu\n", static_cast<unsigned long long>(us));
      break;
    }
    case 0x20802096: {  // PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2
      const uint32_t pid = static_cast<uint32_t>(getpid());
      memset(p + 16, 0, size - 16);
      uint32_t i = 0;
      for (const auto& s : samples) {
        uint8_t* e = p + 16 + static_cast<size_t>(i++) * 776;
        memcpy(e, &s.first, 8);
        memcpy(e + 136, &s.second, 4);
        memcpy(e + 144, &pid, 4);
      }
      Log("perfmon %u\n", i);
      break;
    }
    default:
      return false;
  }
  memcpy(static_cast<uint8_t*>(a) + 28, &status, 4);
  return true;
}

using IoctlFn = int (*)(int, unsigned long, ...);

}  // namespace

extern "C" __attribute__((visibility("default"))) int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  static IoctlFn next = reinterpret_cast<IoctlFn>(dlsym(RTLD_NEXT, "ioctl"));
  const uint32_t nr = req & 0xff, size = (req >> 16) & 0x3fff;
  if (arg != nullptr && IsFake(fd)) {
    if (nr == 0x2a && size == 32 && Control(arg)) {
      return 0;
    }
  }
  const int rc = next(fd, req, arg);
  if (rc == 0 && arg != nullptr && nr == 0x2b && size == 48) {
    uint32_t cls, status, h;
    memcpy(&cls, static_cast<uint8_t*>(arg) + 12, 4);
    memcpy(&h, static_cast<uint8_t*>(arg) + 8, 4);
    memcpy(&status, static_cast<uint8_t*>(arg) + 40, 4);
    if (cls == 0x2080 && status == 0) {
      std::lock_guard<std::mutex> lock(mu);
      subdevice = h;
    }
  }
  return rc;
}

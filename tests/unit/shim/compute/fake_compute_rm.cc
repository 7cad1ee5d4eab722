// libvshim-fakecompute.so: the compute controls of a fake RM, for the end-to-end test of the
// compute thread inside libvgpu-shim.so. Preloaded after the shim and before the shim's own
// fake driver (tests/unit/shim/fake_nv.cc), it answers the controls the compute thread issues
// (GET_CHILD_HANDLE, FIFO_DISABLE_CHANNELS, PREEMPT, SET_TIMESLICE, perfmon samples) on files
// under $VGPU_DEV_DIR and passes everything else on. Each control is appended as one line to
// $VGPU_FAKE_COMPUTE_OUT. The modelled GPU is one saturating tenant: busy while its GR TSG is
// scheduled and its channels are enabled, perfmon samples every 20 ms naming this process.
// It keeps what the H200 showed of a TSG that is not scheduled yet (GPFIFO_SCHEDULE(bEnable=1)
// comes at the end of libcuda's context setup, nvidia-rm-abi.md §6.1): a PREEMPT(bWait=1) of it
// waits (4 s there, 200 ms here) and a DISABLE_CHANNELS of its channels leaves it never running
// (docs/results/compute-h200.md, run 5); both are logged as "... unscheduled".
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
#include <map>
#include <mutex>
#include <set>

namespace {

std::mutex mu;  // guards everything below
uint32_t subdevice = 0;
bool enabled = true;
std::map<uint32_t, uint32_t> tsg_engine;   // TSG -> engineType
std::map<uint32_t, uint32_t> channel_tsg;  // channel -> TSG
std::set<uint32_t> scheduled, broken;      // TSGs
uint64_t busy_total = 0, first_ns = 0;

bool GrRunning() {
  for (const auto& [tsg, engine] : tsg_engine) {
    if (engine == 1) {
      return scheduled.count(tsg) != 0 && broken.count(tsg) == 0;
    }
  }
  return false;
}
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
    last_ns = sample_start = first_ns = now;
    return;
  }
  if (enabled && GrRunning()) {
    busy_in_sample += now - last_ns;
    busy_total += now - last_ns;
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
  uint32_t cmd, size, object;
  memcpy(&object, static_cast<uint8_t*>(a) + 4, 4);
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
      for (uint32_t i = 0; i < n && i < 64; i++) {
        uint32_t ch;
        memcpy(&ch, p + 280 + 4 * i, 4);
        const auto it = channel_tsg.find(ch);
        if (p[0] != 0 && it != channel_tsg.end() && scheduled.count(it->second) == 0 &&
            broken.insert(it->second).second) {
          Log("disable unscheduled tsg=%#x\n", it->second);
        }
      }
      break;
    case 0xa06c0105:  // PREEMPT
      Log("preempt wait=%u\n", p[0]);
      if (scheduled.count(object) == 0) {
        Log("preempt unscheduled tsg=%#x\n", object);
        mu.unlock();
        usleep(200000);
        mu.lock();
      }
      break;
    case 0xa06c0101:  // GPFIFO_SCHEDULE
      if (p[0] != 0) {
        scheduled.insert(object);
      } else {
        scheduled.erase(object);
      }
      Log("schedule tsg=%#x enable=%u\n", object, p[0]);
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
    uint32_t cls, status, h, parent;
    uint64_t params;
    memcpy(&parent, static_cast<uint8_t*>(arg) + 4, 4);
    memcpy(&h, static_cast<uint8_t*>(arg) + 8, 4);
    memcpy(&cls, static_cast<uint8_t*>(arg) + 12, 4);
    memcpy(&params, static_cast<uint8_t*>(arg) + 16, 8);
    memcpy(&status, static_cast<uint8_t*>(arg) + 40, 4);
    std::lock_guard<std::mutex> lock(mu);
    if (status == 0 && cls == 0x2080) {
      subdevice = h;
    } else if (status == 0 && cls == 0xa06c && params != 0) {
      memcpy(&tsg_engine[h], reinterpret_cast<uint8_t*>(params) + 12, 4);
    } else if (status == 0 && cls == 0xc86f) {
      channel_tsg[h] = parent;
    }
  }
  return rc;
}

// The tenant's GPU time over its life, for the test to compare with its cap.
__attribute__((destructor)) static void ReportBusy() {
  std::lock_guard<std::mutex> lock(mu);
  Advance();
  if (first_ns != 0) {
    Log("busy_ms %llu of %llu\n", static_cast<unsigned long long>(busy_total / 1000000),
        static_cast<unsigned long long>((last_ns - first_ns) / 1000000));
  }
}

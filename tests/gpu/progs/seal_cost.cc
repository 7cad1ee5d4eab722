// What a sealed argument costs against the real driver, on a GPU machine where vgpu.ko cannot
// load (docs/security/kernel-call-path.md, "F2, the argument itself"). The module runs each RM
// escape the core decides on from a fresh per-call mapping of its own (kmod/seal.c: a file, a
// vm_mmap, the driver's faults on it, a vm_munmap, the file put). This program makes the nearest
// user-space analogue of that work around a real RM control and times it against the plain
// control, in interleaved rounds (min and median per call, and their ratios):
//   plain   NV2080_CTRL_CMD_FB_GET_INFO_V2 with its NVOS54 and params on the stack;
//   sealed  the same control with NVOS54 and params copied into a fresh memfd page mapped shared
//           (memfd_create, ftruncate, mmap, the store's fault), the reply copied back, then
//           munmap and close.
// Each variant runs twice: alone, and with a sibling thread spinning on another CPU, as in every
// CUDA process (an munmap then shoots the sibling's TLB down). An analogue, not the module: the
// kernel side skips the syscall entries and file-descriptor work but adds a second fault (the
// driver's copy-out, pfn_mkwrite).
//   usage: seal-cost [ROUNDS] [CALLS]   (defaults 201 rounds of 200 calls per variant)
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/gpu/progs/rm_session.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Target {
  int ctl;
  uint32_t client, subdevice;
};

nvos54 ControlArgs(const Target& t, void* params, uint32_t size) {
  nvos54 p{};
  p.hClient = t.client;
  p.hObject = t.subdevice;
  p.cmd = NV2080_CTRL_CMD_FB_GET_INFO_V2;
  p.params = nvsim_test::Ptr(params);
  p.paramsSize = size;
  return p;
}

bool Plain(const Target& t) {
  nv2080_fb_get_info_v2_params fb{};
  fb.fbInfoListSize = 1;
  fb.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  nvos54 p = ControlArgs(t, &fb, sizeof(fb));
  return nvsim_test::RawIoctl(t.ctl, NV_ESC_RM_CONTROL, &p, sizeof(p)).ret == 0 &&
         p.status == NV_OK;
}

// The seal's analogue: the argument and the params on one fresh shared page of a new file.
bool Sealed(const Target& t) {
  nv2080_fb_get_info_v2_params fb{};
  fb.fbInfoListSize = 1;
  fb.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  const size_t page = 4096;
  int fd = memfd_create("seal", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, page)) return false;
  auto* at =
      static_cast<unsigned char*>(mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  bool ok = at != MAP_FAILED;
  if (ok) {
    auto* sealed_fb = reinterpret_cast<nv2080_fb_get_info_v2_params*>(at + 64);
    std::memcpy(sealed_fb, &fb, sizeof(fb));
    nvos54 p = ControlArgs(t, sealed_fb, sizeof(fb));
    std::memcpy(at, &p, sizeof(p));
    ok = nvsim_test::RawIoctl(t.ctl, NV_ESC_RM_CONTROL, at, sizeof(p)).ret == 0;
    std::memcpy(&p, at, sizeof(p));
    std::memcpy(&fb, sealed_fb, sizeof(fb));
    ok = ok && p.status == NV_OK;
    munmap(at, page);
  }
  close(fd);
  return ok;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-call microseconds of @calls calls of @fn; negative if a call failed.
template <typename Fn>
double Round(Fn fn, const Target& t, int calls) {
  auto t0 = Clock::now();
  for (int i = 0; i < calls; i++)
    if (!fn(t)) return -1;
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
}

int Measure(const Target& t, int rounds, int calls, const char* setting) {
  std::vector<double> plain, sealed;
  for (int r = 0; r < rounds; r++) {  // interleaved, the order alternating
    double a, b;
    if (r % 2) {
      b = Round(Sealed, t, calls);
      a = Round(Plain, t, calls);
    } else {
      a = Round(Plain, t, calls);
      b = Round(Sealed, t, calls);
    }
    if (a < 0 || b < 0) return std::printf("%s: a call failed\n", setting), 1;
    plain.push_back(a);
    sealed.push_back(b);
  }
  double pmin = *std::min_element(plain.begin(), plain.end());
  double smin = *std::min_element(sealed.begin(), sealed.end());
  double pmed = Median(plain), smed = Median(sealed);
  std::printf(
      "%-22s plain %7.2f / %7.2f us  sealed %7.2f / %7.2f us  ratio %5.2fx / %5.2fx"
      "  (min / median of %d rounds x %d calls)\n",
      setting, pmin, pmed, smin, smed, smin / pmin, smed / pmed, rounds, calls);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 201;
  int calls = argc > 2 ? std::atoi(argv[2]) : 200;
  rm_session::Rm rm;
  if (rounds < 1 || calls < 1 || !rm.Open()) return 1;
  Target t{rm.ctl, rm.client, rm.subdevice};
  int rc = Measure(t, rounds, calls, "one thread");
  std::atomic<bool> stop{false};
  std::thread sibling([&stop] {
    volatile unsigned long n = 0;
    while (!stop.load(std::memory_order_relaxed)) n = n + 1;
  });
  rc |= Measure(t, rounds, calls, "with a spinning sibling");
  stop = true;
  sibling.join();
  return rc;
}

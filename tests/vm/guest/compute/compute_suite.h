// What the compute suite's tests share (compute_test.cc, parts/compute_gate.cc): nvsim's debugfs
// view of a GPU (the model's clock, every TSG, the contract counters), shares and stall allowances
// computed from two such views, a slot that is destroyed at scope exit, and the fixtures.
// compute_test.cc's top says why the assertions are what they are.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "compute_tenant.h"
#include "vgpu/kmodclient.h"

namespace compute_test {

inline constexpr double kBound = 5.0;  // points (docs/results/compute-kernel-host.md)

inline std::vector<uint32_t> EnvList(const char* name, std::vector<uint32_t> def) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  std::vector<uint32_t> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoul(item));
  return out;
}

inline uint32_t EnvU32(const char* name, uint32_t def) {
  const char* v = getenv(name);
  return v && *v ? std::stoul(v) : def;
}

inline void Log(const std::string& line) {
  printf("%s\n", line.c_str());
  fflush(stdout);
  const char* out = getenv("OUT");
  if (out) std::ofstream(std::string(out) + "/compute_results.txt", std::ios::app) << line << '\n';
}

inline void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// One read of /sys/kernel/debug/nvsim/gpuN (nvsim_sched.c): the model's clock and every TSG.
struct TsgRow {
  int pid = 0;
  uint32_t runnable = 0;
  uint64_t consumed = 0;
  uint64_t timeslice = 0;
  uint32_t scheduled = 0, wedged = 0, preempt_unscheduled = 0, preempt_calls = 0;
};
// nvsim's "contract" line: what a controller did that the real driver punishes (nvsim_sched.c).
struct Contract {
  uint64_t preempt_unscheduled = ~0ull, preempt_unscheduled_ms = ~0ull;
  uint64_t disable_unscheduled = ~0ull, wedged = ~0ull;
  // The gate's protocol: a re-enable with no PREEMPT returned since the disable (wedges the
  // TSG), and re-enables of channels that were not disabled.
  uint64_t enable_unpreempted = ~0ull, enable_undisabled = ~0ull;
};
struct GpuView {
  uint64_t model_ns = 0;  // busy + idle: the time the model has accounted
  std::map<std::pair<uint32_t, uint32_t>, TsgRow> tsgs;  // (hclient, htsg)
  Contract contract;
  bool Has(const Tenant& t) const { return tsgs.count({t.client(), t.tsg()}) != 0; }
  const TsgRow& Of(const Tenant& t) const { return tsgs.at({t.client(), t.tsg()}); }
};

inline GpuView ReadGpu(uint32_t gpu) {
  GpuView v;
  std::ifstream f("/sys/kernel/debug/nvsim/gpu" + std::to_string(gpu));
  std::string line, k1, k2;
  std::getline(f, line);  // vidmem
  uint64_t busy = 0, idle = 0;
  f >> k1 >> busy >> k2 >> idle;
  v.model_ns = busy + idle;
  std::getline(f, line);  // rest of that line
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    TsgRow r;
    unsigned hc = 0, ht = 0, eng = 0, pre = 0;
    unsigned long long ts = 0, cons = 0, c[6];
    if (sscanf(line.c_str(),
               "contract preempt_unscheduled %llu preempt_unscheduled_ms %llu "
               "disable_unscheduled %llu wedged %llu enable_unpreempted %llu "
               "enable_undisabled %llu",
               &c[0], &c[1], &c[2], &c[3], &c[4], &c[5]) == 6) {
      v.contract = {c[0], c[1], c[2], c[3], c[4], c[5]};
      continue;
    }
    if (sscanf(line.c_str(), "%d 0x%x 0x%x %u %llu %u %llu %u %u %u %u %u", &r.pid, &hc, &ht, &eng,
               &ts, &r.runnable, &cons, &pre, &r.scheduled, &r.wedged, &r.preempt_unscheduled,
               &r.preempt_calls) >= 8) {
      r.consumed = cons;
      r.timeslice = ts;
      v.tsgs[{hc, ht}] = r;
    }
  }
  return v;
}

// Percent of the model time between @a and @b that tenant @t ran.
inline double SharePct(const GpuView& a, const GpuView& b, const Tenant& t) {
  if (!a.Has(t) || !b.Has(t) || b.model_ns <= a.model_ns) return -1;
  return 100.0 * (b.Of(t).consumed - a.Of(t).consumed) / (b.model_ns - a.model_ns);
}

// Points of a window of @model_ns during which the controller thread lay stalled (capped at 10).
inline double LatePts(uint64_t late_ns, uint64_t model_ns) {
  return model_ns ? std::min(10.0, 100.0 * late_ns / model_ns) : 0;
}

inline std::string Pct(double v) {
  char b[16];
  snprintf(b, sizeof(b), "%.1f", v);
  return b;
}

// A slot for one tenant set, destroyed (deferred) at scope exit.
class Slot {
 public:
  Slot(vgpu::kmod::Client& nl, uint32_t gpu, uint32_t share, vgpu::kmod::ComputeMode mode,
       const std::string& name)
      : nl_(nl) {
    vgpu::kmod::SlotSpec spec;
    spec.gpu = gpu;
    spec.config.name = name;
    spec.config.compute_share = share;
    spec.config.compute_mode = mode;
    auto s = nl_.CreateSlot(spec);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) id_ = s->id;
  }
  ~Slot() {
    if (id_ >= 0) (void)nl_.DestroySlot(id_, VGPU_DEL_F_DEFER);
  }
  bool ok() const { return id_ >= 0; }
  uint32_t id() const { return id_; }
  vgpu::kmod::SlotInfo Get() {
    auto s = nl_.GetSlot(id_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : vgpu::kmod::SlotInfo{};
  }
  // The counter as sysfs shows it (one node of the slot stands for all).
  uint64_t Sysfs(const std::string& name) {
    std::ifstream f("/sys/class/vgpu/vgpuctl" + std::to_string(id_) + "/stats/" + name);
    uint64_t v = ~0ull;
    f >> v;
    return v;
  }
  void Forget() { id_ = -1; }

 private:
  vgpu::kmod::Client& nl_;
  int64_t id_ = -1;
};

// One measured window of @ms on @gpu: nvsim's model at both ends, and the points of it the
// slot's controller lay stalled (the allowance a share gets beyond its bound).
struct Window {
  GpuView v0, v1;
  double late_pts = 0;
  double Share(const Tenant& t) const { return SharePct(v0, v1, t); }
};
inline Window MeasureWindow(uint32_t gpu, Slot& slot, int ms) {
  Window w;
  w.v0 = ReadGpu(gpu);
  const uint64_t l0 = slot.Get().stats[VGPU_STAT_CONTROL_LATE_NS];
  SleepMs(ms);
  w.v1 = ReadGpu(gpu);
  const uint64_t l1 = slot.Get().stats[VGPU_STAT_CONTROL_LATE_NS];
  w.late_pts = LatePts(l1 - l0, w.v1.model_ns - w.v0.model_ns);
  return w;
}

class ComputeShares : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = vgpu::kmod::Client::Open();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    nl_ = std::move(c.value());
  }
  std::unique_ptr<Tenant> StartTenant(const Slot& s, uint32_t gpu) {
    std::string why;
    auto t = Tenant::Start(s.id(), gpu, &why);
    EXPECT_NE(t, nullptr) << "tenant on slot " << s.id() << ": " << why;
    return t;
  }
  // Polls until tenant @t's TSG is gated off (not runnable) or @ms pass.
  bool WaitGated(uint32_t gpu, const Tenant& t, int ms) {
    for (int i = 0; i < ms; ++i) {
      GpuView v = ReadGpu(gpu);
      if (v.Has(t) && !v.Of(t).runnable) return true;
      SleepMs(1);
    }
    return false;
  }
  std::unique_ptr<vgpu::kmod::Client> nl_;
};

// One RM session through slot @slot_id's nodes on GPU @gpu, with a GR TSG and one channel.
class ProxySession {
 public:
  std::string Open(uint32_t slot_id, uint32_t gpu) {
    ctl_ = open(("/dev/vgpuctl" + std::to_string(slot_id)).c_str(), O_RDWR | O_CLOEXEC);
    dev_ = open(("/dev/vgpu" + std::to_string(slot_id)).c_str(), O_RDWR | O_CLOEXEC);
    if (ctl_ < 0 || dev_ < 0) return "open: " + std::string(strerror(errno));
    nv_ioctl_register_fd r{ctl_};
    if (RawIoctl(dev_, NV_ESC_REGISTER_FD, &r, sizeof(r)).ret) return "REGISTER_FD";
    if (AllocClient(ctl_, &client_) != NV_OK) return "client";
    nv0080_alloc_params dp{};
    dp.deviceId = gpu;
    if (Alloc(ctl_, client_, client_, &device_, NV01_DEVICE_0, &dp) != NV_OK) return "device";
    uint32_t sub_id = 0;
    if (Alloc(ctl_, client_, device_, &sub_, NV20_SUBDEVICE_0, &sub_id) != NV_OK)
      return "subdevice";
    return "";
  }
  ~ProxySession() {
    if (dev_ >= 0) close(dev_);
    if (ctl_ >= 0) close(ctl_);
  }
  // A GR TSG under the device with one channel under it; scheduled if @schedule.
  std::string Tsg(uint32_t tsg, uint32_t ch, bool schedule) {
    nv_channel_group_alloc_params tp{};
    tp.engineType = 1;
    uint32_t h = tsg;
    if (Alloc(ctl_, client_, device_, &h, KEPLER_CHANNEL_GROUP_A, &tp) != NV_OK) return "TSG";
    uint8_t chp[368] = {};
    h = ch;
    if (Alloc(ctl_, client_, tsg, &h, 0xc86f, chp) != NV_OK) return "channel";
    nva06c_gpfifo_schedule_params sp{1, 0, 0};
    if (schedule && Ctl(tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sp, 3) != NV_OK) return "schedule";
    return "";
  }
  int64_t Ctl(uint32_t obj, uint32_t cmd, void* params, uint32_t size) {
    return Control(ctl_, client_, obj, cmd, params, size);
  }
  uint32_t client() const { return client_; }
  uint32_t sub() const { return sub_; }

 private:
  int ctl_ = -1, dev_ = -1;
  uint32_t client_ = 0, device_ = 0xd0000001, sub_ = 0xd0000002;
};

// Straight on nvsim (no vgpu.ko in between), for the tests that check nvsim's model of the
// driver's contract: the ctl and dev files of GPU kGpu, a client, its device and subdevice. The
// client (and everything under it) is freed and the files closed at the end of the test.
class NvsimContract : public ::testing::Test {
 protected:
  static constexpr uint32_t kGpu = 2;

  void SetUp() override {
    ctl_ = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
    dev_ = open(("/dev/nvidia" + std::to_string(kGpu)).c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(ctl_, 0);
    ASSERT_GE(dev_, 0);
    ASSERT_EQ(AllocClient(ctl_, &client_), NV_OK);
    nv0080_alloc_params dp{};
    dp.deviceId = kGpu;
    ASSERT_EQ(Alloc(ctl_, client_, client_, &device_, NV01_DEVICE_0, &dp), NV_OK);
    uint32_t sub_id = 0;
    ASSERT_EQ(Alloc(ctl_, client_, device_, &sub_, NV20_SUBDEVICE_0, &sub_id), NV_OK);
  }
  void TearDown() override {
    if (client_) {
      EXPECT_EQ(Free(ctl_, client_, client_, client_), NV_OK);
    }
    if (dev_ >= 0) close(dev_);
    if (ctl_ >= 0) close(ctl_);
  }
  // A GR TSG under the device with one channel (class 0xc86f) under it.
  void TsgWithChannel(uint32_t* tsg, uint32_t* ch) {
    nv_channel_group_alloc_params tp{};
    tp.engineType = 1;
    uint8_t chp[368] = {};
    ASSERT_EQ(Alloc(ctl_, client_, device_, tsg, KEPLER_CHANNEL_GROUP_A, &tp), NV_OK);
    ASSERT_EQ(Alloc(ctl_, client_, *tsg, ch, 0xc86f, chp), NV_OK);
  }
  int64_t Ctl(uint32_t obj, uint32_t cmd, void* params, uint32_t size) {
    return Control(ctl_, client_, obj, cmd, params, size);
  }
  // FIFO_DISABLE_CHANNELS(bOnlyDisableScheduling=1) of one channel, through the subdevice.
  int64_t DisableChannel(uint32_t ch, bool disable) {
    nv2080_fifo_disable_channels_params dc{};
    dc.bDisable = disable;
    dc.bOnlyDisableScheduling = 1;
    dc.numChannels = 1;
    dc.hClientList[0] = client_;
    dc.hChannelList[0] = ch;
    return Ctl(sub_, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &dc, sizeof(dc));
  }

  int ctl_ = -1, dev_ = -1;
  uint32_t client_ = 0, device_ = 0, sub_ = 0;
};

}  // namespace compute_test

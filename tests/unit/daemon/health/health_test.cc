#include <dlfcn.h>
#include <gtest/gtest.h>

#include <deque>

#include "vgpu/health/health_monitor.h"
#include "vgpu/health/nvml_xid_source.h"

namespace vgpu::health {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class FakeSource : public XidEventSource {
 public:
  Result<std::vector<std::string>> Start() override {
    return std::vector<std::string>{"GPU-a", "GPU-b"};
  }
  Result<std::optional<XidEvent>> Wait(std::chrono::milliseconds) override {
    if (fail_wait) return UnavailableError("wait failed");
    if (events.empty()) return std::optional<XidEvent>();
    XidEvent e = events.front();
    events.pop_front();
    return std::optional<XidEvent>(e);
  }
  Status Probe(const std::string& uuid) override {
    ++probes;
    return broken.count(uuid) ? UnavailableError("still broken") : OkStatus();
  }
  std::deque<XidEvent> events;
  std::set<std::string> broken;
  bool fail_wait = false;
  int probes = 0;
};

struct Change {
  std::string uuid;
  bool healthy;
  bool operator==(const Change&) const = default;
};

class RecordingSink : public HealthSink {
 public:
  void OnGpuHealthChanged(const std::string& uuid, bool healthy, const std::string&) override {
    changes.push_back({uuid, healthy});
  }
  std::vector<Change> changes;
};

class HealthTest : public ::testing::Test {
 protected:
  HealthOptions Options() {
    HealthOptions o;
    o.reprobe_after = 60s;
    o.wait_timeout = 1ms;
    o.clock = [this] { return now; };
    return o;
  }
  FakeSource source;
  RecordingSink sink;
  Clock::time_point now = Clock::time_point() + 1000h;
};

TEST(XidPolicyTest, ApplicationXidsFollowNvidiaDevicePlugin) {
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) EXPECT_TRUE(IsApplicationXid(xid)) << xid;
  for (uint64_t xid : {48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120}) {
    EXPECT_FALSE(IsApplicationXid(xid)) << xid;
  }
}

TEST_F(HealthTest, CriticalXidMarksOnlyThatGpuUnhealthy) {
  HealthMonitor m(source, sink, Options());
  ASSERT_TRUE(m.StartWithoutThread().ok());
  source.events = {{"GPU-a", 79}};
  m.Step();
  EXPECT_FALSE(m.Healthy("GPU-a"));
  EXPECT_TRUE(m.Healthy("GPU-b"));
  EXPECT_EQ(sink.changes, (std::vector<Change>{{"GPU-a", false}}));
  source.events = {{"GPU-a", 48}};  // already unhealthy: no second notification
  m.Step();
  EXPECT_EQ(sink.changes.size(), 1u);
}

TEST_F(HealthTest, ApplicationAndConfiguredXidsAreIgnored) {
  HealthOptions o = Options();
  o.extra_ignored_xids = {94};
  HealthMonitor m(source, sink, o);
  ASSERT_TRUE(m.StartWithoutThread().ok());
  source.events = {{"GPU-a", 13}, {"GPU-a", 31},  {"GPU-b", 43}, {"GPU-b", 45},
                   {"GPU-a", 68}, {"GPU-b", 109}, {"GPU-a", 94}};
  for (int i = 0; i < 7; ++i) m.Step();
  EXPECT_TRUE(sink.changes.empty());
  EXPECT_EQ(m.Snapshot(), (std::map<std::string, bool>{{"GPU-a", true}, {"GPU-b", true}}));
}

TEST_F(HealthTest, ReprobeAfterQuietPeriodRestoresHealth) {
  HealthMonitor m(source, sink, Options());
  ASSERT_TRUE(m.StartWithoutThread().ok());
  source.events = {{"GPU-b", 79}};
  source.broken = {"GPU-b"};
  m.Step();
  now += 30s;
  m.Step();
  EXPECT_EQ(source.probes, 0);  // not due yet
  now += 31s;
  m.Step();
  EXPECT_EQ(source.probes, 1);  // due, but the GPU is still broken
  EXPECT_FALSE(m.Healthy("GPU-b"));
  source.broken.clear();
  now += 30s;
  m.Step();
  EXPECT_EQ(source.probes, 1);  // a failed probe restarts the quiet period
  now += 30s;
  m.Step();
  EXPECT_TRUE(m.Healthy("GPU-b"));
  EXPECT_EQ(sink.changes, (std::vector<Change>{{"GPU-b", false}, {"GPU-b", true}}));
}

TEST_F(HealthTest, NewXidDuringQuietPeriodPostponesReprobe) {
  HealthMonitor m(source, sink, Options());
  ASSERT_TRUE(m.StartWithoutThread().ok());
  source.events = {{"GPU-a", 79}};
  m.Step();
  now += 50s;
  source.events = {{"GPU-a", 79}};
  m.Step();
  now += 50s;
  m.Step();
  EXPECT_EQ(source.probes, 0);
  now += 11s;
  m.Step();
  EXPECT_TRUE(m.Healthy("GPU-a"));
}

TEST_F(HealthTest, FailedWaitMarksEveryGpuUnhealthy) {
  HealthMonitor m(source, sink, Options());
  ASSERT_TRUE(m.StartWithoutThread().ok());
  source.fail_wait = true;
  m.Step();
  EXPECT_EQ(sink.changes, (std::vector<Change>{{"GPU-a", false}, {"GPU-b", false}}));
}

TEST_F(HealthTest, ThreadedMonitorStopsPromptly) {
  HealthMonitor m(source, sink, Options());
  ASSERT_TRUE(m.Start().ok());
  m.Stop();
  m.Stop();
}

TEST(NvmlXidSourceTest, MissingLibraryIsUnavailable) {
  NvmlXidSource source("libnvidia-ml-does-not-exist.so.1");
  auto r = source.Start();
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("health checks are off"), std::string::npos);
}

TEST(NvmlXidSourceTest, DrivesTheMonitorThroughTheNvmlEventApi) {
  NvmlXidSource source(VGPU_FAKE_NVML);
  RecordingSink sink;
  HealthOptions o;
  o.wait_timeout = 20ms;
  o.reprobe_after = 0ms;
  HealthMonitor m(source, sink, o);
  ASSERT_TRUE(m.StartWithoutThread().ok());
  EXPECT_EQ(m.Snapshot(),
            (std::map<std::string, bool>{{"GPU-fake-0", true}, {"GPU-fake-1", true}}));
  void* lib = dlopen(VGPU_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto push = reinterpret_cast<void (*)(int, unsigned long long)>(dlsym(lib, "fake_nvml_push_xid"));
  auto set_lost = reinterpret_cast<void (*)(int, int)>(dlsym(lib, "fake_nvml_set_lost"));
  ASSERT_TRUE(push && set_lost);

  m.Step();  // times out: nothing changes
  EXPECT_TRUE(sink.changes.empty());
  push(1, 13);  // application error: ignored
  m.Step();
  EXPECT_TRUE(sink.changes.empty());
  set_lost(1, 1);
  push(1, 79);  // fallen off the bus
  m.Step();     // marks unhealthy; the immediate re-probe fails (GPU lost)
  EXPECT_FALSE(m.Healthy("GPU-fake-1"));
  EXPECT_TRUE(m.Healthy("GPU-fake-0"));
  set_lost(1, 0);
  m.Step();  // re-probe succeeds
  EXPECT_TRUE(m.Healthy("GPU-fake-1"));
  EXPECT_EQ(sink.changes, (std::vector<Change>{{"GPU-fake-1", false}, {"GPU-fake-1", true}}));
  dlclose(lib);
}

}  // namespace
}  // namespace vgpu::health

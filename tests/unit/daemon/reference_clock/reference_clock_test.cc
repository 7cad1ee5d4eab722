// The manager's reference clock (daemon/reference_clock) on simulated NVML sequences: one reading
// per second of each GPU's utilization and SM clock, as ReferenceClockMonitor gets them. The
// figures are the H200's (docs/results/e2e-h200.md, run H): a bf16 matmul loop read 1538 MHz on a
// card that had cooled and 1483 MHz on a hot one.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "vgpu/reference_clock/reference_clock_monitor.h"

namespace vgpu::reference_clock {
namespace {

namespace fs = std::filesystem;
constexpr char kGpu[] = "GPU-aaaa";
constexpr char kOther[] = "GPU-bbbb";
constexpr uint32_t kLimit = 700000;

// Feeds `clocks` as saturated samples (100 %) into `s`, then one idle sample; returns the last
// figure it gave while saturated (0: none).
uint32_t Stretch(SaturatedStretch& s, const std::vector<uint32_t>& clocks) {
  uint32_t figure = 0;
  for (uint32_t mhz : clocks) {
    figure = s.Add(100, mhz);
  }
  EXPECT_EQ(s.Add(3, 345), 0u) << "an idle sample ends the stretch";
  return figure;
}

TEST(SaturatedStretch, AStartUpProbeNeverCounts) {
  SaturatedStretch s;
  // The longest a tenant runs ungated (settle + probe, ~2.75 s): at most three 1-s samples.
  EXPECT_EQ(Stretch(s, {1772, 1560, 1540}), 0u);
  // Four are still not enough (one more sample than a probe can give, for NVML's sampling edge).
  EXPECT_EQ(Stretch(s, {1772, 1560, 1540, 1530}), 0u);
  // Nor does a capped tenant's busy time: 90 % never saturates.
  for (int i = 0; i < 30; i++) {
    EXPECT_EQ(s.Add(90, 1600), 0u);
  }
}

TEST(SaturatedStretch, ALongStretchGivesTheMedianAfterItsFirstSample) {
  SaturatedStretch s;
  // The first sample holds the cold card's boost; the rest the limiter's variation.
  const std::vector<uint32_t> clocks = {1980, 1500, 1470, 1490, 1483, 1410, 1575, 1483};
  uint32_t figure = 0;
  for (size_t i = 0; i < clocks.size(); i++) {
    figure = s.Add(100, clocks[i]);
    EXPECT_EQ(figure != 0, i + 1 >= SaturatedStretch::kMinSamples) << "sample " << i;
  }
  EXPECT_EQ(figure, 1483u) << "median of 1500 1470 1490 1483 1410 1575 1483";
  EXPECT_EQ(s.Add(100, 0), 0u) << "no clock reading ends the stretch";
  EXPECT_EQ(s.length(), 0u);
}

TEST(SaturatedStretch, OneOutlierDoesNotMoveIt) {
  SaturatedStretch s;
  EXPECT_EQ(Stretch(s, {1900, 1500, 1500, 900, 1500, 1500}), 1500u);
}

TEST(ReferenceClockBook, KeepsTheLowerOfTwoStretches) {
  ReferenceClockBook book;
  EXPECT_EQ(book.MhzFor(kGpu), 0u) << "unknown until a stretch counts";
  EXPECT_TRUE(book.Offer(kGpu, 1538, kLimit, "580.159.04", 100));
  EXPECT_TRUE(book.Offer(kGpu, 1483, kLimit, "580.159.04", 200)) << "the hot card's figure";
  EXPECT_FALSE(book.Offer(kGpu, 1538, kLimit, "580.159.04", 300))
      << "a cooler card never raises it";
  EXPECT_EQ(book.MhzFor(kGpu), 1483u);
  EXPECT_EQ(book.All().at(kGpu).learned_unix_s, 200u);
  EXPECT_EQ(book.MhzFor(kOther), 0u) << "per GPU";
}

TEST(ReferenceClockBook, ANewPowerLimitOrDriverRelearnsIt) {
  ReferenceClockBook book;
  ASSERT_TRUE(book.Offer(kGpu, 1483, kLimit, "580.159.04", 100));
  EXPECT_TRUE(book.Offer(kGpu, 1700, 900000, "580.159.04", 200)) << "power limit raised";
  EXPECT_EQ(book.MhzFor(kGpu), 1700u);
  EXPECT_TRUE(book.Offer(kGpu, 1690, 900000, "590.10", 300)) << "driver changed";
  EXPECT_FALSE(book.Offer(kGpu, 1750, 0, "", 400)) << "what NVML cannot read says no change";
  EXPECT_EQ(book.MhzFor(kGpu), 1690u);
}

// A scripted GpuLoadSource: one row per Sample() call.
class ScriptedLoad : public topology::GpuLoadSource {
 public:
  std::vector<std::vector<topology::GpuLoadSample>> rows;
  size_t next = 0;
  uint32_t limit = kLimit;
  Result<std::vector<topology::GpuLoadSample>> Sample() override {
    if (next >= rows.size()) {
      return UnavailableError("script ended");
    }
    auto row = rows[next++];
    for (auto& s : row) {
      s.power_limit_mw = limit;
    }
    return row;
  }
  std::string DriverVersion() const override { return "580.159.04"; }
  // `n` seconds of GPU 0 saturated at `mhz`, GPU 1 idle.
  void Saturated(int n, uint32_t mhz) {
    for (int i = 0; i < n; i++) {
      rows.push_back({{kGpu, 100, mhz, 0}, {kOther, 0, 345, 0}});
    }
  }
  void Idle(int n) {
    for (int i = 0; i < n; i++) {
      rows.push_back({{kGpu, 0, 345, 0}, {kOther, 0, 345, 0}});
    }
  }
};

class ReferenceClockMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("refclock-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = ReferenceClockFile(dir_ / kReferenceClockFileName);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs the whole script through a monitor on `book`; returns the changes it reported.
  std::vector<std::pair<std::string, uint32_t>> Run(ScriptedLoad& load, ReferenceClockBook& book) {
    std::vector<std::pair<std::string, uint32_t>> changes;
    ReferenceClockMonitor monitor(
        load, book, file_,
        [&](const std::string& uuid, uint32_t mhz) { changes.emplace_back(uuid, mhz); },
        [](const Status& s) { ADD_FAILURE() << s.ToString(); });
    for (size_t i = 0; i < load.rows.size(); i++) {
      monitor.PollOnce(1000 + i);
    }
    return changes;
  }
  fs::path dir_;
  ReferenceClockFile file_{""};
};

TEST_F(ReferenceClockMonitorTest, LearnsFromALongStretchNotFromABurstAndSurvivesARestart) {
  ScriptedLoad load;
  load.Idle(2);
  load.Saturated(2, 1560);  // a tenant's start-up probe
  load.Idle(3);
  load.Saturated(8, 1538);  // a bare run on a cooled card
  load.Idle(5);
  load.Saturated(10, 1483);  // a long run on a hot card
  load.Idle(2);
  ReferenceClockBook book;
  auto changes = Run(load, book);
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.front(), (std::pair<std::string, uint32_t>{kGpu, 1538}));
  EXPECT_EQ(changes.back(), (std::pair<std::string, uint32_t>{kGpu, 1483}));
  EXPECT_EQ(book.MhzFor(kGpu), 1483u);
  EXPECT_EQ(book.MhzFor(kOther), 0u) << "an idle GPU has no reference";
  // The manager restarts: the book comes back from the file.
  auto loaded = file_.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_TRUE(loaded->corrupt_reason.empty());
  ReferenceClockBook again(loaded->gpus);
  EXPECT_EQ(again.MhzFor(kGpu), 1483u);
  EXPECT_EQ(loaded->gpus.at(kGpu).power_limit_mw, kLimit);
  EXPECT_EQ(loaded->gpus.at(kGpu).driver_version, "580.159.04");
}

TEST_F(ReferenceClockMonitorTest, AProbeAloneTeachesNothing) {
  ScriptedLoad load;
  for (int i = 0; i < 10; i++) {  // ten tenants starting, each probing for ~3 s, then capped
    load.Saturated(3, 1560);
    for (int k = 0; k < 5; k++) {
      load.rows.push_back({{kGpu, 90, 1700, 0}, {kOther, 0, 345, 0}});
    }
  }
  ReferenceClockBook book;
  EXPECT_TRUE(Run(load, book).empty());
  EXPECT_EQ(book.MhzFor(kGpu), 0u);
  EXPECT_FALSE(fs::exists(file_.path())) << "nothing learned, nothing written";
}

TEST_F(ReferenceClockMonitorTest, ACorruptFileIsKeptAsideAndRebuilt) {
  ASSERT_TRUE(file_.Save({{kGpu, {1483, kLimit, "580.159.04", 7}}}).ok());
  std::stringstream text;
  text << std::ifstream(file_.path()).rdbuf();
  std::string edited = text.str();
  edited.replace(edited.find("1483"), 4, "1200");  // valid JSON, wrong CRC
  std::ofstream(file_.path(), std::ios::trunc) << edited;
  auto loaded = file_.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_NE(loaded->corrupt_reason.find("crc32"), std::string::npos) << loaded->corrupt_reason;
  EXPECT_TRUE(loaded->gpus.empty()) << "never trusted";
  EXPECT_TRUE(fs::exists(loaded->kept_aside)) << "the evidence kept";
  EXPECT_FALSE(fs::exists(file_.path()));
  // Rebuilt from the next stretch.
  ScriptedLoad load;
  load.Saturated(6, 1490);
  ReferenceClockBook book(loaded->gpus);
  Run(load, book);
  auto again = file_.Load();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->corrupt_reason.empty());
  EXPECT_EQ(again->gpus.at(kGpu).mhz, 1490u);
  for (const char* garbage : {"", "{", "{\"format\":\"vgpu-reference-clocks\",\"version\":1}"}) {
    std::ofstream(file_.path(), std::ios::trunc) << garbage;
    auto bad = file_.Load();
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(bad->corrupt_reason.empty()) << "'" << garbage << "'";
  }
}

TEST(ReferenceClockFileTest, AFigureOutsideTheSettingsRangeIsCorrupt) {
  auto parsed = ParseReferences(SerializeReferences({{kGpu, {20000, kLimit, "", 1}}}));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("20000"), std::string::npos);
  EXPECT_TRUE(ParseReferences(SerializeReferences({{kGpu, {1483, kLimit, "", 1}}})).ok());
}

}  // namespace
}  // namespace vgpu::reference_clock

#include <gtest/gtest.h>

#include "testing/exposition_parser.h"
#include "testing/fake_stats_source.h"
#include "vgpu/metrics/prometheus_text.h"

namespace vgpu::metrics {
namespace {

using testing::ExampleSnapshot;
using testing::ParsedExposition;

ParsedExposition Render(const NodeSnapshot& snapshot) {
  ParsedExposition parsed;
  std::string error;
  std::string text = RenderNodeMetrics("node-1", snapshot, {5, 1, 1700000000.5});
  EXPECT_TRUE(testing::ParseExposition(text, &parsed, &error)) << error << "\n" << text;
  return parsed;
}

TEST(EscapeTest, LabelValuesEscapeBackslashQuoteNewline) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
}

TEST(EscapeTest, HelpKeepsQuotes) { EXPECT_EQ(EscapeHelp("say \"x\"\\\n"), "say \"x\"\\\\\\n"); }

TEST(FormatValueTest, IntegersSpecialsAndFractions) {
  EXPECT_EQ(FormatValue(85899345920.0), "85899345920");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(std::stod(FormatValue(0.1 + 0.2)), 0.1 + 0.2);  // round-trips exactly
}

TEST(RenderTest, EverySlotFamilyHasTypeHelpAndOneSamplePerSlot) {
  ParsedExposition p = Render(ExampleSnapshot());
  const std::map<std::string, std::string> expected_types = {
      {"vgpu_slot_memory_quota_bytes", "gauge"},
      {"vgpu_slot_memory_charged_bytes", "gauge"},
      {"vgpu_slot_memory_peak_bytes", "gauge"},
      {"vgpu_slot_memory_denials_total", "counter"},
      {"vgpu_slot_core_share_ratio", "gauge"},
      {"vgpu_slot_core_achieved_ratio", "gauge"},
      {"vgpu_slot_busy_seconds_total", "counter"},
      {"vgpu_slot_throttled_seconds_total", "counter"},
      {"vgpu_slot_core_achieved_10s_ratio", "gauge"},
  };
  for (const auto& [name, type] : expected_types) {
    EXPECT_EQ(p.types[name], type) << name;
    EXPECT_FALSE(p.helps[name].empty()) << name;
    auto samples = p.Find(name);
    ASSERT_EQ(samples.size(), 3u) << name;
    for (const auto& s : samples) {
      for (const char* label : {"node", "gpu_uuid", "slot", "namespace", "pod", "container"}) {
        EXPECT_TRUE(s.labels.count(label)) << name << " lacks " << label;
      }
      EXPECT_EQ(s.labels.at("node"), "node-1");
    }
  }
}

TEST(RenderTest, ValuesMatchTheSnapshot) {
  ParsedExposition p = Render(ExampleSnapshot());
  EXPECT_EQ(p.Value("vgpu_slot_memory_quota_bytes", {{"slot", "s1"}}), double(2ull << 30));
  EXPECT_EQ(p.Value("vgpu_slot_memory_charged_bytes", {{"slot", "s1"}}), double(1536ull << 20));
  EXPECT_EQ(p.Value("vgpu_slot_memory_peak_bytes", {{"slot", "s1"}}), double(1792ull << 20));
  EXPECT_EQ(p.Value("vgpu_slot_memory_denials_total", {{"slot", "s1"}}), 3);
  EXPECT_EQ(p.Value("vgpu_slot_core_share_ratio", {{"slot", "s2"}}), 0.5);
  EXPECT_EQ(p.Value("vgpu_slot_core_achieved_ratio", {{"slot", "s1"}}), 0.2475);
  EXPECT_EQ(p.Value("vgpu_slot_core_achieved_10s_ratio", {{"slot", "s1"}}), 0.2525);
  EXPECT_EQ(p.Value("vgpu_slot_busy_seconds_total", {{"slot", "s1"}}), 12.5);
  EXPECT_EQ(p.Value("vgpu_slot_throttled_seconds_total", {{"slot", "s1"}}), 4.25);
  EXPECT_EQ(p.Value("vgpu_slot_memory_quota_bytes", {{"slot", "s3"}, {"gpu_uuid", "GPU-bbbb"}}),
            double(80ull << 30));
}

TEST(RenderTest, LabelValuesRoundTripThroughEscaping) {
  ParsedExposition p = Render(ExampleSnapshot());
  auto s2 = p.Find("vgpu_slot_memory_quota_bytes", {{"slot", "s2"}});
  ASSERT_EQ(s2.size(), 1u);
  EXPECT_EQ(s2[0].labels.at("pod"), "odd\"pod\\name\nx");
}

TEST(RenderTest, UnknownIoctlsCarryKindAndHexNumber) {
  ParsedExposition p = Render(ExampleSnapshot());
  EXPECT_EQ(p.types["vgpu_slot_unknown_ioctls_total"], "counter");
  EXPECT_EQ(p.Find("vgpu_slot_unknown_ioctls_total").size(), 2u);
  EXPECT_EQ(p.Value("vgpu_slot_unknown_ioctls_total",
                    {{"slot", "s1"}, {"kind", "control"}, {"number", "0x20800a2a"}}),
            2);
  EXPECT_EQ(p.Value("vgpu_slot_unknown_ioctls_total", {{"kind", "class"}, {"number", "0xc86f"}}),
            1);
}

TEST(RenderTest, GpuAndNodeSeries) {
  ParsedExposition p = Render(ExampleSnapshot());
  EXPECT_EQ(p.Value("vgpu_gpu_healthy", {{"gpu_uuid", "GPU-aaaa"}}), 1);
  EXPECT_EQ(p.Value("vgpu_gpu_healthy", {{"gpu_uuid", "GPU-bbbb"}}), 0);
  EXPECT_EQ(p.Value("vgpu_gpu_slots", {{"gpu_uuid", "GPU-aaaa"}}), 2);
  EXPECT_EQ(p.Value("vgpu_gpu_memory_committed_bytes", {{"gpu_uuid", "GPU-bbbb"}}),
            double(80ull << 30));
  EXPECT_EQ(p.Value("vgpu_allocations_total", {{"node", "node-1"}}), 7);
  EXPECT_EQ(p.Value("vgpu_allocation_failures_total"), 1);
  EXPECT_EQ(p.Value("vgpu_registrations_total"), 2);
  EXPECT_EQ(p.Value("vgpu_metrics_samples_total"), 5);
  EXPECT_EQ(p.Value("vgpu_metrics_last_sample_timestamp_seconds"), 1700000000.5);
}

TEST(RenderTest, EmptyNodeStillDeclaresEveryFamily) {
  ParsedExposition p = Render(NodeSnapshot{});
  EXPECT_EQ(p.types.count("vgpu_slot_memory_quota_bytes"), 1u);
  EXPECT_EQ(p.types.count("vgpu_gpu_healthy"), 1u);
  EXPECT_TRUE(p.Find("vgpu_slot_memory_quota_bytes").empty());
  EXPECT_EQ(p.Value("vgpu_allocations_total"), 0);
}

}  // namespace
}  // namespace vgpu::metrics

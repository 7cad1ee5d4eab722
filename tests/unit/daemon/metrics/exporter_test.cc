#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "testing/exposition_parser.h"
#include "testing/fake_stats_source.h"
#include "vgpu/metrics/exporter.h"

namespace vgpu::metrics {
namespace {

using namespace std::chrono_literals;

ExporterOptions LocalOptions(std::chrono::milliseconds period) {
  ExporterOptions o;
  o.node_name = "node-1";
  o.bind_address = "127.0.0.1";
  o.port = 0;
  o.sample_period = period;
  return o;
}

testing::ParsedExposition Scrape(int port, std::string* content_type = nullptr) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  testing::ParsedExposition parsed;
  EXPECT_TRUE(res);
  if (!res) return parsed;
  EXPECT_EQ(res->status, 200);
  if (content_type) *content_type = res->get_header_value("Content-Type");
  std::string error;
  EXPECT_TRUE(testing::ParseExposition(res->body, &parsed, &error)) << error;
  return parsed;
}

TEST(ExporterTest, FirstScrapeAfterStartHasTheSnapshot) {
  testing::FakeStatsSource source;
  source.Set(testing::ExampleSnapshot());
  MetricsExporter exporter(LocalOptions(1h), source);
  ASSERT_TRUE(exporter.Start().ok());
  ASSERT_GT(exporter.port(), 0);
  std::string content_type;
  auto p = Scrape(exporter.port(), &content_type);
  EXPECT_EQ(content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(p.Value("vgpu_slot_memory_quota_bytes", {{"slot", "s1"}}), double(2ull << 30));
  exporter.Stop();
  exporter.Stop();  // idempotent
}

TEST(ExporterTest, SamplerFollowsTheSourceEveryPeriod) {
  testing::FakeStatsSource source;
  NodeSnapshot snap = testing::ExampleSnapshot();
  source.Set(snap);
  MetricsExporter exporter(LocalOptions(20ms), source);
  ASSERT_TRUE(exporter.Start().ok());
  snap.slots[0].memory_charged_bytes = 42;
  source.Set(snap);
  // The sampler, not the scrape, pulls: poll until a period has passed (bounded).
  std::optional<double> charged;
  for (int i = 0; i < 200; ++i) {
    charged = Scrape(exporter.port()).Value("vgpu_slot_memory_charged_bytes", {{"slot", "s1"}});
    if (charged == 42) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(charged, 42);
  EXPECT_GE(source.calls(), 2);
}

TEST(ExporterTest, ScrapesDoNotCallTheSource) {
  testing::FakeStatsSource source;
  source.Set(testing::ExampleSnapshot());
  MetricsExporter exporter(LocalOptions(1h), source);
  ASSERT_TRUE(exporter.Start().ok());
  const int before = source.calls();
  for (int i = 0; i < 5; ++i) Scrape(exporter.port());
  EXPECT_EQ(source.calls(), before);
}

TEST(ExporterTest, FailedSampleKeepsLastGoodDataAndCountsTheFailure) {
  testing::FakeStatsSource source;
  source.Set(testing::ExampleSnapshot());
  MetricsExporter exporter(LocalOptions(1h), source);
  ASSERT_TRUE(exporter.Start().ok());
  source.FailNext(true);
  Status s = exporter.SampleNow();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  auto p = Scrape(exporter.port());
  EXPECT_EQ(p.Value("vgpu_metrics_sample_failures_total"), 1);
  EXPECT_EQ(p.Value("vgpu_metrics_samples_total"), 1);
  EXPECT_EQ(p.Value("vgpu_slot_memory_denials_total", {{"slot", "s1"}}), 3);
}

TEST(ExporterTest, BusyPortIsAClearError) {
  testing::FakeStatsSource source;
  MetricsExporter first(LocalOptions(1h), source);
  ASSERT_TRUE(first.Start().ok());
  ExporterOptions o = LocalOptions(1h);
  o.port = first.port();
  MetricsExporter second(o, source);
  Status s = second.Start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("--query-port"), std::string::npos) << s.ToString();
}

TEST(ExporterTest, NonPositiveSamplePeriodIsRejected) {
  testing::FakeStatsSource source;
  MetricsExporter exporter(LocalOptions(0ms), source);
  EXPECT_EQ(exporter.Start().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vgpu::metrics

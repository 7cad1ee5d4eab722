// The enforcement in force as node labels and metrics (daemon/manager/enforcement.h): module is
// hard, shim is soft, a fallback and a failed module build are visible, and an operator cannot
// set the labels the manager owns.
#include "vgpu/manager/enforcement.h"

#include <gtest/gtest.h>

#include "vgpu/metrics/prometheus_text.h"

namespace vgpu::manager {
namespace {

std::string MetricLine(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// The node families of one node "n1" as /metrics renders them for `e`.
void ExpectNodeMetrics(const EnforcementInForce& e, int hard, int fallback, int install_ok) {
  metrics::NodeSnapshot snap;
  snap.enforcement = EnforcementMetrics(e);
  const std::string text = metrics::RenderNodeMetrics("n1", snap, {});
  const std::string node = R"({node="n1"} )";
  EXPECT_EQ(MetricLine(text, "vgpu_node_enforcement_hard{"),
            "vgpu_node_enforcement_hard" + node + std::to_string(hard));
  EXPECT_EQ(MetricLine(text, "vgpu_node_shim_fallback{"),
            "vgpu_node_shim_fallback" + node + std::to_string(fallback));
  EXPECT_EQ(
      MetricLine(text, "vgpu_node_module_install_ok{"),
      install_ok < 0 ? "" : "vgpu_node_module_install_ok" + node + std::to_string(install_ok));
}

TEST(EnforcementTest, ModuleIsHard) {
  auto e = DescribeEnforcement("kmod", "", ParseModuleInstallState("kmod 0.1.0\n"));
  EXPECT_EQ(e.mode, "module");
  EXPECT_TRUE(e.hard);
  auto l = EnforcementLabels(e);
  EXPECT_EQ(l["vgpu.io/enforcement"], "module");
  EXPECT_EQ(l["vgpu.io/enforcement-hard"], "true");
  EXPECT_EQ(l["vgpu.io/module-install"], "ok");
  EXPECT_EQ(l["vgpu.io/deployment"], std::nullopt) << "removed";

  metrics::NodeSnapshot snap;
  snap.enforcement = EnforcementMetrics(e);
  EXPECT_EQ(MetricLine(metrics::RenderNodeMetrics("n1", snap, {}), "vgpu_node_enforcement_info{"),
            R"(vgpu_node_enforcement_info{node="n1",mode="module",hard="true"} 1)");
  ExpectNodeMetrics(e, 1, 0, 1);
}

TEST(EnforcementTest, ShimIsSoftAndAFallbackSaysSo) {
  auto install = ParseModuleInstallState("shim dkms build/install failed for 6.1.0-9-amd64");
  ASSERT_TRUE(install.known);
  EXPECT_FALSE(install.ok);
  EXPECT_EQ(install.detail, "dkms build/install failed for 6.1.0-9-amd64");
  auto e = DescribeEnforcement("shim", "vgpu.ko is not loaded", install);
  EXPECT_EQ(e.mode, "shim");
  EXPECT_FALSE(e.hard);
  auto l = EnforcementLabels(e);
  EXPECT_EQ(l["vgpu.io/enforcement"], "shim");
  EXPECT_EQ(l["vgpu.io/enforcement-hard"], "false");
  EXPECT_EQ(l["vgpu.io/module-install"], "failed");
  ExpectNodeMetrics(e, 0, 1, 0);
}

TEST(EnforcementTest, NoInstallerNoInstallLabelOrMetric) {
  auto e = DescribeEnforcement("shim", "", ReadModuleInstallState("/nonexistent/module.state"));
  EXPECT_FALSE(e.install.known);
  EXPECT_NE(e.install.detail.find("/nonexistent/module.state"), std::string::npos);
  EXPECT_EQ(EnforcementLabels(e)["vgpu.io/module-install"], std::nullopt);
  ExpectNodeMetrics(e, 0, 0, -1);
  EXPECT_FALSE(ParseModuleInstallState("garbage").known);
}

TEST(EnforcementTest, OperatorLabelsJoinButCannotOverrideTheManagers) {
  auto e = DescribeEnforcement("shim", "", {});
  auto ok = NodeLabelsToPublish({{"team", "ml"}}, e);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)["team"], "ml");
  EXPECT_EQ((*ok)["vgpu.io/enforcement"], "shim");
  for (const char* key :
       {"vgpu.io/enforcement", "vgpu.io/enforcement-hard", "vgpu.io/deployment"}) {
    auto bad = NodeLabelsToPublish({{key, "module"}}, e);
    ASSERT_FALSE(bad.ok()) << key;
    EXPECT_NE(bad.status().message().find(key), std::string::npos) << bad.status().ToString();
  }
}

}  // namespace
}  // namespace vgpu::manager

#include "vgpu/config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace vgpu::config {
namespace {

TEST(ConfigTest, DefaultsValidate) {
  auto c = ParseArgs({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(Validate(*c).ok());
  EXPECT_EQ(c->KubeletSocket(), "/var/lib/kubelet/device-plugins/kubelet.sock");
  EXPECT_EQ(c->memory_unit_bytes, 256ull << 20);
  EXPECT_EQ(c->driver_root, "/");
}

TEST(ConfigTest, FlagFormsAndBooleans) {
  auto c = ParseArgs({"--standalone", "--query-port", "9000", "--share-mode=false",
                      "--memory-unit=512Mi", "--enforcement=shim", "--driver-root=/host"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->standalone);
  EXPECT_EQ(c->query_port, 9000);
  EXPECT_FALSE(c->share_mode);
  EXPECT_EQ(c->memory_unit_bytes, 512ull << 20);
  EXPECT_EQ(c->enforcement, Enforcement::kShim);
  EXPECT_EQ(c->driver_root, "/host");
}

TEST(ConfigTest, ErrorsNameTheFlag) {
  auto unknown = ParseArgs({"--no-such-flag=1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--no-such-flag"), std::string::npos);

  auto bad_int = ParseArgs({"--sample-period=soon"});
  ASSERT_FALSE(bad_int.ok());
  EXPECT_NE(bad_int.status().message().find("--sample-period"), std::string::npos);

  auto bad_enum = ParseArgs({"--enforcement=magic"});
  ASSERT_FALSE(bad_enum.ok());
  EXPECT_NE(bad_enum.status().message().find("--enforcement"), std::string::npos);

  struct Case {
    std::vector<std::string> args;
    std::string flag;
  } cases[] = {
      {{"--driver=amd"}, "--driver"},
      {{"--query-port=70000"}, "--query-port"},
      {{"--sample-period=0"}, "--sample-period"},
      {{"--allocation-check-period=-5"}, "--allocation-check-period"},
      {{"--node-labels=a=b,broken"}, "--node-labels"},
      {{"--hostname-override=Bad_Name"}, "--hostname-override"},
      {{"--checkpoint-path=relative/dir"}, "--checkpoint-path"},
      {{"--driver-root=host"}, "--driver-root"},
      {{"--memory-unit=1000"}, "--memory-unit"},
      {{"--core-resource=vcuda-core"}, "--core-resource"},
      {{"--kubeconfig=/nonexistent/kubeconfig"}, "--kubeconfig"},
      {{"--extra-config=/nonexistent/extra.json"}, "--extra-config"},
      {{"--placement=random"}, "--placement"},
  };
  for (const auto& tc : cases) {
    auto c = ParseArgs(tc.args);
    ASSERT_TRUE(c.ok()) << tc.flag;
    Status s = Validate(*c);
    ASSERT_FALSE(s.ok()) << tc.flag;
    EXPECT_NE(s.message().find(tc.flag), std::string::npos) << s.ToString();
  }
}

TEST(ConfigTest, FileThenFlagsWin) {
  auto dir =
      std::filesystem::temp_directory_path() / ("vgpu-config-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto file = dir / "manager.json";
  std::ofstream(file) << R"({"query-port": 7000, "standalone": true, "share-mode": "true",
                            "allocation-check-period": 12})";
  auto c = ParseArgs({"--query-port=7001", "--config=" + file.string()});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->query_port, 7001);  // flag wins, whatever its position
  EXPECT_TRUE(c->standalone);
  EXPECT_EQ(c->allocation_check_period_s, 12);
  EXPECT_EQ(c->config_file, file.string());

  std::ofstream(file) << R"({"qury-port": 1})";
  auto typo = ParseArgs({"--config=" + file.string()});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("qury-port"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, EffectiveConfigLineListsEverySetting) {
  auto c = ParseArgs({"--hostname-override=node-1"});
  ASSERT_TRUE(c.ok());
  std::string line = c->EffectiveConfigLine();
  for (const char* key : {"driver=nvidia", "hostname-override=node-1", "enforcement=auto",
                          "share-mode=true", "allocation-check-period=30", "incluster-mode=false",
                          "virtual-manager-path=", "device-plugin-path=", "checkpoint-path=",
                          "volume-config=", "extra-config=", "kubeconfig=", "query-port=5678",
                          "sample-period=1", "node-labels=", "standalone=false", "driver-root=/"}) {
    EXPECT_NE(line.find(key), std::string::npos) << key;
  }
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(ConfigTest, AutoEnforcementFollowsSysModule) {
  auto dir = std::filesystem::temp_directory_path() / ("vgpu-sysmod-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Config c;
  c.sys_module_dir = dir.string();
  // No module and no permission to fall back: refused, naming the flag that would allow it
  // (security review F11.6: auto used to drop to soft limits under a "module" label).
  auto refused = ResolveEnforcement(c);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--allow-shim-fallback"), std::string::npos)
      << refused.status().ToString();
  c.allow_shim_fallback = true;
  ASSERT_TRUE(ResolveEnforcement(c).ok());
  EXPECT_EQ(*ResolveEnforcement(c), Enforcement::kShim);
  std::filesystem::create_directories(dir / "vgpu");
  EXPECT_EQ(*ResolveEnforcement(c), Enforcement::kKmod);
  c.allow_shim_fallback = false;
  EXPECT_EQ(*ResolveEnforcement(c), Enforcement::kKmod);
  c.enforcement = Enforcement::kShim;
  EXPECT_EQ(*ResolveEnforcement(c), Enforcement::kShim);
  std::filesystem::remove_all(dir);
}

TEST(ConfigTest, ShimFallbackIsAFlag) {
  auto c = ParseArgs({"--enforcement=auto", "--allow-shim-fallback",
                      "--module-state-file=/run/vgpu/module.state"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->allow_shim_fallback);
  EXPECT_EQ(c->module_state_file, "/run/vgpu/module.state");
  auto d = ParseArgs({"--enforcement=auto"});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->allow_shim_fallback) << "falling back to soft limits is never the default";
}

}  // namespace
}  // namespace vgpu::config

#include "shim/preload/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace vgpu::shim {
namespace {

TEST(ParseBytes, AcceptsPlainAndBinarySuffixes) {
  EXPECT_EQ(ParseBytes("0"), 0u);
  EXPECT_EQ(ParseBytes("4096"), 4096u);
  EXPECT_EQ(ParseBytes("4G"), 4ull << 30);
  EXPECT_EQ(ParseBytes("4GiB"), 4ull << 30);
  EXPECT_EQ(ParseBytes("512M"), 512ull << 20);
  EXPECT_EQ(ParseBytes("1T"), 1ull << 40);
  EXPECT_EQ(ParseBytes(" 8k "), 8192u);
}

TEST(ParseBytes, RefusesGarbageAndOverflow) {
  EXPECT_FALSE(ParseBytes(""));
  EXPECT_FALSE(ParseBytes("G"));
  EXPECT_FALSE(ParseBytes("1.5G"));
  EXPECT_FALSE(ParseBytes("-1"));
  EXPECT_FALSE(ParseBytes("4X"));
  EXPECT_FALSE(ParseBytes("99999999999999999999"));
  EXPECT_FALSE(ParseBytes("17179869184T"));  // 2^34 TiB overflows 64 bits
}

TEST(ParseConfigText, ReadsKeysCommentsAndExtras) {
  SlotConfig cfg;
  std::string err = ParseConfigText(cfg,
                                    "# slot 7\n"
                                    "mem_quota = 4G\n"
                                    "managed_policy=allow-uncounted  # trailing comment\n"
                                    "unknown_policy = allow-log\n"
                                    "slot_id = 7\n"
                                    "log = debug\n"
                                    "core_percent = 30\n"
                                    "\n");
  ASSERT_EQ(err, "");
  EXPECT_EQ(cfg.mem_quota, 4ull << 30);
  EXPECT_EQ(cfg.managed_policy, uint32_t{VGPU_MANAGED_ALLOW_UNCOUNTED});
  EXPECT_EQ(cfg.unknown_policy, uint32_t{VGPU_UNKNOWN_ALLOW_LOG});
  EXPECT_EQ(cfg.slot_id, 7u);
  EXPECT_EQ(cfg.log, LogLevel::kDebug);
  EXPECT_EQ(cfg.extra.at("core_percent"), "30");
}

// The file vgpu-manager writes (daemon/slots/slot_config_file.cc FormatSlotConfigFile).
TEST(ParseConfigText, ReadsTheManagersFormat) {
  SlotConfig cfg;
  std::string err = ParseConfigText(cfg,
                                    "# vgpu slot config, written by vgpu-manager\n"
                                    "version=2\n"
                                    "slot_id=3\n"
                                    "slot_name=g0-m17-n8\n"
                                    "gpu_index=1\n"
                                    "gpu_uuid=GPU-abc\n"
                                    "exclusive=0\n"
                                    "ledger=/run/vgpu/ledger\n"
                                    "mem_quota=4294967296\n"
                                    "compute_share=30\n"
                                    "compute_mode=weight\n"
                                    "managed_policy=refuse\n"
                                    "unknown_policy=allow-log\n");
  ASSERT_EQ(err, "");
  EXPECT_EQ(cfg.slot_id, 3u);
  EXPECT_EQ(cfg.mem_quota, 4ull << 30);
  EXPECT_EQ(cfg.compute_share, 30u);
  EXPECT_EQ(cfg.compute_mode, uint32_t{VGPU_COMPUTE_WEIGHT});
  EXPECT_EQ(cfg.managed_policy, uint32_t{VGPU_MANAGED_REFUSE});
  EXPECT_EQ(cfg.unknown_policy, uint32_t{VGPU_UNKNOWN_ALLOW_LOG});
  EXPECT_EQ(cfg.ledger_path, "/run/vgpu/ledger");
  EXPECT_EQ(cfg.extra.at("gpu_uuid"), "GPU-abc");
  EXPECT_EQ(cfg.gpu_index, std::optional<uint32_t>{1});  // the GPU the slot is confined to
  SlotConfig other;
  EXPECT_EQ(ParseConfigText(other, "version=1\n"),
            "line 1: unsupported config version '1' (this shim reads version 2; vgpu-manager "
            "rewrites its slot configs when it starts)");
}

TEST(ParseConfigText, ErrorsNameTheLineAndKey) {
  SlotConfig cfg;
  EXPECT_EQ(ParseConfigText(cfg, "mem_quota = 4G\nmanaged_policy = sometimes\n"),
            "line 2: bad value 'sometimes' for managed_policy (want refuse|allow-uncounted)");
  EXPECT_EQ(ParseConfigText(cfg, "compute_share = 0\n"),
            "line 1: bad value '0' for compute_share (want a number in 1..100)");
  EXPECT_EQ(ParseConfigText(cfg, "compute_mode = fair\n"),
            "line 1: bad value 'fair' for compute_mode (want cap|weight)");
  EXPECT_EQ(ParseConfigText(cfg, "just words\n"), "line 1: expected key = value");
  EXPECT_EQ(ParseConfigText(cfg, "gpu_index = GPU-1\n"),
            "line 1: bad value 'GPU-1' for gpu_index (want the minor of the GPU's /dev/nvidiaN)");
  EXPECT_EQ(ParseConfigText(cfg, "ledger = relative/path\n"),
            "line 1: bad value 'relative/path' for ledger (want an absolute path)");
  EXPECT_EQ(ParseConfigText(cfg, " = 3\n"), "line 1: empty key");
}

std::map<std::string, std::string>* fake_env;
const char* FakeGetenv(const char* name) {
  auto it = fake_env->find(name);
  return it == fake_env->end() ? nullptr : it->second.c_str();
}

class LoadSlotConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vshim-config-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fake_env = &env_;
  }
  void TearDown() override {
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string Write(const std::string& text) {
    std::string path = dir_ + "/slot.conf";
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(LoadSlotConfigTest, NothingConfiguredMeansUnlimitedAndNoLedger) {
  SlotConfig cfg;
  ASSERT_EQ(LoadSlotConfig(cfg, FakeGetenv), "");
  EXPECT_EQ(cfg.mem_quota, 0u);
  EXPECT_EQ(cfg.ledger_path, "");
  EXPECT_EQ(cfg.unknown_policy, uint32_t{VGPU_UNKNOWN_REFUSE});
  EXPECT_EQ(cfg.extra.at("compute_share"), "100") << "published for the compute thread";
}

TEST_F(LoadSlotConfigTest, EnvironmentConfiguresOnlyWithoutASlotConfig) {
  env_["VGPU_MEMORY_QUOTA"] = "4G";
  env_["VGPU_MANAGED"] = "refuse";
  env_["VGPU_COMPUTE_SHARE"] = "30";
  SlotConfig cfg;
  ASSERT_EQ(LoadSlotConfig(cfg, FakeGetenv), "");
  EXPECT_EQ(cfg.mem_quota, 4ull << 30);
  EXPECT_EQ(cfg.managed_policy, uint32_t{VGPU_MANAGED_REFUSE});
  EXPECT_EQ(cfg.extra.at("compute_share"), "30");
  EXPECT_TRUE(cfg.ignored_env.empty());
}

// A tenant sets its own environment: under the manager's slot config it changes nothing, it
// cannot loosen the quota, the share or the policies, nor switch the shim off (the hole of
// security-review F11.6: VGPU_MEMORY_QUOTA=... overrode the slot config before).
TEST_F(LoadSlotConfigTest, TenantEnvironmentCannotLoosenTheSlotConfig) {
  env_["VGPU_CONFIG"] = Write("mem_quota = 8G\ncompute_share = 30\nunknown_policy = refuse\n");
  env_["VGPU_MEMORY_QUOTA"] = "0";
  env_["VGPU_COMPUTE_SHARE"] = "100";
  env_["VGPU_POLICY"] = "allow-log";
  env_["VGPU_LEDGER"] = "/tmp/my-own-ledger";
  env_["VGPU_SHIM_PASSTHROUGH"] = "1";
  env_["VGPU_LOG"] = "debug";
  SlotConfig cfg;
  ASSERT_EQ(LoadSlotConfig(cfg, FakeGetenv), "");
  EXPECT_EQ(cfg.mem_quota, 8ull << 30);
  EXPECT_EQ(cfg.compute_share, 30u);
  EXPECT_EQ(cfg.extra.at("compute_share"), "30");
  EXPECT_EQ(cfg.unknown_policy, uint32_t{VGPU_UNKNOWN_REFUSE});
  EXPECT_EQ(cfg.ledger_path, dir_ + "/ledger");
  EXPECT_EQ(cfg.log, LogLevel::kDebug) << "verbosity is the tenant's to choose";
  EXPECT_EQ(cfg.ignored_env,
            (std::vector<std::string>{"VGPU_MEMORY_QUOTA", "VGPU_COMPUTE_SHARE", "VGPU_POLICY",
                                      "VGPU_LEDGER", "VGPU_SHIM_PASSTHROUGH"}));
}

// The manager's grant carries VGPU_SLOT_ID with the slot's own id beside VGPU_CONFIG: not an
// override, so no warning; another id is one.
TEST_F(LoadSlotConfigTest, TheGrantsOwnSlotIdIsNotReportedAsIgnored) {
  env_["VGPU_CONFIG"] = Write("mem_quota = 8G\nslot_id = 7\n");
  env_["VGPU_SLOT_ID"] = "7";
  SlotConfig cfg;
  ASSERT_EQ(LoadSlotConfig(cfg, FakeGetenv), "");
  EXPECT_EQ(cfg.slot_id, 7u);
  EXPECT_TRUE(cfg.ignored_env.empty());
  env_["VGPU_SLOT_ID"] = "8";
  SlotConfig other;
  ASSERT_EQ(LoadSlotConfig(other, FakeGetenv), "");
  EXPECT_EQ(other.slot_id, 7u);
  EXPECT_EQ(other.ignored_env, (std::vector<std::string>{"VGPU_SLOT_ID"}));
}

TEST_F(LoadSlotConfigTest, BadEnvValueNamesTheVariable) {
  env_["VGPU_POLICY"] = "lenient";
  SlotConfig cfg;
  EXPECT_EQ(LoadSlotConfig(cfg, FakeGetenv),
            "VGPU_POLICY: bad value 'lenient' for unknown_policy (want refuse|allow-log)");
}

TEST_F(LoadSlotConfigTest, MissingFileIsAnError) {
  env_["VGPU_CONFIG"] = dir_ + "/absent.conf";
  SlotConfig cfg;
  std::string err = LoadSlotConfig(cfg, FakeGetenv);
  EXPECT_NE(err.find("cannot read VGPU_CONFIG=" + dir_ + "/absent.conf"), std::string::npos) << err;
}

TEST_F(LoadSlotConfigTest, BadFileLineIsAnErrorNamingTheFile) {
  env_["VGPU_CONFIG"] = Write("mem_quota = lots\n");
  SlotConfig cfg;
  std::string err = LoadSlotConfig(cfg, FakeGetenv);
  EXPECT_EQ(err, dir_ +
                     "/slot.conf: line 1: bad value 'lots' for mem_quota (want bytes, "
                     "optionally with K/M/G/T)");
}

}  // namespace
}  // namespace vgpu::shim

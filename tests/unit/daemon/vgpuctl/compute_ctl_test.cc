// The compute share's control plane as the operator sees it: --mode through vgpuctl, the mode
// and the controller's counters through kmodclient (real libnl encoders), and how vgpuctl shows
// them (table, detail, JSON). The kernel side is tested in the guest (tests/vm/guest/compute).
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../kmodclient/genl_test_msg.h"
#include "cli.h"
#include "vgpu/kmodclient.h"

namespace vgpu::ctl {
namespace {

using kmod::MsgPtr;
using kmod::NewMsg;

Result<kmod::SlotConfig> Config(std::vector<std::string> args) {
  static constexpr FlagSpec kFlags[] = {{"--share", true}, {"--mode", true}};
  auto parsed = ParseArgs("set", args, kFlags);
  if (!parsed.ok()) return parsed.status();
  return ParseSlotConfig(*parsed);
}

TEST(ComputeCtl, ModeFlagParsesAndBadModesAreRefusedByName) {
  auto c = Config({"--share", "30", "--mode", "weight"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->compute_share, 30u);
  EXPECT_EQ(c->compute_mode, kmod::ComputeMode::kWeight);
  EXPECT_EQ(Config({"--mode", "cap"})->compute_mode, kmod::ComputeMode::kCap);
  EXPECT_FALSE(Config({"--share", "50"})->compute_mode.has_value()) << "unset stays unset";
  auto bad = Config({"--mode", "fair"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--mode"), std::string::npos);
}

TEST(ComputeCtl, ModeIsSentOnlyWhenSetAndReadBack) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_SET);
  kmod::SlotConfig cfg;
  cfg.compute_share = 70;
  cfg.compute_mode = kmod::ComputeMode::kWeight;
  ASSERT_TRUE(kmod::PutSlotConfig(m.get(), cfg));
  nlattr* a[VGPU_A_MAX + 1] = {};
  ASSERT_EQ(genlmsg_parse(nlmsg_hdr(m.get()), 0, a, VGPU_A_MAX, nullptr), 0);
  ASSERT_NE(a[VGPU_A_SLOT_COMPUTE_MODE], nullptr);
  EXPECT_EQ(nla_get_u32(a[VGPU_A_SLOT_COMPUTE_MODE]), uint32_t{VGPU_COMPUTE_WEIGHT});

  MsgPtr none = NewMsg(VGPU_CMD_SLOT_SET);
  kmod::SlotConfig share_only;
  share_only.compute_share = 70;
  ASSERT_TRUE(kmod::PutSlotConfig(none.get(), share_only));
  nlattr* b[VGPU_A_MAX + 1] = {};
  ASSERT_EQ(genlmsg_parse(nlmsg_hdr(none.get()), 0, b, VGPU_A_MAX, nullptr), 0);
  EXPECT_EQ(b[VGPU_A_SLOT_COMPUTE_MODE], nullptr) << "SET leaves the mode alone";
}

// A slot as the module reports a capped tenant: mode and the controller's counters.
kmod::SlotInfo CappedSlot() {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_GET);
  nl_msg* msg = m.get();
  EXPECT_EQ(nla_put_u32(msg, VGPU_A_SLOT_ID, 4), 0);
  EXPECT_EQ(nla_put_u32(msg, VGPU_A_SLOT_COMPUTE_SHARE, 30), 0);
  EXPECT_EQ(nla_put_u32(msg, VGPU_A_SLOT_COMPUTE_MODE, VGPU_COMPUTE_CAP), 0);
  nlattr* stats = nla_nest_start(msg, VGPU_A_SLOT_STATS);
  nla_put_u64(msg, VGPU_STAT_GPU_BUSY_NS, 3'000'000'000ull);
  nla_put_u64(msg, VGPU_STAT_THROTTLED_NS, 7'250'000'000ull);
  nla_put_u64(msg, VGPU_STAT_SHARE_1S_PM, 312);
  nla_put_u64(msg, VGPU_STAT_SHARE_10S_PM, 300);
  nla_put_u64(msg, VGPU_STAT_CONTROL_LATE_NS, 12'000'000ull);
  nla_nest_end(msg, stats);
  auto s = kmod::ParseSlotMessage(msg);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : kmod::SlotInfo{};
}

TEST(ComputeCtl, CountersParseAndRender) {
  const kmod::SlotInfo s = CappedSlot();
  EXPECT_EQ(s.compute_mode, uint32_t{VGPU_COMPUTE_CAP});
  EXPECT_EQ(s.stats[VGPU_STAT_SHARE_1S_PM], 312u);

  const std::string table = SlotTable({s});
  EXPECT_NE(table.find("MODE"), std::string::npos);
  EXPECT_NE(table.find("ACHIEVED(1s/10s)"), std::string::npos);
  EXPECT_NE(table.find("31.2%/30.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("cap"), std::string::npos);

  const std::string detail = SlotDetail(s);
  EXPECT_NE(detail.find("30% cap"), std::string::npos) << detail;
  EXPECT_NE(detail.find("busy 3.000 s, throttled 7.250 s, achieved (1s/10s) 31.2%/30.0%"),
            std::string::npos)
      << detail;

  const auto j = SlotToJson(s);
  EXPECT_EQ(j["compute_mode"], "cap");
  EXPECT_EQ(j["stats"]["gpu_busy_ns"], 3'000'000'000ull);
  EXPECT_EQ(j["stats"]["throttled_ns"], 7'250'000'000ull);
  EXPECT_EQ(j["stats"]["share_1s_pm"], 312);
  EXPECT_EQ(j["stats"]["share_10s_pm"], 300);
  EXPECT_EQ(j["stats"]["control_late_ns"], 12'000'000);
}

TEST(ComputeCtl, UncontrolledSlotShowsNoAchievedShare) {
  kmod::SlotInfo s;
  s.compute_share = 100;
  s.compute_mode = VGPU_COMPUTE_CAP;
  const std::string table = SlotTable({s});
  const size_t share = table.find("100%");
  ASSERT_NE(share, std::string::npos) << table;
  EXPECT_EQ(table.find('%', share + 4), std::string::npos)
      << "only the share is a percentage, ACHIEVED shows '-': " << table;
  EXPECT_EQ(kmod::ComputeModeName(0), "unset") << "a module without modes";
  EXPECT_EQ(kmod::ComputeModeName(VGPU_COMPUTE_WEIGHT), "weight");
}

}  // namespace
}  // namespace vgpu::ctl

// vgpuctl: arguments are checked (and bad flags named) before anything talks to the kernel.
#include <sstream>

#include <gtest/gtest.h>

#include "cli.h"
#include "commands.h"

namespace vgpu::ctl {
namespace {

struct CtlRun {
  int rc;
  std::string out, err;
};

CtlRun Ctl(std::vector<std::string> argv) {
  std::ostringstream out, err;
  CommandContext ctx{false, &out, &err};
  int rc = Dispatch(ctx, argv);
  return {rc, out.str(), err.str()};
}

TEST(VgpuctlSize, Units) {
  EXPECT_EQ(*ParseSize("--memory", "4Gi"), 4ull << 30);
  EXPECT_EQ(*ParseSize("--memory", "512Mi"), 512ull << 20);
  EXPECT_EQ(*ParseSize("--memory", "1G"), 1000000000ull);
  EXPECT_EQ(*ParseSize("--memory", "1048576"), 1048576ull);
  EXPECT_EQ(*ParseSize("--memory", "0"), 0ull);
}

TEST(VgpuctlSize, ErrorsNameTheFlag) {
  auto r = ParseSize("--memory", "lots");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--memory"), std::string::npos);
  r = ParseSize("--memory", "4Xi");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown unit 'Xi'"), std::string::npos);
  EXPECT_FALSE(ParseSize("--memory", "99999999999Ti").ok());  // overflows 64 bits
}

TEST(VgpuctlArgs, UnknownFlagIsNamed) {
  CtlRun r = Ctl({"create", "--gpu", "0", "--quota", "1Gi"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("'create' has no flag --quota"), std::string::npos) << r.err;
}

TEST(VgpuctlArgs, MissingValueIsNamed) {
  CtlRun r = Ctl({"create", "--gpu"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--gpu: needs a value"), std::string::npos) << r.err;
}

TEST(VgpuctlArgs, CreateNeedsGpu) {
  CtlRun r = Ctl({"create", "--memory", "1Gi"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--gpu is required"), std::string::npos) << r.err;
}

TEST(VgpuctlArgs, ShareOutOfRangeIsNamed) {
  CtlRun r = Ctl({"create", "--gpu", "0", "--share", "0"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--share: '0' is not a number in 1..100"), std::string::npos) << r.err;
}

TEST(VgpuctlArgs, PolicyValuesAreChecked) {
  CtlRun r = Ctl({"set", "1", "--managed", "maybe"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--managed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'maybe'"), std::string::npos) << r.err;
}

TEST(VgpuctlArgs, FlagValueInline) {
  std::vector<std::string> args = {"--memory=2Gi", "--defer"};
  FlagSpec known[] = {{"--memory", true}, {"--defer", false}};
  auto a = ParseArgs("x", args, known);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->flags.at("--memory"), "2Gi");
  EXPECT_TRUE(a->Has("--defer"));
  std::vector<std::string> bad = {"--defer=1"};
  EXPECT_FALSE(ParseArgs("x", bad, known).ok());
}

TEST(VgpuctlArgs, SlotIdIsChecked) {
  CtlRun r = Ctl({"inspect", "x"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("slot ID"), std::string::npos);
  r = Ctl({"destroy"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("needs exactly one slot ID"), std::string::npos);
}

TEST(VgpuctlDispatch, UnknownCommand) {
  CtlRun r = Ctl({"frobnicate"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(VgpuctlDispatch, HelpListsEveryCommand) {
  CtlRun r = Ctl({"help"});
  EXPECT_EQ(r.rc, 0);
  for (const Command& c : Commands()) EXPECT_NE(r.out.find(std::string(c.name)), std::string::npos);
}

TEST(VgpuctlDispatch, DashDashHelpIsTheHelpCommand) {
  for (const char* flag : {"--help", "-h"}) {
    CtlRun r = Ctl({flag});
    EXPECT_EQ(r.rc, 0) << flag << ": " << r.err;
    EXPECT_NE(r.out.find("usage: vgpuctl"), std::string::npos) << flag;
  }
  CtlRun json = Ctl({"--json", "--help"});
  EXPECT_EQ(json.rc, 0) << json.err;
}

kmod::SlotInfo Sample() {
  kmod::SlotInfo s;
  s.id = 2;
  s.gpu = 0;
  s.name = "team-a";
  s.mem_quota = 4ull << 30;
  s.compute_share = 50;
  s.managed_policy = VGPU_MANAGED_REFUSE;
  s.unknown_policy = VGPU_UNKNOWN_REFUSE;
  s.state = VGPU_SLOT_STATE_ACTIVE;
  s.node_ctl = "vgpuctl2";
  s.node_dev = "vgpu2";
  s.pids = {10, 11};
  s.stats[VGPU_STAT_MEM_CHARGED] = 1ull << 30;
  s.stats[VGPU_STAT_MEM_DENIALS] = 3;
  return s;
}

TEST(VgpuctlRender, TableHasHeaderAndRow) {
  std::string t = SlotTable({Sample()});
  EXPECT_EQ(t.find("ID"), 0u);
  EXPECT_NE(t.find("team-a"), std::string::npos);
  EXPECT_NE(t.find("4.0 GiB"), std::string::npos);
  EXPECT_NE(t.find("1.0 GiB"), std::string::npos);
  EXPECT_NE(t.find("10,11"), std::string::npos);
  EXPECT_NE(t.find("/dev/vgpuctl2"), std::string::npos);
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 2);
}

TEST(VgpuctlRender, JsonCarriesCountersByName) {
  auto j = SlotToJson(Sample());
  EXPECT_EQ(j["id"], 2);
  EXPECT_EQ(j["managed_policy"], "refuse");
  EXPECT_EQ(j["stats"]["mem_charged"], 1ull << 30);
  EXPECT_EQ(j["stats"]["mem_denials"], 3);
  EXPECT_EQ(j["nodes"]["dev"], "/dev/vgpu2");
  EXPECT_FALSE(j["nodes"].contains("uvm"));
  EXPECT_EQ(j["pids"].size(), 2u);
}

TEST(VgpuctlRender, UnlimitedQuota) {
  auto s = Sample();
  s.mem_quota = 0;
  EXPECT_NE(SlotTable({s}).find("unlimited"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::ctl

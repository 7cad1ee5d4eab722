// Round trips through the real libnl encoders: what the module sends is what the client reads.
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include <cerrno>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "genl_test_msg.h"
#include "vgpu/kmodclient.h"

namespace vgpu::kmod {
namespace {

TEST(KmodClient, SlotMessageRoundTrip) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_GET);
  nl_msg* msg = m.get();
  ASSERT_EQ(nla_put_u32(msg, VGPU_A_SLOT_ID, 3), 0);
  ASSERT_EQ(nla_put_u32(msg, VGPU_A_SLOT_GPU, 1), 0);
  ASSERT_EQ(nla_put_string(msg, VGPU_A_SLOT_NAME, "ns/pod/ctr"), 0);
  ASSERT_EQ(nla_put_u64(msg, VGPU_A_SLOT_MEM_QUOTA, 4ull << 30), 0);
  ASSERT_EQ(nla_put_u32(msg, VGPU_A_SLOT_STATE, VGPU_SLOT_STATE_DYING), 0);
  ASSERT_EQ(nla_put_string(msg, VGPU_A_SLOT_NODE_CTL, "vgpuctl3"), 0);
  nlattr* procs = nla_nest_start(msg, VGPU_A_SLOT_PROCS);
  nla_put_u32(msg, VGPU_A_PROC_PID, 100);
  nla_put_u32(msg, VGPU_A_PROC_PID, 200);
  nla_nest_end(msg, procs);
  nlattr* stats = nla_nest_start(msg, VGPU_A_SLOT_STATS);
  nla_put_u64(msg, VGPU_STAT_MEM_CHARGED, 2ull << 20);
  nla_put_u64(msg, VGPU_STAT_MEM_DENIALS, 7);
  nla_put_u64(msg, 200, 1);  // a counter from a newer module: skipped, not an error
  nla_nest_end(msg, stats);

  auto s = ParseSlotMessage(msg);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->id, 3u);
  EXPECT_EQ(s->gpu, 1u);
  EXPECT_EQ(s->name, "ns/pod/ctr");
  EXPECT_EQ(s->mem_quota, 4ull << 30);
  EXPECT_EQ(s->state, uint32_t{VGPU_SLOT_STATE_DYING});
  EXPECT_EQ(s->node_ctl, "vgpuctl3");
  EXPECT_EQ(s->pids, (std::vector<uint32_t>{100, 200}));
  EXPECT_EQ(s->stats[VGPU_STAT_MEM_CHARGED], 2ull << 20);
  EXPECT_EQ(s->stats[VGPU_STAT_MEM_DENIALS], 7u);
  EXPECT_EQ(s->stats[VGPU_STAT_IOCTLS], 0u);
}

TEST(KmodClient, SlotWithoutIdIsDataLoss) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_GET);
  ASSERT_EQ(nla_put_u32(m.get(), VGPU_A_SLOT_GPU, 1), 0);
  auto s = ParseSlotMessage(m.get());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
}

TEST(KmodClient, StatThatIsNotU64IsRefused) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_GET);
  ASSERT_EQ(nla_put_u32(m.get(), VGPU_A_SLOT_ID, 1), 0);
  nlattr* stats = nla_nest_start(m.get(), VGPU_A_SLOT_STATS);
  nla_put_u32(m.get(), VGPU_STAT_MEM_CHARGED, 5);
  nla_nest_end(m.get(), stats);
  auto s = ParseSlotMessage(m.get());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a u64"), std::string::npos);
}

TEST(KmodClient, WrongAttributeTypeIsRefusedByPolicy) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_GET);
  uint8_t one = 1;
  ASSERT_EQ(nla_put(m.get(), VGPU_A_SLOT_ID, 1, &one), 0);  // a u32 attribute of 1 byte
  EXPECT_FALSE(ParseSlotMessage(m.get()).ok());
}

TEST(KmodClient, PutSlotConfigSendsOnlyWhatIsSet) {
  MsgPtr m = NewMsg(VGPU_CMD_SLOT_SET);
  SlotConfig cfg;
  cfg.mem_quota = 1ull << 30;
  cfg.managed_policy = ManagedPolicy::kAllowUncounted;
  ASSERT_TRUE(PutSlotConfig(m.get(), cfg));
  nlattr* a[VGPU_A_MAX + 1] = {};
  ASSERT_EQ(genlmsg_parse(nlmsg_hdr(m.get()), 0, a, VGPU_A_MAX, nullptr), 0);
  ASSERT_NE(a[VGPU_A_SLOT_MEM_QUOTA], nullptr);
  EXPECT_EQ(nla_get_u64(a[VGPU_A_SLOT_MEM_QUOTA]), 1ull << 30);
  ASSERT_NE(a[VGPU_A_SLOT_MANAGED_POLICY], nullptr);
  EXPECT_EQ(nla_get_u32(a[VGPU_A_SLOT_MANAGED_POLICY]), uint32_t{VGPU_MANAGED_ALLOW_UNCOUNTED});
  EXPECT_EQ(a[VGPU_A_SLOT_NAME], nullptr);
  EXPECT_EQ(a[VGPU_A_SLOT_COMPUTE_SHARE], nullptr);
  EXPECT_EQ(a[VGPU_A_SLOT_UNKNOWN_POLICY], nullptr);
}

TEST(KmodClient, EventParses) {
  MsgPtr m = NewMsg(VGPU_CMD_EVENT);
  nla_put_u32(m.get(), VGPU_A_EVENT_TYPE, VGPU_EVENT_QUOTA_DENIED);
  nla_put_u32(m.get(), VGPU_A_SLOT_ID, 2);
  nla_put_u32(m.get(), VGPU_A_EVENT_PID, 77);
  nla_put_string(m.get(), VGPU_A_EVENT_COMM, "python3");
  nla_put_u64(m.get(), VGPU_A_EVENT_CHARGED, 123);
  nla_put_string(m.get(), VGPU_A_EVENT_DETAIL, "memory quota exceeded");
  nlattr* a[VGPU_A_MAX + 1] = {};
  ASSERT_EQ(genlmsg_parse(nlmsg_hdr(m.get()), 0, a, VGPU_A_MAX, nullptr), 0);
  auto e = ParseEvent(a);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, uint32_t{VGPU_EVENT_QUOTA_DENIED});
  EXPECT_EQ(e->slot, 2u);
  EXPECT_EQ(e->pid, 77u);
  EXPECT_EQ(e->comm, "python3");
  EXPECT_EQ(e->charged, 123u);
  EXPECT_EQ(EventName(e->type), "quota_denied");
}

TEST(KmodClient, KernelErrorsMapToCodesAndKeepTheKernelsReason) {
  Status s = KernelError("create slot", -EPERM, "vgpu: changing slots needs CAP_SYS_ADMIN");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_EQ(KernelError("x", -EBUSY, "").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(KernelError("x", -ENOENT, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(KernelError("x", -ENOSPC, "").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(KernelError("x", -EINVAL, "").code(), StatusCode::kInvalidArgument);
  EXPECT_NE(KernelError("destroy slot 4", -EBUSY, "").message().find("destroy slot 4"),
            std::string::npos);
}

TEST(KmodClient, EveryCounterHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = 1; i < __VGPU_STAT_MAX; ++i) {
    if (i == VGPU_STAT_PAD) {
      EXPECT_EQ(StatName(i), "");
      continue;
    }
    EXPECT_FALSE(StatName(i).empty()) << "stat " << i;
    EXPECT_TRUE(names.insert(StatName(i)).second) << StatName(i);
  }
}

}  // namespace
}  // namespace vgpu::kmod

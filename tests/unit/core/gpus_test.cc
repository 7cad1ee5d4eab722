// A slot is one GPU of the node (kmod/core/gpus.c, issue 17 F11.3): with vcore_slot_config.gpu_id
// set, the driver's GPU lists show only it and calls naming another GPU are refused as the
// driver refuses an unknown id; without it nothing changes. The replies are what FakeRm leaves
// in place: the buffers the test maps stand for what the driver wrote.
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

constexpr uint32_t kMine = 7, kOther = 6, kInvalid = 0xffffffffu;
constexpr uint32_t kGetProbedIds = 0x214, kAttachIds = 0x215, kDetachIds = 0x216,
                   kGetPciInfo = 0x21b;

std::vector<uint8_t> CardInfo(std::vector<std::pair<uint32_t, uint32_t>> id_minor) {
  std::vector<nv_ioctl_card_info_t> ci(32);
  for (size_t i = 0; i < id_minor.size(); ++i) {
    ci[i].valid = 1;
    ci[i].gpu_id = id_minor[i].first;
    ci[i].minor_number = id_minor[i].second;
  }
  std::vector<uint8_t> b(ci.size() * sizeof(ci[0]));
  memcpy(b.data(), ci.data(), b.size());
  return b;
}

// An id list of n entries, filled with `fill` (NV0000 lists end at INVALID; ATTACH_GPUS_TO_FD
// skips zeros).
std::vector<uint8_t> Ids(std::vector<uint32_t> ids, size_t n, uint32_t fill = kInvalid) {
  ids.resize(n, fill);
  std::vector<uint8_t> b(n * 4);
  memcpy(b.data(), ids.data(), b.size());
  return b;
}

TEST_F(CoreTest, CardInfoListsOnlyTheSlotsGpu) {
  const auto node = CardInfo({{kOther, 0}, {kMine, 1}});
  EXPECT_EQ(vcore_card_info_gpu_id(node.data(), node.size(), 1), kMine);
  EXPECT_EQ(vcore_card_info_gpu_id(node.data(), node.size(), 2), 0u);
  vcore_size_t len = 0;
  EXPECT_EQ(vcore_card_info_req(&len), Req(NV_ESC_CARD_INFO, 32 * 72));
  EXPECT_EQ(len, 32u * 72u);

  gpu_id_ = kMine;
  MakeSlot(0);
  Put(kArg, node);
  EXPECT_EQ(Call(Req(NV_ESC_CARD_INFO, 32 * 72), kArg).ret, 0);
  const auto e0 = Get<nv_ioctl_card_info_t>(mem_, kArg);
  const auto e1 = Get<nv_ioctl_card_info_t>(mem_, kArg + 72);
  EXPECT_TRUE(e0.valid);
  EXPECT_EQ(e0.gpu_id, kMine);
  EXPECT_EQ(e0.minor_number, 1u);
  EXPECT_FALSE(e1.valid);
  EXPECT_EQ(e1.gpu_id, 0u);
  EXPECT_EQ(Stats().views_rewritten, 1u);
  // A list of the slot's GPU alone is not a rewrite.
  Put(kArg, CardInfo({{kMine, 1}}));
  EXPECT_EQ(Call(Req(NV_ESC_CARD_INFO, 32 * 72), kArg).ret, 0);
  EXPECT_EQ(Stats().views_rewritten, 1u);
}

TEST_F(CoreTest, OtherGpusAreNotListedDescribedOrAttached) {
  gpu_id_ = kMine;
  MakeSlot(0);
  const uint32_t c = AllocClient();
  EXPECT_EQ(Control(c, c, kGetProbedIds, Ids({kOther, kMine}, 96)).ret, 0);
  EXPECT_EQ(Get<uint32_t>(mem_, kParams), kMine);
  EXPECT_EQ(Get<uint32_t>(mem_, kParams + 4), kInvalid);

  Outcome o = Control(c, c, kAttachIds, Ids({kOther}, 33));
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_FALSE(o.forwarded);
  EXPECT_EQ(Get<NVOS54_PARAMETERS>(mem_, kArg).status, NV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Control(c, c, kAttachIds, Ids({0xffff}, 33)).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Control(c, c, kAttachIds, Ids({kMine}, 33)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Control(c, c, kDetachIds, Ids({kOther}, 32)).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Control(c, c, kDetachIds, Ids({0xffff}, 32)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Control(c, c, kGetPciInfo, Ids({kOther, 0, 0}, 3)).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Control(c, c, kGetPciInfo, Ids({kMine, 0, 0}, 3)).verdict, VCORE_FORWARD);

  Put(kArg, Ids({kOther}, 32, 0));
  o = Call(Req(NV_ESC_ATTACH_GPUS_TO_FD, 128), kArg);
  EXPECT_EQ(o.ret, -VCORE_ENODEV);
  EXPECT_FALSE(o.forwarded);
  Put(kArg, Ids({kMine}, 32, 0));
  EXPECT_TRUE(Call(Req(NV_ESC_ATTACH_GPUS_TO_FD, 128), kArg).forwarded);
}

TEST_F(CoreTest, ASlotThatDoesNotKnowItsGpuConfinesNothing) {
  MakeSlot(0);
  const uint32_t c = AllocClient();
  EXPECT_EQ(Control(c, c, kAttachIds, Ids({kOther}, 33)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Control(c, c, kGetProbedIds, Ids({kOther, kMine}, 96)).ret, 0);
  EXPECT_EQ(Get<uint32_t>(mem_, kParams), kOther);
  Put(kArg, CardInfo({{kOther, 0}, {kMine, 1}}));
  EXPECT_EQ(Call(Req(NV_ESC_CARD_INFO, 32 * 72), kArg).ret, 0);
  EXPECT_TRUE(Get<nv_ioctl_card_info_t>(mem_, kArg + 72).valid);
  Put(kArg, Ids({kOther}, 32, 0));
  EXPECT_TRUE(Call(Req(NV_ESC_ATTACH_GPUS_TO_FD, 128), kArg).forwarded);
  EXPECT_EQ(Stats().views_rewritten, 0u);
}

}  // namespace
}  // namespace vgpu::core_test

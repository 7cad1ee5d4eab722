// A driver branch is its tables and nothing else (docs/nvidia-rm-abi.md, "Adding a driver
// branch"): the core's dispatch, unchanged, over the made-up test branch of delta_branch.c (NOT a
// driver branch: see delta_branch.h). The same calls on a 580 slot show that what changed is the
// tables. The shim's in-process path over the same branch: tests/unit/shim/shim_preload_test.cc.
#include "tests/unit/core/delta_branch.h"
#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

class DeltaBranchTest : public CoreTest {
 protected:
  // A slot of `version`'s branch with a 4 GiB quota, a session and 512 MiB charged.
  void Start(const char* version) {
    driver_version_ = version;
    MakeSlot(4 * kGiB);
    Session(&client_, &device_, &subdevice_);
    ASSERT_EQ(AllocVidmem(client_, device_, 0x5c000010, 512 * kMiB).verdict, VCORE_FORWARD);
  }
  uint32_t Status() { return Get<uint32_t>(mem_, kArg + offsetof(NVOS54_PARAMETERS, status)); }
  uint32_t AllocStatus() { return Get<uint32_t>(mem_, kArg + offsetof(NVOS64_PARAMETERS, status)); }
  // HEAP_SIZE and HEAP_FREE (KiB) as the call left them.
  std::pair<uint64_t, uint64_t> HeapKiB() {
    const uint64_t list = kParams + offsetof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS, fbInfoList);
    return {Get<uint32_t>(mem_, list + 4), Get<uint32_t>(mem_, list + 12)};
  }
  int Tsgs() {
    int n = 0;
    auto count = [](void* arg, const vcore_tsg_info*) {
      ++*static_cast<int*>(arg);
      return 0;
    };
    vcore_slot_for_each_tsg(slot_, count, &n);
    return n;
  }
  uint32_t client_ = 0, device_ = 0, subdevice_ = 0;
};

TEST_F(DeltaBranchTest, TheVersionPicksTheBranch) {
  const vcore_abi* abi = vcore_abi_for_version(DELTA_TEST_VERSION);
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(abi->parent, &vcore_abi_580);
  EXPECT_EQ(vcore_abi_for_version("580.159.04"), &vcore_abi_580);
  char msg[128];
  EXPECT_EQ(vcore_driver_version_supported(DELTA_TEST_VERSION, msg, sizeof msg), 1);
  EXPECT_NE(std::string(msg).find("not a driver branch"), std::string::npos) << msg;
}

TEST_F(DeltaBranchTest, TheViewFollowsTheRenumberedControl) {
  Start(DELTA_TEST_VERSION);
  EXPECT_EQ(
      Control(client_, subdevice_, DELTA_TEST_CTRL_FB_GET_INFO_V2,
              FbV2({NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE}))
          .verdict,
      VCORE_FORWARD);
  EXPECT_EQ(HeapKiB(), std::make_pair(4 * kGiB >> 10, (4 * kGiB - 512 * kMiB) >> 10));
  EXPECT_EQ(Stats().views_rewritten, 1u);
  // The old number is gone from the branch: refused as unknown (strict policy).
  Control(client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, FbV2({0x09}));
  EXPECT_EQ(Status(), static_cast<uint32_t>(NV_ERR_NOT_SUPPORTED));
}

TEST_F(DeltaBranchTest, On580TheSameCallsAreUnknown) {
  Start("580.159.04");
  Control(client_, subdevice_, DELTA_TEST_CTRL_FB_GET_INFO_V2, FbV2({0x09}));
  EXPECT_EQ(Status(), static_cast<uint32_t>(NV_ERR_NOT_SUPPORTED));
  EXPECT_EQ(Alloc(client_, device_, 0x5c002000, DELTA_TEST_CLASS_TSG,
                  Bytes(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS{}))
                .verdict,
            VCORE_REFUSE_STATUS);
  EXPECT_EQ(AllocStatus(), static_cast<uint32_t>(NV_ERR_INVALID_CLASS));
  EXPECT_EQ(vcore_class_role_of(slot_, DELTA_TEST_CLASS_TSG), VCORE_CLASS_UNKNOWN);
  EXPECT_EQ(vcore_class_role_of(slot_, KEPLER_CHANNEL_GROUP_A), VCORE_CLASS_TSG);
}

TEST_F(DeltaBranchTest, ParamsSizesComeFromTheBranchsRow) {
  Start(DELTA_TEST_VERSION);
  NV2080_CTRL_GPU_GET_PIDS_PARAMS p580{};
  // The 580 size no longer matches the row: refused before the driver sees it.
  const int calls = rm_.calls;
  Control(client_, subdevice_, NV2080_CTRL_CMD_GPU_GET_PIDS, Bytes(p580));
  EXPECT_NE(Status(), static_cast<uint32_t>(NV_OK));
  EXPECT_EQ(rm_.calls, calls);
  std::vector<uint8_t> delta = Bytes(p580);
  delta.resize(sizeof p580 + DELTA_TEST_GET_PIDS_EXTRA);
  EXPECT_EQ(Control(client_, subdevice_, NV2080_CTRL_CMD_GPU_GET_PIDS, delta).verdict,
            VCORE_FORWARD);
  EXPECT_EQ(rm_.calls, calls + 1);
}

TEST_F(DeltaBranchTest, NewClassNumbersJoinTheTsgRegistry) {
  Start(DELTA_TEST_VERSION);
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS tsg{};
  tsg.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
  ASSERT_EQ(Alloc(client_, device_, 0x5c002000, DELTA_TEST_CLASS_TSG, Bytes(tsg)).verdict,
            VCORE_FORWARD);
  ASSERT_EQ(Alloc(client_, 0x5c002000, 0x5c002001, DELTA_TEST_CLASS_CHANNEL,
                  std::vector<uint8_t>(sizeof(NV_CHANNEL_ALLOC_PARAMS)))
                .verdict,
            VCORE_FORWARD);
  EXPECT_EQ(Tsgs(), 1);
  EXPECT_EQ(Stats().tsgs, 1u);
  // Their RM-internal memory is charged at the branch's own estimates (issue 17 F11.1).
  EXPECT_EQ(Charged(), 512 * kMiB + DELTA_TEST_TSG_INTERNAL + DELTA_TEST_CHANNEL_INTERNAL);
  EXPECT_EQ(Stats().internal_charged_bytes, DELTA_TEST_TSG_INTERNAL + DELTA_TEST_CHANNEL_INTERNAL);
  // What the hosts ask instead of testing class numbers (kmod/core/vcore.h).
  EXPECT_EQ(vcore_class_role_of(slot_, DELTA_TEST_CLASS_TSG), VCORE_CLASS_TSG);
  EXPECT_EQ(vcore_class_role_of(slot_, DELTA_TEST_CLASS_CHANNEL), VCORE_CLASS_CHANNEL);
  EXPECT_EQ(vcore_class_role_of(slot_, NV20_SUBDEVICE_0), VCORE_CLASS_SUBDEVICE);
  EXPECT_EQ(vcore_class_params_size(slot_, DELTA_TEST_CLASS_CHANNEL),
            sizeof(NV_CHANNEL_ALLOC_PARAMS));
}

}  // namespace
}  // namespace vgpu::core_test

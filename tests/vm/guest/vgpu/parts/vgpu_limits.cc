// Per-slot limits on scheduling objects (F11.1 of the security review;
// docs/security/kernel-lifetime-compute.md): channel ids are GPU-wide, so one tenant must not be
// able to take them all, and every TSG and channel of a slot must be one the compute controller
// can gate. libcuda makes 4 TSGs and 20 channels per context, all channels under a TSG. Linked
// into vgpu_gtest (guest.cmake).
#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint32_t kMaxTsgs = 64, kMaxChannels = 1024;  // VCORE_SLOT_MAX_TSGS/CHANNELS

int64_t AllocTsg(Session& s, uint32_t h) {
  nv_channel_group_alloc_params tp{};
  tp.engineType = 1;
  return Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &tp);
}
int64_t AllocChannel(Session& s, uint32_t parent, uint32_t h) {
  uint8_t chp[368] = {};
  return Alloc(s.ctl, s.client, parent, &h, 0xc86f, chp);
}

TEST(Limits, TsgsAndChannelsPerSlotAreCapped) {
  ScopedSlot slot(0, "limits");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  uint32_t tsgs = 0, channels = 0;
  for (uint32_t i = 0; i < kMaxTsgs + 8; ++i)
    if (AllocTsg(s, 0xd1000000 + i) == NV_OK) ++tsgs;
  EXPECT_EQ(tsgs, kMaxTsgs) << "TSGs granted to one slot";
  for (uint32_t i = 0; i < kMaxChannels + 16; ++i)
    if (AllocChannel(s, 0xd1000000 + i % kMaxTsgs, 0xd2000000 + i) == NV_OK) ++channels;
  EXPECT_EQ(channels, kMaxChannels) << "channels granted to one slot";
  // Freeing gives room again.
  EXPECT_EQ(Free(s.ctl, s.client, 0xd1000000, 0xd2000000), NV_OK);
  EXPECT_EQ(AllocChannel(s, 0xd1000000, 0xd2100000), NV_OK);
  // A channel straight under the device gets an RM-internal TSG no controller can gate.
  EXPECT_NE(AllocChannel(s, s.device, 0xd2200000), NV_OK) << "device-parented channel granted";
}

}  // namespace
}  // namespace vgpu_test

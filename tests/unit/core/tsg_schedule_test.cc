// The TSG registry's schedule state (kmod/core/rm_control.c, vcore.h): a TSG is "scheduled" once
// the app's NVA06C_CTRL_CMD_GPFIFO_SCHEDULE(bEnable=1) returned NV_OK, and no longer after a
// successful bEnable=0. The compute hosts control only scheduled TSGs: on the H200 a controller
// that disabled channels and PREEMPTed a TSG before libcuda's schedule (nvidia-rm-abi.md §6.1)
// froze the tenant for good (docs/results/compute-h200.md, run 5).
#include <cstring>

#include "core_fixture.h"
#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"

namespace vgpu::core_test {
namespace {

constexpr uint32_t kTsg = 0x5c000100;
constexpr uint32_t kChannel = 0x5c000110;

struct Seen {
  int tsgs = 0, channels = 0;
  bool tsg_scheduled = false, channel_scheduled = false;
};

class TsgScheduleTest : public CoreTest {
 protected:
  void SetUp() override {
    MakeSlot(0);
    Session(&client_, &device_, &subdevice_);
    NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
    t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
    ASSERT_EQ(Alloc(client_, device_, kTsg, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict,
              VCORE_FORWARD);
    ASSERT_EQ(Alloc(client_, kTsg, kChannel, HOPPER_CHANNEL_GPFIFO_A,
                    std::vector<uint8_t>(NV_CHANNEL_ALLOC_PARAMS_SIZE))
                  .verdict,
              VCORE_FORWARD);
  }

  Seen Walk() {
    Seen s;
    vcore_slot_for_each_tsg(
        slot_,
        [](void* arg, const vcore_tsg_info* t) {
          auto* s = static_cast<Seen*>(arg);
          ++s->tsgs;
          s->tsg_scheduled = t->scheduled;
          return 0;
        },
        &s);
    vcore_slot_for_each_channel(
        slot_,
        [](void* arg, const vcore_channel_info* ch) {
          auto* s = static_cast<Seen*>(arg);
          ++s->channels;
          s->channel_scheduled = ch->tsg_scheduled;
          return 0;
        },
        &s);
    return s;
  }

  static std::vector<uint8_t> ScheduleParams(bool enable) {
    return {static_cast<uint8_t>(enable), 0, 0};  // {bEnable, bSkipSubmit, bSkipEnable}
  }

  // One GPFIFO_SCHEDULE where the test plays the driver: between pre and post it may rewrite
  // the params in user memory (a racing thread) and sets the reply status.
  int ScheduleByHand(bool enable, uint32_t rm_status, int rewrite_to = -1) {
    NVOS54_PARAMETERS p{};
    p.hClient = client_;
    p.hObject = kTsg;
    p.cmd = NVA06C_CTRL_CMD_GPFIFO_SCHEDULE;
    p.params = kParams;
    p.paramsSize = NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS_SIZE;
    Put(kArg, Bytes(p));
    Put(kParams, ScheduleParams(enable));
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = nullptr;
    EXPECT_EQ(vcore_pre(ctl_, Req(NV_ESC_RM_CONTROL, 32), kArg, &ctx, &call), VCORE_FORWARD);
    if (rewrite_to >= 0) {
      uint8_t b = static_cast<uint8_t>(rewrite_to);
      EXPECT_TRUE(mem_.Write(kParams, &b, 1));
    }
    EXPECT_TRUE(mem_.Write(kArg + 28, &rm_status, sizeof(rm_status)));  // NVOS54.status
    return vcore_post(call, 0);
  }

  uint32_t client_ = 0, device_ = 0, subdevice_ = 0;
};

TEST_F(TsgScheduleTest, ATsgIsScheduledOnlyAfterASuccessfulScheduleAndUntilItsDisable) {
  Seen s = Walk();
  ASSERT_EQ(s.tsgs, 1);
  ASSERT_EQ(s.channels, 1);
  EXPECT_FALSE(s.tsg_scheduled) << "allocated, not yet scheduled (libcuda schedules last)";
  EXPECT_FALSE(s.channel_scheduled);

  EXPECT_FALSE(vcore_slot_tsg_scheduled(slot_, client_, kTsg));
  const uint64_t gen0 = vcore_slot_tsg_generation(slot_);
  EXPECT_EQ(Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true)).verdict,
            VCORE_FORWARD);
  s = Walk();
  EXPECT_TRUE(s.tsg_scheduled);
  EXPECT_TRUE(s.channel_scheduled) << "channels carry their TSG's state";
  EXPECT_TRUE(vcore_slot_tsg_scheduled(slot_, client_, kTsg)) << "the point query agrees";
  EXPECT_FALSE(vcore_slot_tsg_scheduled(slot_, client_, kChannel)) << "a channel is no TSG";
  EXPECT_FALSE(vcore_slot_tsg_scheduled(slot_, client_ + 1, kTsg)) << "another client's handle";
  const uint64_t gen1 = vcore_slot_tsg_generation(slot_);
  EXPECT_GT(gen1, gen0) << "a host that caches the registry must see the change";

  // The same state again changes nothing.
  Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  EXPECT_EQ(vcore_slot_tsg_generation(slot_), gen1);

  Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(false));
  s = Walk();
  EXPECT_FALSE(s.tsg_scheduled);
  EXPECT_FALSE(s.channel_scheduled);
  EXPECT_FALSE(vcore_slot_tsg_scheduled(slot_, client_, kTsg));
  EXPECT_GT(vcore_slot_tsg_generation(slot_), gen1);
}

TEST_F(TsgScheduleTest, ARefusedScheduleChangesNothing) {
  EXPECT_EQ(ScheduleByHand(true, NV_ERR_GENERIC), 0);
  EXPECT_FALSE(Walk().tsg_scheduled) << "RM refused (as it does for channels UVM has not bound)";
  ASSERT_EQ(ScheduleByHand(true, NV_OK), 0);
  ASSERT_TRUE(Walk().tsg_scheduled);
  EXPECT_EQ(ScheduleByHand(false, NV_ERR_GENERIC), 0);
  EXPECT_TRUE(Walk().tsg_scheduled) << "a refused bEnable=0 leaves the TSG on the runlist";
  // A failed ioctl (errno) is no schedule either.
  rm_.rc = -14;
  Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(false));
  rm_.rc = 0;
  EXPECT_TRUE(Walk().tsg_scheduled);
}

TEST_F(TsgScheduleTest, BEnableIsReadFromThePrivateCopyNotFromUserMemoryAgain) {
  // A racing thread flips bEnable after the core copied it: the registry follows the copy.
  ASSERT_EQ(ScheduleByHand(true, NV_OK, /*rewrite_to=*/0), 0);
  EXPECT_TRUE(Walk().tsg_scheduled);
  ASSERT_EQ(ScheduleByHand(false, NV_OK, /*rewrite_to=*/1), 0);
  EXPECT_FALSE(Walk().tsg_scheduled);
}

TEST_F(TsgScheduleTest, ScheduleOnAnObjectThatIsNoTsgIsIgnored) {
  // The driver would refuse it; even a success reply must not mark a channel or a device.
  Control(client_, kChannel, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  Control(client_, device_, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  Control(client_, 0x5c0000ff, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  Seen s = Walk();
  EXPECT_FALSE(s.tsg_scheduled);
  EXPECT_FALSE(s.channel_scheduled);
}

TEST_F(TsgScheduleTest, AReallocatedTsgStartsUnscheduled) {
  Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  ASSERT_TRUE(Walk().tsg_scheduled);
  Free(client_, device_, kTsg);
  EXPECT_EQ(Walk().tsgs, 0);
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
  t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
  ASSERT_EQ(Alloc(client_, device_, kTsg, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict, VCORE_FORWARD);
  Seen s = Walk();
  EXPECT_EQ(s.tsgs, 1);
  EXPECT_FALSE(s.tsg_scheduled) << "the handle is reused, the schedule is not";
}

TEST_F(TsgScheduleTest, AWrongParamsSizeIsRefusedAndSchedulesNothing) {
  EXPECT_EQ(Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, {1, 0, 0, 0}).verdict,
            VCORE_REFUSE_STATUS);
  EXPECT_FALSE(Walk().tsg_scheduled);
}

// The kernel host's control_copy (vcore.h): the driver gets the core's copy, not user memory.
struct CopiedControl {
  int calls = 0;
  uint32_t h_client = 0, h_object = 0, cmd = 0;
  std::vector<uint8_t> params;
  uint32_t status = NV_OK;
  int err = 0;  // != 0: the driver cannot be asked
};
CopiedControl* g_copied = nullptr;

int ControlCopy(void*, vcore_u32 h_client, vcore_u32 h_object, vcore_u32 cmd, void* params,
                vcore_u32 size, vcore_u32* status) {
  ++g_copied->calls;
  if (g_copied->err) return g_copied->err;
  g_copied->h_client = h_client;
  g_copied->h_object = h_object;
  g_copied->cmd = cmd;
  g_copied->params.assign(static_cast<uint8_t*>(params), static_cast<uint8_t*>(params) + size);
  *status = g_copied->status;
  return 0;
}
vcore_host_ops OpsWithControlCopy() {
  vcore_host_ops ops = SimHost::kOps;
  ops.control_copy = ControlCopy;
  return ops;
}
const vcore_host_ops kCopyOps = OpsWithControlCopy();

// F7 (docs/security/kernel-lifetime-compute.md): a thread that rewrote bEnable between the core's
// read and the driver's left the driver and the registry disagreeing. With the host's in-kernel
// entry the core's copy is what the driver runs, and the call is answered, never forwarded.
TEST_F(TsgScheduleTest, WithTheKernelEntryTheDriverSchedulesThePrivateCopy) {
  CopiedControl copied;
  g_copied = &copied;
  MakeSlot(0, VCORE_UNKNOWN_STRICT, &kCopyOps);
  Session(&client_, &device_, &subdevice_);
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
  t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
  ASSERT_EQ(Alloc(client_, device_, kTsg, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict, VCORE_FORWARD);
  Outcome o = Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
  EXPECT_EQ(o.verdict, VCORE_ANSWERED);
  EXPECT_FALSE(o.forwarded) << "the driver would read the params from user memory again";
  EXPECT_EQ(o.ret, 0);
  ASSERT_EQ(copied.calls, 1);
  EXPECT_EQ(copied.h_client, client_);
  EXPECT_EQ(copied.h_object, kTsg);
  EXPECT_EQ(copied.cmd, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE);
  EXPECT_EQ(copied.params, ScheduleParams(true));
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 28), NV_OK) << "the driver's status, in NVOS54.status";
  EXPECT_TRUE(Walk().tsg_scheduled);
  EXPECT_EQ(Stats().denied, 0u) << "an answered call is no refusal";
  // The driver's refusal is the caller's answer, and changes nothing.
  copied.status = NV_ERR_GENERIC;
  EXPECT_EQ(Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(false)).verdict,
            VCORE_ANSWERED);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 28), NV_ERR_GENERIC);
  EXPECT_TRUE(Walk().tsg_scheduled);
  // Not a recorded TSG: never issued with kernel privilege, forwarded as the tenant's own call.
  copied.status = NV_OK;
  EXPECT_EQ(
      Control(client_, device_, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true)).verdict,
      VCORE_FORWARD);
  EXPECT_EQ(copied.calls, 2);
  // A driver that cannot be asked: forwarded, and the registry follows the copy as without it.
  copied.err = -5;
  EXPECT_EQ(Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(false)).verdict,
            VCORE_FORWARD);
  EXPECT_FALSE(Walk().tsg_scheduled);
  g_copied = nullptr;
}

// The host's tsg_scheduled hook (vcore.h): the kernel host wakes its compute controller there, so
// that a TSG scheduled while its slot is gated off is gated at once. It must come once per TSG that
// went on the runlist, after the registry says so (the controller's walk runs at once), and never
// for a refused schedule, a repeat or an unschedule.
struct HookSeen {
  vcore_slot* slot = nullptr;
  uint32_t client = 0;
  int calls = 0, calls_scheduled = 0;
};
HookSeen* g_hook = nullptr;

void TsgScheduled(void*) {
  ++g_hook->calls;
  g_hook->calls_scheduled += vcore_slot_tsg_scheduled(g_hook->slot, g_hook->client, kTsg);
}
vcore_host_ops OpsWithHook(bool control_copy) {
  vcore_host_ops ops = SimHost::kOps;
  ops.tsg_scheduled = TsgScheduled;
  if (control_copy) ops.control_copy = ControlCopy;
  return ops;
}
const vcore_host_ops kHookOps = OpsWithHook(false);
const vcore_host_ops kHookCopyOps = OpsWithHook(true);

TEST_F(TsgScheduleTest, TheHostHearsOfEachTsgThatWentOnTheRunlistAfterTheRegistry) {
  for (const vcore_host_ops* ops : {&kHookOps, &kHookCopyOps}) {
    SCOPED_TRACE(ops == &kHookOps ? "forwarded (post)" : "kernel entry (control_copy)");
    CopiedControl copied;
    HookSeen seen;
    g_copied = &copied;
    g_hook = &seen;
    MakeSlot(0, VCORE_UNKNOWN_STRICT, ops);
    Session(&client_, &device_, &subdevice_);
    seen.slot = slot_;
    seen.client = client_;
    NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS t{};
    t.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
    ASSERT_EQ(Alloc(client_, device_, kTsg, KEPLER_CHANNEL_GROUP_A, Bytes(t)).verdict,
              VCORE_FORWARD);
    EXPECT_EQ(seen.calls, 0) << "an allocation is no schedule";
    // Refused by RM: nothing went on the runlist.
    copied.status = NV_ERR_GENERIC;
    if (ops == &kHookOps)
      ScheduleByHand(true, NV_ERR_GENERIC);
    else
      Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
    EXPECT_EQ(seen.calls, 0) << "a refused schedule";
    copied.status = NV_OK;
    Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(seen.calls_scheduled, 1) << "the hook ran before the registry recorded the schedule";
    Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
    EXPECT_EQ(seen.calls, 1) << "a repeat changes nothing";
    Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(false));
    EXPECT_EQ(seen.calls, 1) << "off the runlist: nothing to gate";
    Control(client_, kTsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, ScheduleParams(true));
    EXPECT_EQ(seen.calls, 2);
    EXPECT_EQ(seen.calls_scheduled, 2);
    g_hook = nullptr;
    g_copied = nullptr;
  }
}

}  // namespace
}  // namespace vgpu::core_test

// The call path's cost rules (the RM_CONTROL benchmark, docs/results/kmod-bench.md): a small
// control allocates nothing and takes no slot lock once the slot is warm; the per-slot lookup index
// answers exactly what the parent + delta walk answers; spare calls are shared safely between
// threads; the pid set still learns every caller.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/unit/core/core_fixture.h"

// Delta rows name only the fields they set, as the C tables do.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

// SimHost's ops, counting allocations and lock acquisitions.
std::atomic<long> g_zallocs{0};
std::atomic<long> g_locks{0};

void* CountingZalloc(void* priv, vcore_size_t n) {
  ++g_zallocs;
  return SimHost::kOps.zalloc(priv, n);
}
void CountingLock(void* lock) {
  ++g_locks;
  SimHost::kOps.lock(lock);
}
vcore_host_ops CountingOps() {
  vcore_host_ops ops = SimHost::kOps;
  ops.zalloc = CountingZalloc;
  ops.lock = CountingLock;
  return ops;
}
const vcore_host_ops kCountingOps = CountingOps();

TEST_F(CoreTest, ASmallControlAllocatesNothingAndTakesNoLockOnceWarm) {
  MakeSlot(0, VCORE_UNKNOWN_STRICT, &kCountingOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  const uint32_t tsg = 0x5c000010;
  ASSERT_EQ(Alloc(c, d, tsg, KEPLER_CHANNEL_GROUP_A,
                  std::vector<uint8_t>(sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS)))
                .verdict,
            VCORE_FORWARD);
  // Warm: the first call of this pid on this file notes the pid and fills a spare cell.
  ASSERT_EQ(Control(c, tsg, NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8)).ret, 0);
  long zallocs = g_zallocs, locks = g_locks;
  for (int i = 0; i < 100; ++i) {
    Outcome o = Control(c, tsg, NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8));
    ASSERT_EQ(o.verdict, VCORE_FORWARD);
    ASSERT_EQ(o.ret, 0);
  }
  EXPECT_EQ(g_zallocs - zallocs, 0) << "host allocations on the small-control path";
  EXPECT_EQ(g_locks - locks, 0) << "slot lock taken on the small-control path";
  // ...and the lock-free counter still counts every call.
  EXPECT_EQ(Stats().ioctls, 100u + 5u);  // client, device, subdevice, TSG, warm-up
  // A refusal still takes the slow path: counted, logged, nothing leaked.
  Outcome o = Control(c, tsg, NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8), 7);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Stats().denied, 1u);
}

TEST_F(CoreTest, TheMemoryViewReadsOnlyTheReplyAndAllocatesNothing) {
  MakeSlot(256 * kMiB, VCORE_UNKNOWN_STRICT, &kCountingOps);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS fb{};
  fb.fbInfoListSize = 1;
  fb.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  ASSERT_EQ(Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, Bytes(fb)).ret, 0);  // warm
  long zallocs = g_zallocs;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, Bytes(fb)).ret, 0);
    EXPECT_EQ(Get<uint32_t>(mem_, kParams + 8), 256u * 1024) << "HEAP_FREE in KiB = the quota";
  }
  EXPECT_EQ(g_zallocs - zallocs, 0);
  EXPECT_EQ(Stats().views_rewritten, 21u);
  // A list length past the driver's maximum is bounded, not trusted (and not a fault).
  fb.fbInfoListSize = 100000;
  EXPECT_EQ(Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, Bytes(fb)).verdict, VCORE_FORWARD);
  // Nothing is read before the call: unreadable params go to the driver as the caller passed
  // them (it answers them; here it faults), and the view reads nothing of a failed call.
  NVOS54_PARAMETERS bad{c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, 0, 0xbad00000, 1028, 0};
  Put(kArg, Bytes(bad));
  rm_.rc = -VCORE_EFAULT;
  Outcome o = Call(Req(NV_ESC_RM_CONTROL, 32), kArg);
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
  EXPECT_EQ(Stats().denied, 0u);
}

TEST_F(CoreTest, EveryNewCallerPidIsNotedEvenWhenTheFileRemembersAnother) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  // Maps the control at kArg; the calls below reuse it with other pids.
  ASSERT_EQ(Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2,
                    std::vector<uint8_t>(sizeof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS)))
                .verdict,
            VCORE_FORWARD);
  ASSERT_EQ(Call(Req(NV_ESC_RM_CONTROL, 32), kArg, nullptr, 4242).verdict, VCORE_FORWARD);
  EXPECT_TRUE(vcore_pid_in_slot(slot_, 4242));
  // Fill the set past its size: pids are forgotten, and a forgotten pid that calls again on a
  // file whose last caller it was must be noted again.
  for (uint32_t pid = 5000; pid < 5000 + 2 * VCORE_PID_SET; ++pid) {
    Call(Req(NV_ESC_RM_CONTROL, 32), kArg, nullptr, pid);
  }
  const uint32_t last = 5000 + 2 * VCORE_PID_SET - 1;
  EXPECT_TRUE(vcore_pid_in_slot(slot_, last));
  for (uint32_t pid = 6000; pid < 6000 + VCORE_PID_SET; ++pid) {
    vcore_file* f = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
    Call(Req(NV_ESC_RM_CONTROL, 32), kArg, f, pid);
    vcore_file_close(f);
  }
  ASSERT_FALSE(vcore_pid_in_slot(slot_, last)) << "the set should have forgotten it";
  Call(Req(NV_ESC_RM_CONTROL, 32), kArg, nullptr, last);
  EXPECT_TRUE(vcore_pid_in_slot(slot_, last));
}

// The index against the walk it replaces, on the 580 tables and on a delta branch.
const vcore_esc_row kEscDelta[] = {
    {.nr = NV_ESC_RM_CONFIG_GET, .flags = VCORE_ESC_REMOVED, .name = "removed"},
};
const vcore_ctrl_row kCtrlDelta[] = {
    {.cmd = NV2080_CTRL_CMD_GPU_GET_PIDS, .size = 4000, .name = "bigger"},
    {.cmd = NV2080_CTRL_CMD_GR_GET_INFO, .flags = VCORE_CTRL_REMOVED, .name = "gone"},
    {.cmd = 0x12345678, .size = 8, .name = "new"},
};
const vcore_uvm_row kUvmDelta[] = {{.cmd = 4242, .size = 8, .name = "new uvm"}};
const vcore_abi kNext = {.name = "next",
                         .parent = &vcore_abi_580,
                         .esc = kEscDelta,
                         .n_esc = 1,
                         .ctrl = kCtrlDelta,
                         .n_ctrl = 3,
                         .uvm = kUvmDelta,
                         .n_uvm = 1};

void ExpectIndexMatchesWalk(vcore_slot* slot) {
  const vcore_abi* abi = slot->abi;
  for (uint32_t nr = 0; nr < 256; ++nr) {
    EXPECT_EQ(vcore_slot_esc(slot, nr), vcore_abi_esc(abi, nr)) << "escape 0x" << std::hex << nr;
  }
  std::vector<uint32_t> cmds = {0, 1, 0xffffffffu, 0x20801304, 0xdeadbeef};
  std::vector<uint32_t> uvms = {0, 1, 9999, 0xffffffffu};
  for (const vcore_abi* a = abi; a; a = a->parent) {
    for (size_t i = 0; i < a->n_ctrl; ++i) cmds.push_back(a->ctrl[i].cmd);
    for (size_t i = 0; i < a->n_ctrl_pass; ++i) cmds.push_back(a->ctrl_pass[i].cmd);
    for (size_t i = 0; i < a->n_uvm; ++i) uvms.push_back(a->uvm[i].cmd);
  }
  for (uint32_t cmd : cmds) {
    EXPECT_EQ(vcore_slot_ctrl(slot, cmd), vcore_abi_ctrl(abi, cmd)) << "cmd 0x" << std::hex << cmd;
    // Neighbours of real keys collide in the hash and must still miss.
    EXPECT_EQ(vcore_slot_ctrl(slot, cmd + 1), vcore_abi_ctrl(abi, cmd + 1));
  }
  for (uint32_t cmd : uvms) {
    EXPECT_EQ(vcore_slot_uvm(slot, cmd), vcore_abi_uvm(abi, cmd)) << "uvm " << cmd;
  }
}

TEST_F(CoreTest, TheSlotIndexAnswersWhatTheTableWalkAnswers) {
  MakeSlot(0);
  ExpectIndexMatchesWalk(slot_);
  // A delta branch: rebuild the index over it (white box: slots only pick 580 by version).
  vcore_slot_index_free(slot_);
  slot_->abi = &kNext;
  ASSERT_EQ(vcore_slot_index_build(slot_), 0);
  EXPECT_EQ(vcore_slot_esc(slot_, NV_ESC_RM_CONFIG_GET), nullptr);
  EXPECT_EQ(vcore_slot_ctrl(slot_, NV2080_CTRL_CMD_GPU_GET_PIDS)->size, 4000u);
  EXPECT_EQ(vcore_slot_ctrl(slot_, NV2080_CTRL_CMD_GR_GET_INFO), nullptr);
  EXPECT_NE(vcore_slot_ctrl(slot_, 0x12345678), nullptr);
  EXPECT_NE(vcore_slot_uvm(slot_, 4242), nullptr);
  ExpectIndexMatchesWalk(slot_);
}

TEST_F(CoreTest, SlotCreationFailsCleanlyWithoutMemoryForTheIndex) {
  vcore_slot_config cfg{};
  snprintf(cfg.driver_version, sizeof cfg.driver_version, "580.159.04");
  for (long n = 0; n < 3; ++n) {
    host_.FailAllocAfter(n);  // the slot, then each index table
    int err = 0;
    EXPECT_EQ(vcore_slot_create(&SimHost::kOps, &host_, &cfg, nullptr, &err), nullptr) << n;
    EXPECT_EQ(err, -VCORE_ENOMEM);
    host_.FailAllocAfter(-1);
    EXPECT_EQ(host_.live_allocs(), 0) << n;
  }
}

// A host over plain process memory with thread-safe counters: many threads, one slot.
std::atomic<long> g_live{0};
int PlainCopyIn(void*, void* dst, vcore_uptr_t src, vcore_size_t n) {
  memcpy(dst, reinterpret_cast<const void*>(src), n);
  return 0;
}
int PlainCopyOut(void*, vcore_uptr_t dst, const void* src, vcore_size_t n) {
  memcpy(reinterpret_cast<void*>(dst), src, n);
  return 0;
}
void* PlainZalloc(void*, vcore_size_t n) {
  ++g_live;
  return calloc(1, n);
}
void PlainFree(void*, void* p) {
  if (p) --g_live;
  free(p);
}
void* PlainLockCreate(void*) { return new std::mutex; }
void PlainLockDestroy(void*, void* l) { delete static_cast<std::mutex*>(l); }
void PlainLock(void* l) { static_cast<std::mutex*>(l)->lock(); }
void PlainUnlock(void* l) { static_cast<std::mutex*>(l)->unlock(); }
void PlainLog(void*, vcore_log_level, const char*) {}
vcore_u64 PlainClock(void*) { return 0; }
const vcore_host_ops kPlainOps = {PlainCopyIn,     PlainCopyOut,     PlainZalloc, PlainFree,
                                  PlainLockCreate, PlainLockDestroy, PlainLock,   PlainUnlock,
                                  PlainLog,        PlainClock,       nullptr};

TEST(CoreThreads, ConcurrentCallsShareTheSpareCallsSafely) {
  vcore_slot_config cfg{};
  snprintf(cfg.driver_version, sizeof cfg.driver_version, "580.159.04");
  int err = 0;
  vcore_slot* slot = vcore_slot_create(&kPlainOps, nullptr, &cfg, nullptr, &err);
  ASSERT_NE(slot, nullptr);
  constexpr int kThreads = 8, kCalls = 3000;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  // Half the threads share one file, the others have their own.
  vcore_file* shared = vcore_file_open(slot, VCORE_FILE_CTL, nullptr);
  ASSERT_NE(shared, nullptr);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      vcore_file* own = vcore_file_open(slot, VCORE_FILE_CTL, nullptr);
      vcore_file* f = t % 2 ? shared : own;
      uint8_t params[8] = {};
      NVOS54_PARAMETERS p{};
      p.hClient = 1;
      p.hObject = 2;
      p.cmd = NVA06C_CTRL_CMD_GET_TIMESLICE;
      p.params = reinterpret_cast<uint64_t>(params);
      p.paramsSize = sizeof params;
      for (int i = 0; i < kCalls; ++i) {
        vcore_call_ctx ctx{nullptr, static_cast<uint32_t>(100 + t), static_cast<uint32_t>(100 + t)};
        vcore_call* call = nullptr;
        if (vcore_pre(f, Req(NV_ESC_RM_CONTROL, 32), reinterpret_cast<uint64_t>(&p), &ctx, &call) !=
                VCORE_FORWARD ||
            vcore_call_cmd(call) != NVA06C_CTRL_CMD_GET_TIMESLICE)
          ++bad;
        if (vcore_post(call, 0) != 0) ++bad;
      }
      vcore_file_close(own);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, 0);
  vcore_stats st{};
  vcore_slot_get_stats(slot, &st);
  EXPECT_EQ(st.ioctls, uint64_t{kThreads} * kCalls);
  for (uint32_t t = 0; t < kThreads; ++t) EXPECT_TRUE(vcore_pid_in_slot(slot, 100 + t)) << t;
  vcore_slot_destroy(slot);  // closes the shared file, frees the spare calls
  EXPECT_EQ(g_live, 0) << "spare calls or index leaked";
}

}  // namespace
}  // namespace vgpu::core_test

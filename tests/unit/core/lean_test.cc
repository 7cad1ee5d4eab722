// vcore_pre_lean (the kernel host's entry, the RM_CONTROL benchmark, docs/results/kmod-bench.md): a
// plain control is forwarded with no call record (a view row's control too, its reply rewritten by
// vcore_post_view after the driver), and every other call gets exactly what vcore_pre gives it.
// Each case runs once through vcore_pre and once through vcore_pre_lean, on fresh slots, and
// compares what the host and the application see: the verdict, what the host returns, whether the
// driver was called, the RM status and the reply in user memory, the fd fields and the counters.
// The argument is read from user memory exactly once on both paths (the kernel never trusts it
// twice), and every other read is made on both paths alike.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

constexpr uint64_t kArgAddr = 0x10000;  // CoreTest::kArg

// SimHost's copies, counting the reads that start at the top-level argument, all reads and all
// writes.
std::atomic<int> g_arg_reads{0};
std::atomic<int> g_reads{0};
std::atomic<int> g_writes{0};

int CountingCopyFrom(void* uctx, void* dst, vcore_uptr_t src, vcore_size_t n) {
  if (src == kArgAddr) ++g_arg_reads;
  ++g_reads;
  return SimHost::kOps.copy_from_user(uctx, dst, src, n);
}
int CountingCopyTo(void* uctx, vcore_uptr_t dst, const void* src, vcore_size_t n) {
  ++g_writes;
  return SimHost::kOps.copy_to_user(uctx, dst, src, n);
}
vcore_host_ops CountingOps() {
  vcore_host_ops ops = SimHost::kOps;
  ops.copy_from_user = CountingCopyFrom;
  ops.copy_to_user = CountingCopyTo;
  return ops;
}
const vcore_host_ops kCountingOps = CountingOps();

// What one call looked like from outside the core.
struct Seen {
  vcore_verdict verdict;
  int ret;
  bool forwarded;
  bool has_call;
  uint32_t status;  // RM status word of the NVOS54 after the call (0xffffffff: untouched)
  std::vector<vcore_fd_field> fds;
  int arg_reads;
  int reads;                    // every read of user memory, the argument's included
  int writes;                   // every write of user memory
  bool has_view;                // vcore_pre_lean: a reply view to run after the driver
  std::vector<uint8_t> params;  // the params in user memory after the call
  vcore_stats stats;
};

struct Case {
  std::string name;
  uint32_t req;
  // Maps the argument (and params) through the test's Put().
  std::function<void(class LeanTest&)> setup;
  vcore_unknown_policy policy = VCORE_UNKNOWN_STRICT;
  enum vcore_file_kind kind = VCORE_FILE_CTL;
  bool tampered = false;
  bool plain = false;          // vcore_pre_lean forwards it with no record
  bool view = false;           // ...and hands the host a reply view
  uint64_t quota = 0;          // the slot's memory quota (views)
  uint32_t rm_status = NV_OK;  // what the driver answers a control
  int rm_rc = 0;               // what the driver's ioctl returns
  bool rm_serves = true;       // the driver answers (else it writes only rm_status)
};

// FB_GET_INFO_V2 params asking @n indices: memory figures the view rewrites, and others.
std::vector<uint8_t> FbV2(uint32_t n, uint32_t list_size) {
  static const uint32_t kIndices[] = {
      NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE, NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE,
      NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE, 0x0B /* BUS_WIDTH */};
  NV2080_CTRL_FB_GET_INFO_V2_PARAMS p{};
  p.fbInfoListSize = list_size;
  for (uint32_t i = 0; i < n; ++i) p.fbInfoList[i].index = kIndices[i % 4];
  return Bytes(p);
}

class LeanTest : public CoreTest {
 public:
  void PutControl(uint32_t cmd, std::vector<uint8_t> params, uint32_t size_override = UINT32_MAX,
                  uint64_t at = kArg) {
    NVOS54_PARAMETERS p{};
    p.hClient = 0xc1d00001;
    p.hObject = 0x5c000010;
    p.cmd = cmd;
    p.params = params.empty() ? 0 : kParams;
    p.paramsSize =
        size_override != UINT32_MAX ? size_override : static_cast<uint32_t>(params.size());
    p.status = 0xffffffff;
    Put(at, Bytes(p));
    if (!params.empty()) Put(kParams, std::move(params));
  }
  void PutRaw(uint64_t at, std::vector<uint8_t> bytes) { Put(at, std::move(bytes)); }

  // One call of @c on a fresh slot, through vcore_pre_lean or vcore_pre.
  Seen Run(const Case& c, bool lean) {
    MakeSlot(c.quota, c.policy, &kCountingOps);
    vcore_file* file = ctl_;
    if (c.kind != VCORE_FILE_CTL) file = vcore_file_open(slot_, c.kind, nullptr);
    if (c.tampered) file->tampered = 1;
    mem_ = SimMemory();
    c.setup(*this);
    g_arg_reads = 0;
    g_reads = 0;
    g_writes = 0;
    Seen s{};
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = reinterpret_cast<vcore_call*>(&s);  // must be overwritten
    vcore_reply reply{};
    reply.view = reinterpret_cast<vcore_view_fn>(&s);  // must be overwritten
    s.verdict = lean ? vcore_pre_lean(file, c.req, kArg, &ctx, &call, &reply)
                     : vcore_pre(file, c.req, kArg, &ctx, &call);
    EXPECT_NE(call, reinterpret_cast<vcore_call*>(&s)) << "no call stored";
    s.has_call = call != nullptr;
    s.has_view = lean && reply.view != nullptr;
    if (s.has_view) {
      EXPECT_EQ(call, nullptr) << "a view with a record";
      EXPECT_EQ(reply.arg, kArg);
    }
    int rc = 0;
    if (s.verdict == VCORE_FORWARD || s.verdict == VCORE_FORWARD_REWRITTEN) {
      s.forwarded = true;
      for (unsigned i = 0; i < vcore_call_fd_count(call); ++i)
        s.fds.push_back(*vcore_call_fd(call, i));
      if (c.rm_serves) rm_.Serve(mem_, c.req, kArg);
      if (c.rm_status != NV_OK) {
        EXPECT_TRUE(mem_.Write(kArg + 28, &c.rm_status, 4));
      }
      rc = c.rm_rc;
    }
    if (call != nullptr)
      s.ret = vcore_post(call, rc);
    else
      s.ret = s.has_view ? vcore_post_view(file, &reply, &ctx, rc) : rc;
    s.arg_reads = g_arg_reads;
    s.reads = g_reads;
    s.writes = g_writes;
    if (mem_.At(kParams) != nullptr) s.params = *mem_.At(kParams);
    s.status = 0xffffffff;
    if (mem_.At(kArg) != nullptr && mem_.At(kArg)->size() >= 32) mem_.Read(kArg + 28, &s.status, 4);
    vcore_slot_get_stats(slot_, &s.stats);
    if (file != ctl_) vcore_file_close(file);
    return s;
  }
};

void ExpectSameList(const vcore_unknown_list& a, const vcore_unknown_list& b, const char* what) {
  EXPECT_EQ(a.n, b.n) << what;
  EXPECT_EQ(a.dropped, b.dropped) << what;
  for (unsigned i = 0; i < a.n && i < b.n; ++i) {
    EXPECT_EQ(a.number[i], b.number[i]) << what;
    EXPECT_EQ(a.count[i], b.count[i]) << what;
  }
}

std::vector<Case> Cases() {
  const uint32_t rm_control = Req(NV_ESC_RM_CONTROL, 32);
  auto control = [](uint32_t cmd, size_t n, uint32_t size_override = UINT32_MAX) {
    return [=](LeanTest& t) { t.PutControl(cmd, std::vector<uint8_t>(n), size_override); };
  };
  std::vector<Case> cs;
  cs.push_back({"plain GET_TIMESLICE", rm_control, control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8)});
  cs.back().plain = true;
  cs.push_back({"legacy GSS control (no row)", rm_control, control(0x20808001, 16)});
  cs.back().plain = true;
  cs.push_back({"wrong paramsSize", rm_control, control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8, 12)});
  cs.push_back({"paramsSize over 1 MiB", rm_control,
                control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8, (1u << 20) + 1)});
  cs.push_back({"unknown control, strict", rm_control, control(0x20800bee, 8)});
  cs.push_back({"unknown control, permissive", rm_control, control(0x20800bee, 8),
                VCORE_UNKNOWN_PERMISSIVE});
  cs.push_back({"control with a handler (SET_TIMESLICE)", rm_control,
                control(NVA06C_CTRL_CMD_SET_TIMESLICE, 8)});
  cs.push_back({"control with a handler (GET_PIDS)", rm_control,
                control(NV2080_CTRL_CMD_GPU_GET_PIDS, sizeof(NV2080_CTRL_GPU_GET_PIDS_PARAMS))});
  // The memory view (a view row): under a quota the reply is rewritten after the driver.
  constexpr uint64_t kQuota = 256ull << 20;
  auto fb_v2 = [](uint32_t n, uint32_t list_size) {
    return [=](LeanTest& t) { t.PutControl(NV2080_CTRL_CMD_FB_GET_INFO_V2, FbV2(n, list_size)); };
  };
  const uint32_t fb_cmd = NV2080_CTRL_CMD_FB_GET_INFO_V2;
  cs.push_back({"FB_GET_INFO_V2 under a quota, one entry", rm_control, fb_v2(1, 1)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.push_back({"FB_GET_INFO_V2 under a quota, a list past one read", rm_control, fb_v2(40, 40)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.push_back({"FB_GET_INFO_V2 under a quota, nothing to rewrite", rm_control, fb_v2(0, 3)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.push_back(
      {"FB_GET_INFO_V2 under a quota, list size past the maximum", rm_control, fb_v2(128, 100000)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.push_back({"FB_GET_INFO_V2 under a quota, the driver refuses", rm_control, fb_v2(2, 2)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.back().rm_status = NV_ERR_INVALID_ARGUMENT;
  cs.push_back({"FB_GET_INFO_V2 under a quota, the ioctl fails", rm_control, fb_v2(2, 2)});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.back().rm_rc = -VCORE_EFAULT;
  cs.push_back({"FB_GET_INFO_V2 under a quota, params not mapped", rm_control, [](LeanTest& t) {
                  NVOS54_PARAMETERS p{0xc1d00001, 0x5c000010, NV2080_CTRL_CMD_FB_GET_INFO_V2,
                                      0,          0xbad00000, 1028,
                                      0};
                  t.PutRaw(kArgAddr, Bytes(p));
                }});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.back().rm_serves = false;  // status NV_OK and a reply the view cannot read
  cs.push_back({"FB_GET_INFO_V2 under a quota, no params", rm_control, [](LeanTest& t) {
                  NVOS54_PARAMETERS p{0xc1d00001, 0x5c000010, NV2080_CTRL_CMD_FB_GET_INFO_V2, 0, 0,
                                      1028,       0};
                  t.PutRaw(kArgAddr, Bytes(p));
                }});
  cs.back().quota = kQuota;
  cs.push_back({"FB_GET_INFO_V2 under a quota, wrong paramsSize", rm_control,
                control(fb_cmd, sizeof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS), 1024)});
  cs.back().quota = kQuota;
  cs.push_back({"FB_GET_INFO_V2 without a quota", rm_control, fb_v2(1, 1)});
  cs.back().plain = true;
  // The perfmon samples' view (F11.4), on every slot: another slot's processes read as "no
  // process" after the driver.
  using Perfmon = NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS;
  const uint32_t pm_cmd = NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2;
  cs.push_back(
      {"PERFMON_UTIL_SAMPLES_V2, other processes", rm_control, control(pm_cmd, sizeof(Perfmon))});
  cs.back().plain = cs.back().view = true;
  cs.push_back(
      {"PERFMON_UTIL_SAMPLES_V2 under a quota", rm_control, control(pm_cmd, sizeof(Perfmon))});
  cs.back().plain = cs.back().view = true;
  cs.back().quota = kQuota;
  cs.push_back({"PERFMON_UTIL_SAMPLES_V2, the driver refuses", rm_control,
                control(pm_cmd, sizeof(Perfmon))});
  cs.back().plain = cs.back().view = true;
  cs.back().rm_status = NV_ERR_INVALID_ARGUMENT;
  cs.back().rm_serves = false;
  cs.push_back({"PERFMON_UTIL_SAMPLES_V2, params not mapped", rm_control, [=](LeanTest& t) {
                  NVOS54_PARAMETERS p{0xc1d00001, 0x5c000010,
                                      pm_cmd,     0,
                                      0xbad00000, static_cast<uint32_t>(sizeof(Perfmon)),
                                      0};
                  t.PutRaw(kArgAddr, Bytes(p));
                }});
  cs.back().plain = cs.back().view = true;
  cs.back().rm_serves = false;
  cs.push_back({"PERFMON_UTIL_SAMPLES_V2, no params", rm_control, [=](LeanTest& t) {
                  NVOS54_PARAMETERS p{
                      0xc1d00001, 0x5c000010, pm_cmd, 0, 0, static_cast<uint32_t>(sizeof(Perfmon)),
                      0};
                  t.PutRaw(kArgAddr, Bytes(p));
                }});
  cs.push_back({"PERFMON_UTIL_SAMPLES_V2, wrong paramsSize", rm_control,
                control(pm_cmd, sizeof(Perfmon), 1024)});
  cs.push_back({"unreadable NVOS54", rm_control, [](LeanTest& t) {
                  t.PutRaw(0x50000, std::vector<uint8_t>(32));  // nothing at kArg
                }});
  cs.push_back({"NVOS54 cut short by the end of the mapping", rm_control,
                [](LeanTest& t) { t.PutRaw(kArgAddr, std::vector<uint8_t>(24)); }});
  cs.push_back({"wrong ioctl size for RM_CONTROL", Req(NV_ESC_RM_CONTROL, 24),
                control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8)});
  cs.push_back({"tampered file", rm_control, control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8)});
  cs.back().tampered = true;
  cs.push_back(
      {"GET_TIMESLICE on a GPU file", rm_control, control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8)});
  cs.back().kind = VCORE_FILE_DEV;
  cs.back().plain = true;
  cs.push_back(
      {"RM_CONTROL number on a UVM file", rm_control, control(NVA06C_CTRL_CMD_GET_TIMESLICE, 8)});
  cs.back().kind = VCORE_FILE_UVM;
  cs.push_back({"GET_TIMESLICE wrapped in XFER", Req(NV_ESC_IOCTL_XFER_CMD, 16), [](LeanTest& t) {
                  t.PutControl(NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8), UINT32_MAX,
                               0x30000);
                  nv_ioctl_xfer_t x{NV_ESC_RM_CONTROL, 32, 0x30000};
                  t.PutRaw(kArgAddr, Bytes(x));
                }});
  cs.push_back({"another escape (RM_FREE)", Req(NV_ESC_RM_FREE, 16), [](LeanTest& t) {
                  NVOS00_PARAMETERS p{0xc1d00001, 0xc1d00001, 0x5c000001, 0};
                  t.PutRaw(kArgAddr, Bytes(p));
                }});
  return cs;
}

// One case of Cases() by name.
Case FindCase(const std::string& name) {
  for (const Case& c : Cases())
    if (c.name == name) return c;
  ADD_FAILURE() << name;
  return Case{};
}

TEST_F(LeanTest, EveryCallIsDecidedAsByVcorePre) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Seen full = Run(c, false);
    Seen lean = Run(c, true);
    EXPECT_EQ(lean.verdict, full.verdict);
    EXPECT_EQ(lean.ret, full.ret);
    EXPECT_EQ(lean.forwarded, full.forwarded);
    EXPECT_EQ(lean.status, full.status);
    ASSERT_EQ(lean.fds.size(), full.fds.size());
    for (size_t i = 0; i < lean.fds.size(); ++i) {
      EXPECT_EQ(lean.fds[i].uaddr, full.fds[i].uaddr);
      EXPECT_EQ(lean.fds[i].value, full.fds[i].value);
      EXPECT_EQ(lean.fds[i].kind, full.fds[i].kind);
    }
    EXPECT_EQ(lean.stats.ioctls, full.stats.ioctls);
    EXPECT_EQ(lean.stats.ioctls, 1u);
    EXPECT_EQ(lean.stats.denied, full.stats.denied);
    EXPECT_EQ(lean.stats.malformed, full.stats.malformed);
    EXPECT_EQ(lean.stats.views_rewritten, full.stats.views_rewritten);
    EXPECT_EQ(lean.params, full.params) << "the reply the application reads";
    EXPECT_EQ(lean.reads, full.reads);
    EXPECT_EQ(lean.writes, full.writes);
    ExpectSameList(lean.stats.unknown_escapes, full.stats.unknown_escapes, "unknown escapes");
    ExpectSameList(lean.stats.unknown_controls, full.stats.unknown_controls, "unknown controls");
    // The argument is read at most once on either path, and the lean one reads it no more often.
    EXPECT_LE(full.arg_reads, 1);
    EXPECT_EQ(lean.arg_reads, full.arg_reads);
    EXPECT_TRUE(full.has_call);
    EXPECT_EQ(lean.has_call, !c.plain) << "a plain control needs no record, any other call does";
    EXPECT_EQ(lean.has_view, c.view);
  }
}

// The cases above cover every test vcore_pre makes on an RM_CONTROL; these check a few of their
// answers outright, so that "the same as vcore_pre" cannot hide a shared mistake.
TEST_F(LeanTest, RefusalsKeepTheirStatusAndErrno) {
  Seen s = Run(FindCase("wrong paramsSize"), true);
  EXPECT_EQ(s.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_INVALID_ARGUMENT));
  EXPECT_EQ(s.stats.denied, 1u);
  s = Run(FindCase("unknown control, strict"), true);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_NOT_SUPPORTED));
  EXPECT_EQ(s.stats.unknown_controls.n, 1u);
  s = Run(FindCase("tampered file"), true);
  EXPECT_EQ(s.ret, -VCORE_ENODEV);
  EXPECT_FALSE(s.forwarded);
  EXPECT_EQ(s.arg_reads, 0);
  s = Run(FindCase("unreadable NVOS54"), true);
  EXPECT_EQ(s.ret, -VCORE_EFAULT);
  EXPECT_EQ(s.arg_reads, 1) << "a failed read is not retried";
  EXPECT_EQ(s.stats.malformed, 1u);
  s = Run(FindCase("plain GET_TIMESLICE"), true);
  EXPECT_EQ(s.ret, 0);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_OK));
  EXPECT_FALSE(s.has_call);
  EXPECT_EQ(rm_.calls, 1) << "only the plain control reached the driver";
}

// The memory view on the lean path, outright: the record is skipped, not the rewrite, and the
// reply is read once after the call (status, then the list's head) and written once.
TEST_F(LeanTest, TheMemoryViewNeedsNoRecordAndRewritesTheReply) {
  Seen s = Run(FindCase("FB_GET_INFO_V2 under a quota, one entry"), true);
  EXPECT_FALSE(s.has_call);
  EXPECT_TRUE(s.has_view);
  EXPECT_EQ(s.ret, 0);
  EXPECT_EQ(rm_.calls, 1);
  ASSERT_GE(s.params.size(), 12u);
  uint32_t heap_free;
  memcpy(&heap_free, s.params.data() + 8, 4);
  EXPECT_EQ(heap_free, 256u * 1024) << "HEAP_FREE in KiB = the quota, nothing charged";
  EXPECT_EQ(s.stats.views_rewritten, 1u);
  EXPECT_EQ(s.reads, 3) << "the NVOS54, the status, the list's head";
  EXPECT_EQ(s.writes, 1);
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, a list past one read"), true);
  EXPECT_EQ(s.reads, 4) << "the rest of the list in one more read";
  EXPECT_EQ(s.writes, 1);
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, nothing to rewrite"), true);
  EXPECT_EQ(s.writes, 0);
  EXPECT_EQ(s.stats.views_rewritten, 0u);
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, the driver refuses"), true);
  EXPECT_EQ(s.reads, 3) << "the list's head comes with the status, and is not rewritten";
  EXPECT_EQ(s.writes, 0);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_INVALID_ARGUMENT));
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, the ioctl fails"), true);
  EXPECT_EQ(s.ret, -VCORE_EFAULT);
  EXPECT_EQ(s.reads, 1);
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, params not mapped"), true);
  EXPECT_EQ(s.ret, -VCORE_EFAULT) << "the reply could not be rewritten";
  s = Run(FindCase("FB_GET_INFO_V2 under a quota, no params"), true);
  EXPECT_EQ(s.verdict, VCORE_REFUSE_STATUS);
  EXPECT_FALSE(s.forwarded);
  s = Run(FindCase("FB_GET_INFO_V2 without a quota"), true);
  EXPECT_FALSE(s.has_view);
  EXPECT_EQ(s.reads, 1);
}

// The perfmon samples' view on the lean path, outright: no record, the status and the reply read
// after the call, another slot's processes hidden, the driver's kernel address cleared.
TEST_F(LeanTest, ThePerfmonViewNeedsNoRecordAndHidesOtherSlotsProcesses) {
  using Perfmon = NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS;
  Seen s = Run(FindCase("PERFMON_UTIL_SAMPLES_V2, other processes"), true);
  EXPECT_FALSE(s.has_call);
  EXPECT_TRUE(s.has_view);
  EXPECT_EQ(s.ret, 0);
  EXPECT_EQ(s.reads, 3) << "the NVOS54, the status, the reply";
  EXPECT_EQ(s.writes, 1);
  EXPECT_EQ(s.stats.views_rewritten, 1u);
  ASSERT_EQ(s.params.size(), sizeof(Perfmon));
  auto r = std::make_unique<Perfmon>();
  memcpy(r.get(), s.params.data(), sizeof(Perfmon));
  unsigned own = 0, hidden = 0;
  for (const auto& sample : r->samples) {
    for (const auto* e : {&sample.gr, &sample.fb}) {
      EXPECT_EQ(e->pOsPidInfo, 0u);
      EXPECT_EQ(e->util, 5000u);
      if (e->procId == kPid) {
        ++own;
      } else {
        EXPECT_EQ(e->procId, NV2080_GPUMON_PID_INVALID);
        EXPECT_EQ(e->subProcessID, NV2080_GPUMON_PID_INVALID);
        ++hidden;
      }
    }
  }
  EXPECT_EQ(own, 48u) << "pid 100 of the driver's 100, 200, 300";
  EXPECT_EQ(hidden, 96u);
  s = Run(FindCase("PERFMON_UTIL_SAMPLES_V2, the driver refuses"), true);
  EXPECT_EQ(s.reads, 2) << "the status says there is nothing to rewrite";
  EXPECT_EQ(s.writes, 0);
  s = Run(FindCase("PERFMON_UTIL_SAMPLES_V2, params not mapped"), true);
  EXPECT_EQ(s.ret, -VCORE_EFAULT) << "the reply could not be rewritten";
  s = Run(FindCase("PERFMON_UTIL_SAMPLES_V2, no params"), true);
  EXPECT_EQ(s.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_INVALID_ARGUMENT));
  EXPECT_FALSE(s.forwarded);
}

// The lean path notes the caller in the slot's pid set, as vcore_pre does (GET_PIDS views).
TEST_F(LeanTest, APlainControlNotesTheCallersPid) {
  MakeSlot(0);
  PutControl(NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8));
  vcore_call_ctx ctx{&mem_, 4242, 4243};
  vcore_call* call = nullptr;
  vcore_reply reply{};
  ASSERT_EQ(vcore_pre_lean(ctl_, Req(NV_ESC_RM_CONTROL, 32), kArg, &ctx, &call, &reply),
            VCORE_FORWARD);
  ASSERT_EQ(call, nullptr);
  EXPECT_TRUE(vcore_pid_in_slot(slot_, 4242));
  EXPECT_FALSE(vcore_pid_in_slot(slot_, 4243));
}

}  // namespace
}  // namespace vgpu::core_test

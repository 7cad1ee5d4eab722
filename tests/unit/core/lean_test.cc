// vcore_pre_lean (the kernel host's entry, the RM_CONTROL benchmark, docs/results/kmod-bench.md): a
// plain control is forwarded with no call record, and every other call gets exactly what vcore_pre
// gives it. Each case runs once through vcore_pre and once through vcore_pre_lean, on fresh slots,
// and compares what the host and the application see: the verdict, what the host returns, whether
// the driver was called, the RM status in user memory, the fd fields and the counters. The argument
// is read from user memory exactly once on both paths (the kernel never trusts it twice).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/unit/core/core_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

constexpr uint64_t kArgAddr = 0x10000;  // CoreTest::kArg

// SimHost's copy, counting the reads that start at the top-level argument.
std::atomic<int> g_arg_reads{0};

int CountingCopyFrom(void* uctx, void* dst, vcore_uptr_t src, vcore_size_t n) {
  if (src == kArgAddr) ++g_arg_reads;
  return SimHost::kOps.copy_from_user(uctx, dst, src, n);
}
vcore_host_ops CountingOps() {
  vcore_host_ops ops = SimHost::kOps;
  ops.copy_from_user = CountingCopyFrom;
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
  bool plain = false;  // vcore_pre_lean forwards it with no record
};

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
    MakeSlot(0, c.policy, &kCountingOps);
    vcore_file* file = ctl_;
    if (c.kind != VCORE_FILE_CTL) file = vcore_file_open(slot_, c.kind, nullptr);
    if (c.tampered) file->tampered = 1;
    mem_ = SimMemory();
    c.setup(*this);
    g_arg_reads = 0;
    Seen s{};
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = reinterpret_cast<vcore_call*>(&s);  // must be overwritten
    s.verdict = lean ? vcore_pre_lean(file, c.req, kArg, &ctx, &call)
                     : vcore_pre(file, c.req, kArg, &ctx, &call);
    EXPECT_NE(call, reinterpret_cast<vcore_call*>(&s)) << "no call stored";
    s.has_call = call != nullptr;
    int rc = 0;
    if (s.verdict == VCORE_FORWARD || s.verdict == VCORE_FORWARD_REWRITTEN) {
      s.forwarded = true;
      for (unsigned i = 0; i < vcore_call_fd_count(call); ++i)
        s.fds.push_back(*vcore_call_fd(call, i));
      rm_.Serve(mem_, c.req, kArg);
      rc = rm_.rc;
    }
    s.ret = call != nullptr ? vcore_post(call, rc) : rc;
    s.arg_reads = g_arg_reads;
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
  cs.push_back(
      {"control with a handler (FB_GET_INFO_V2)", rm_control,
       control(NV2080_CTRL_CMD_FB_GET_INFO_V2, sizeof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS))});
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
    ExpectSameList(lean.stats.unknown_escapes, full.stats.unknown_escapes, "unknown escapes");
    ExpectSameList(lean.stats.unknown_controls, full.stats.unknown_controls, "unknown controls");
    // The argument is read at most once on either path, and the lean one reads it no more often.
    EXPECT_LE(full.arg_reads, 1);
    EXPECT_EQ(lean.arg_reads, full.arg_reads);
    EXPECT_TRUE(full.has_call);
    EXPECT_EQ(lean.has_call, !c.plain) << "a plain control needs no record, any other call does";
  }
}

// The cases above cover every test vcore_pre makes on an RM_CONTROL; these check a few of their
// answers outright, so that "the same as vcore_pre" cannot hide a shared mistake.
TEST_F(LeanTest, RefusalsKeepTheirStatusAndErrno) {
  auto find = [](const std::string& name) {
    for (const Case& c : Cases())
      if (c.name == name) return c;
    ADD_FAILURE() << name;
    return Case{};
  };
  Seen s = Run(find("wrong paramsSize"), true);
  EXPECT_EQ(s.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_INVALID_ARGUMENT));
  EXPECT_EQ(s.stats.denied, 1u);
  s = Run(find("unknown control, strict"), true);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_ERR_NOT_SUPPORTED));
  EXPECT_EQ(s.stats.unknown_controls.n, 1u);
  s = Run(find("tampered file"), true);
  EXPECT_EQ(s.ret, -VCORE_ENODEV);
  EXPECT_FALSE(s.forwarded);
  EXPECT_EQ(s.arg_reads, 0);
  s = Run(find("unreadable NVOS54"), true);
  EXPECT_EQ(s.ret, -VCORE_EFAULT);
  EXPECT_EQ(s.arg_reads, 1) << "a failed read is not retried";
  EXPECT_EQ(s.stats.malformed, 1u);
  s = Run(find("plain GET_TIMESLICE"), true);
  EXPECT_EQ(s.ret, 0);
  EXPECT_EQ(s.status, static_cast<uint32_t>(NV_OK));
  EXPECT_FALSE(s.has_call);
  EXPECT_EQ(rm_.calls, 1) << "only the plain control reached the driver";
}

// The lean path notes the caller in the slot's pid set, as vcore_pre does (GET_PIDS views).
TEST_F(LeanTest, APlainControlNotesTheCallersPid) {
  MakeSlot(0);
  PutControl(NVA06C_CTRL_CMD_GET_TIMESLICE, std::vector<uint8_t>(8));
  vcore_call_ctx ctx{&mem_, 4242, 4243};
  vcore_call* call = nullptr;
  ASSERT_EQ(vcore_pre_lean(ctl_, Req(NV_ESC_RM_CONTROL, 32), kArg, &ctx, &call), VCORE_FORWARD);
  ASSERT_EQ(call, nullptr);
  EXPECT_TRUE(vcore_pid_in_slot(slot_, 4242));
  EXPECT_FALSE(vcore_pid_in_slot(slot_, 4243));
}

}  // namespace
}  // namespace vgpu::core_test

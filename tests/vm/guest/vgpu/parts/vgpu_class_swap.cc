// Class swaps into and out of the classes the core counts, limits or charges (issue 17, F11.1;
// docs/security/kernel-lifetime-compute.md): the tenant's RM_ALLOC is checked as one class and a
// sibling thread's store makes the driver read another (nvsim's rewrite_alloc_* hook lands it
// just before nvsim copies the NVOS64 in, tests/vm/nvsim/nvsim_hook.c). The 580 driver sizes the
// params by the class it reads (rmapiGetClassAllocParamSize, rmapi/param_copy.c) and builds that
// class from the same buffer, so one buffer can be checked as memory and built as a TSG: in
// NV_MEMORY_ALLOCATION_PARAMS flags@8 is the TSG's hVASpace (0: the device's default VA space,
// kernel_channel_group_api.c kchangrpapiConstruct_IMPL) and width@12 its engineType (1: GR0).
// The core checks memory by its size alone and never reads width.
//
// The core records the class it checked. Unless the driver's word on the class of the new object
// (NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO, index CLASSID, rmapi/client_resource.c) is asked for
// every object, not only memory, a TSG, channel or VA space the driver made under a memory
// record is counted against no per-slot cap (VCORE_SLOT_MAX_*), charged at the memory's size
// instead of its RM-internal estimate (a GR TSG: 4.3125 MiB, tables_580.c), and a TSG is never
// registered with the compute controller (never gated, F7). Each case runs the tenant in a forked
// child; if the child gets through its calls it stops there so that the driver's and the slot's
// view can be read while its objects exist (the figures printed as "classswap:"), then exits.
// Expected: the first rewritten call kills the child (SIGKILL inside the call), one tampering is
// counted, and nothing of it stays in nvsim or charged. Linked into vgpu_gtest (guest.cmake).
#include <sys/mman.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint32_t kHopperChannel = 0xc86f;  // HOPPER_CHANNEL_GPFIFO_A
constexpr int kSessionFailed = 2;
constexpr int kSurvived = 3;  // got through every rewritten call
constexpr int kSetupFailed = 4;

// What the tenant's child got through: written into a shared page, read by the parent.
struct Made {
  uint32_t ok = 0;         // rewritten allocations the driver answered NV_OK
  uint32_t legit = 0;      // allocations of the swapped-to class made without a rewrite
  int64_t first_fail = 0;  // the status of the first rewritten allocation that failed, or 0
};

// The driver's view of one process's TSGs (nvsim's debugfs, nvsim_sched.c): how many, and the
// channels under them.
struct DriverTsgs {
  uint32_t tsgs = 0;
  uint32_t channels = 0;
};

DriverTsgs TsgsOf(pid_t pid) {
  DriverTsgs d;
  std::ifstream f("/sys/kernel/debug/nvsim/gpu0");
  std::string line;
  while (std::getline(f, line)) {
    int p = 0;
    unsigned hc = 0, ht = 0, eng = 0, run = 0, pre = 0, sch = 0, wed = 0, pu = 0, pc = 0, ch = 0;
    unsigned long long ts = 0, cons = 0;
    if (sscanf(line.c_str(), "%d 0x%x 0x%x %u %llu %u %llu %u %u %u %u %u %u", &p, &hc, &ht, &eng,
               &ts, &run, &cons, &pre, &sch, &wed, &pu, &pc, &ch) == 13 &&
        p == pid) {
      ++d.tsgs;
      d.channels += ch;
    }
  }
  return d;
}

bool ArmClassRewrite(uint32_t cls) {
  return WriteNvsimParam("rewrite_alloc_offset", 12) &&  // NVOS64.hClass
         WriteNvsimParam("rewrite_alloc_value", cls) &&
         WriteNvsimParam("rewrite_alloc_tgid", static_cast<uint64_t>(getpid()));
}

// One buffer the core checks as NV01_MEMORY_LOCAL_USER of `size` and the driver builds as a GR
// TSG, a channel or a VA space (the head comment): owner 0 (a VA space's index: GPU_NEW), flags 0
// (a TSG's hVASpace: the default), width 1 (a TSG's engineType: GR0); room for a channel's 368 B.
union SwapParams {
  nv_memory_allocation_params mem;
  nv_channel_group_alloc_params tsg;
  uint8_t channel[512];
};
SwapParams MemoryThatIsAlsoATsg(uint64_t size) {
  SwapParams p{};
  p.mem.width = 1;
  p.mem.size = size;
  return p;
}

// Runs `calls(session, made)` in a forked child with a session on `slot`. When `calls` returns
// the child waits until `inspect(child_pid)` has looked at the driver and the slot, then exits
// kSurvived; a child killed inside a call never gets there. Returns the child's wait status, with
// nvsim's hook disarmed whatever happened.
template <typename Calls, typename Inspect>
int RunSwapTenant(const ScopedSlot& slot, Made* made, Calls calls, Inspect inspect) {
  int ready[2], go[2];
  EXPECT_EQ(pipe2(ready, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(go, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    close(go[1]);
    Session s;
    if (!s.Open(slot.ctl(), slot.dev()).empty()) _exit(kSessionFailed);
    calls(s, made);
    char b = 1;
    if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0) _exit(kSetupFailed);
    _exit(kSurvived);
  }
  close(ready[1]);
  close(go[0]);
  char b = 0;
  if (child > 0 && read(ready[0], &b, 1) == 1) inspect(child);
  close(go[1]);  // the child, if it waits, exits now
  close(ready[0]);
  int status = 0;
  EXPECT_GE(child, 0);
  if (child > 0) {
    EXPECT_EQ(waitpid(child, &status, 0), child);
  }
  EXPECT_TRUE(WriteNvsimParam("rewrite_alloc_tgid", 0));
  return status;
}

std::string Line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Line(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::printf("classswap: %s\n", buf);
  return buf;
}

// `n` allocations of class `cls` under `parent` (handles from `base`) with params `p`, each with
// hClass rewritten into `made` during the call, until one fails: counted in m->ok, the failure's
// status in m->first_fail. `made` 0: no rewrite, counted in m->legit.
void Calls(Session& s, Made* m, uint32_t n, uint32_t parent, uint32_t base, uint32_t cls,
           uint32_t made, const SwapParams& p) {
  for (uint32_t i = 0; i < n; ++i) {
    SwapParams q = p;
    uint32_t h = base + i;
    if (made && !ArmClassRewrite(made)) _exit(kSetupFailed);
    const int64_t st = Alloc(s.ctl, s.client, parent, &h, cls, &q);
    if (!made) {
      m->legit += st == NV_OK;
    } else if (st != NV_OK) {
      m->first_fail = st;
      return;
    } else {
      ++m->ok;
    }
  }
}

SwapParams TsgParams() {
  SwapParams p{};
  p.tsg.engineType = 1;
  return p;
}

// One case: a slot with `quota`, the tenant's child, and what holds once it is gone.
class ClassSwap : public testing::Test {
 protected:
  void SetUp() override {
    void* p =
        mmap(nullptr, sizeof(Made), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    made_ = new (p) Made;
    used_ = NvsimUsedBytes();
    done_ = ReadNvsimParam("rewrite_alloc_done");
    ASSERT_NE(done_, ~0ull) << "nvsim has no rewrite_alloc_* test hook";
  }
  void TearDown() override {
    if (made_) munmap(made_, sizeof(Made));
  }

  // Runs the tenant (RunSwapTenant) on a slot of `quota`; `figures(child)` prints what escaped
  // while the child's objects exist. Then asserts what every armed case must: killed inside its
  // first rewritten call, one tampering counted, the driver and the slot left with nothing of it.
  template <typename Tenant, typename Figures>
  void ExpectKilledAtTheFirstRewrite(uint64_t quota, Tenant tenant, Figures figures) {
    ScopedSlot slot(quota, "swap");
    ASSERT_TRUE(slot.ok());
    std::string escaped;
    const int status =
        RunSwapTenant(slot, made_, tenant, [&](pid_t child) { escaped = figures(slot, child); });
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "status 0x" << std::hex << status << std::dec << " (exit 3: not killed; " << escaped
        << ")";
    EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done_ + 1)
        << "killed at the first rewritten call";
    EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
    EXPECT_EQ(SettledCharge(slot, 0), 0u);
    EXPECT_EQ(slot.Stat(VGPU_STAT_TSGS), 0u);
    EXPECT_EQ(TsgsOf(0).tsgs, 0u);
    EXPECT_EQ(NvsimUsedBytes(), used_);
  }

  Made* made_ = nullptr;
  uint64_t used_ = 0, done_ = 0;
};

unsigned long long KiB(uint64_t b) { return static_cast<unsigned long long>(b / kKiB); }

// Checked: 64 KiB of video memory (16 MiB quota, which holds 3 TSGs at their 4.3125 MiB
// estimate). Made: a GR TSG, one more than the slot's cap of 64.
TEST_F(ClassSwap, MemoryCheckedAsATsgMadeKillsTheCaller) {
  ExpectKilledAtTheFirstRewrite(
      16 * kMiB,
      [](Session& s, Made* m) {
        Calls(s, m, kMaxTsgs + 1, s.device, 0xd3000000, NV01_MEMORY_LOCAL_USER,
              KEPLER_CHANNEL_GROUP_A, MemoryThatIsAlsoATsg(64 * kKiB));
      },
      [&](const ScopedSlot& slot, pid_t child) {
        const DriverTsgs d = TsgsOf(child);
        return Line(
            "vidmem->TSG: %u rewritten calls NV_OK; the driver holds %u GR TSGs (cap %u; "
            "%.4g MiB of RM-internal memory at 4.3125 MiB each) on a 16 MiB slot charged %llu "
            "KiB; the slot's TSG registry: %llu",
            made_->ok, d.tsgs, kMaxTsgs, d.tsgs * 4.3125, KiB(slot.Stat(VGPU_STAT_MEM_CHARGED)),
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)));
      });
}

// Checked: 64 KiB of video memory under a TSG the tenant made. Made: a channel under that TSG,
// one more than the slot's cap of 1024; the slot's record of the TSG counts none of them.
TEST_F(ClassSwap, MemoryCheckedAsAChannelMadeKillsTheCaller) {
  constexpr uint32_t kTsg = 0xd3100000;
  ExpectKilledAtTheFirstRewrite(
      128 * kMiB,
      [](Session& s, Made* m) {
        Calls(s, m, 1, s.device, kTsg, KEPLER_CHANNEL_GROUP_A, 0, TsgParams());
        if (m->legit != 1) _exit(kSetupFailed);
        Calls(s, m, kMaxChannels + 1, kTsg, 0xd3200000, NV01_MEMORY_LOCAL_USER, kHopperChannel,
              MemoryThatIsAlsoATsg(64 * kKiB));
      },
      [&](const ScopedSlot& slot, pid_t child) {
        const DriverTsgs d = TsgsOf(child);
        return Line(
            "vidmem->channel: %u rewritten calls NV_OK; the driver holds %u channels under %u "
            "TSG (cap %u); slot charged %llu KiB, its TSG registry: %llu",
            made_->ok, d.channels, d.tsgs, kMaxChannels, KiB(slot.Stat(VGPU_STAT_MEM_CHARGED)),
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)));
      });
}

// Checked: 64 KiB of video memory, after the slot's 64 VA spaces. Made: a VA space past the cap
// (the driver's page directories behind it counted nowhere).
TEST_F(ClassSwap, MemoryCheckedAsAVaSpaceMadeKillsTheCaller) {
  ExpectKilledAtTheFirstRewrite(
      64 * kMiB,
      [](Session& s, Made* m) {
        Calls(s, m, kMaxVaspaces + 1, s.device, 0xd3300000, FERMI_VASPACE_A, 0, SwapParams{});
        Calls(s, m, 4, s.device, 0xd3400000, NV01_MEMORY_LOCAL_USER, FERMI_VASPACE_A,
              MemoryThatIsAlsoATsg(64 * kKiB));
      },
      [&](const ScopedSlot&, pid_t) {
        return Line(
            "vidmem->VA space: %u VA spaces granted without a rewrite (cap %u), then %u more "
            "through rewritten calls: %u VA spaces in the driver",
            made_->legit, kMaxVaspaces, made_->ok, made_->legit + made_->ok);
      });
  EXPECT_EQ(made_->legit, kMaxVaspaces) << "the cap holds for VA spaces asked as such";
}

// The reverse: checked as a TSG (reserved its estimate, counted against the TSG cap, registered
// with the compute controller), made as a VA space after the slot's 64. The registry then holds
// TSGs the driver does not have, and the VA spaces are past their cap.
TEST_F(ClassSwap, TsgCheckedAsAVaSpaceMadeKillsTheCaller) {
  ExpectKilledAtTheFirstRewrite(
      0,
      [](Session& s, Made* m) {
        Calls(s, m, kMaxVaspaces, s.device, 0xd3500000, FERMI_VASPACE_A, 0, SwapParams{});
        Calls(s, m, 4, s.device, 0xd3600000, KEPLER_CHANNEL_GROUP_A, FERMI_VASPACE_A, TsgParams());
      },
      [&](const ScopedSlot& slot, pid_t child) {
        return Line(
            "TSG->VA space: %u + %u VA spaces in the driver (cap %u); the slot's TSG registry "
            "holds %llu TSGs, the driver %u",
            made_->legit, made_->ok, kMaxVaspaces,
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)), TsgsOf(child).tsgs);
      });
}

// The reverse into memory: checked as a TSG (20 B of params), made as video memory. In module
// mode the driver reads the swapped class's 128 B of params from the sealed copy (kmod/seal.c),
// whose bytes past the 20 the core checked and sealed are zero: a size-0 allocation the driver
// refuses, so nothing is made and nothing escapes (before the seal the driver read the caller's
// own 32 MiB and the size query's class got the caller killed, 16 MiB slot). The hook stores as
// the caller, which a sealed copy lets through; a sibling's store is refused (RmSealed.*).
TEST_F(ClassSwap, TsgCheckedAsMemoryMakesNothing) {
  ScopedSlot slot(16 * kMiB, "swap");
  ASSERT_TRUE(slot.ok());
  const int status = RunSwapTenant(
      slot, made_,
      [](Session& s, Made* m) {
        Calls(s, m, 1, s.device, 0xd3700000, KEPLER_CHANNEL_GROUP_A, NV01_MEMORY_LOCAL_USER,
              MemoryThatIsAlsoATsg(32 * kMiB));
      },
      [&](pid_t) {
        Line(
            "TSG->vidmem: %u calls NV_OK (first failure 0x%llx), nvsim used %llu MiB on a 16 MiB "
            "slot",
            made_->ok, static_cast<unsigned long long>(made_->first_fail),
            static_cast<unsigned long long>((NvsimUsedBytes() - used_) / kMiB));
        EXPECT_EQ(NvsimUsedBytes(), used_) << "the driver made memory the core never checked";
      });
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done_ + 1) << "the hook's store landed";
  EXPECT_EQ(made_->ok, 0u);
  EXPECT_NE(made_->first_fail, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kSurvived)
      << "status 0x" << std::hex << status;
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), used_);
}

// The status is user memory too: a sibling's second store writes a failure over the driver's NV_OK
// (nvsim's rewrite_alloc_after_* hook, after its copy-out). The size query cannot find a TSG, so
// the core recorded nothing: TSGs past the cap, none in the compute controller's registry, none
// charged. Now the driver's class finds each and it is recorded as any TSG: the driver never
// holds more than the cap, every one is in the registry and charged its estimate. (The store to
// hClass is of the same class: the after-store lands only in a call the first hook rewrote.)
TEST_F(ClassSwap, AFailureStatusHidesNoTsg) {
  ScopedSlot slot(0, "swap-status");
  ASSERT_TRUE(slot.ok());
  DriverTsgs driver;
  uint64_t registry = 0, charged = 0;
  ASSERT_TRUE(WriteNvsimParam("rewrite_alloc_after_offset", 40) &&  // NVOS64.status
              WriteNvsimParam("rewrite_alloc_after_value", NV_ERR_NO_MEMORY));
  const int status = RunSwapTenant(
      slot, made_,
      [](Session& s, Made* m) {
        for (uint32_t i = 0; i < kMaxTsgs + 1; ++i) {
          SwapParams p = TsgParams();
          uint32_t h = 0xd3900000 + i;
          if (!ArmClassRewrite(KEPLER_CHANNEL_GROUP_A)) _exit(kSetupFailed);
          const int64_t st = Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &p);
          if (st == NV_ERR_NO_MEMORY)
            ++m->ok;
          else if (!m->first_fail)
            m->first_fail = st;
        }
      },
      [&](pid_t child) {
        driver = TsgsOf(child);
        registry = slot.Stat(VGPU_STAT_TSGS);
        charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
        Line(
            "TSG under a failure status: %llu calls reached the driver, %u answered 0x51 (other "
            "status: 0x%llx); the driver holds %u GR TSGs (cap %u), the slot's TSG registry "
            "%llu, charged %llu KiB",
            static_cast<unsigned long long>(ReadNvsimParam("rewrite_alloc_done") - done_),
            made_->ok, static_cast<unsigned long long>(made_->first_fail), driver.tsgs, kMaxTsgs,
            static_cast<unsigned long long>(registry), KiB(charged));
      });
  EXPECT_TRUE(WriteNvsimParam("rewrite_alloc_after_offset", 0xffffffffu));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kSurvived)
      << "status 0x" << std::hex << status;
  EXPECT_GT(made_->ok, 0u) << "the sibling's store reached the caller";
  EXPECT_EQ(driver.tsgs, registry) << "every TSG the driver made is in the registry";
  EXPECT_LE(driver.tsgs, kMaxTsgs);
  EXPECT_GT(driver.tsgs, 0u);
  EXPECT_EQ(charged, registry * (4 * kMiB + 5 * kMiB / 16)) << "each charged its estimate";
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(slot.Stat(VGPU_STAT_TSGS), 0u);
  EXPECT_EQ(NvsimUsedBytes(), used_);
}

// The control: the same calls without the rewrite are served and the caller lives.
TEST_F(ClassSwap, TheSameCallsUnrewrittenLive) {
  ScopedSlot slot(16 * kMiB, "swap");
  ASSERT_TRUE(slot.ok());
  bool inspected = false;
  const int status = RunSwapTenant(
      slot, made_,
      [](Session& s, Made* m) {
        Calls(s, m, 1, s.device, 0xd3800000, NV01_MEMORY_LOCAL_USER, 0,
              MemoryThatIsAlsoATsg(64 * kKiB));
        Calls(s, m, 1, s.device, 0xd3800001, KEPLER_CHANNEL_GROUP_A, 0, TsgParams());
      },
      [&](pid_t child) {
        inspected = true;
        EXPECT_EQ(TsgsOf(child).tsgs, 1u);
        EXPECT_EQ(slot.Stat(VGPU_STAT_TSGS), 1u);
        EXPECT_GT(slot.Stat(VGPU_STAT_MEM_CHARGED), 4 * kMiB) << "the TSG's estimate";
      });
  EXPECT_TRUE(inspected);
  EXPECT_EQ(made_->legit, 2u);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kSurvived)
      << "status 0x" << std::hex << status;
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done_);
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 0u);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), used_);
}

}  // namespace
}  // namespace vgpu_test

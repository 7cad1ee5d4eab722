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

Made* SharedMade() {
  void* p = mmap(nullptr, sizeof(Made), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  return p == MAP_FAILED ? nullptr : new (p) Made;
}

// What every case asserts once the child is gone: killed inside its first rewritten call, one
// tampering counted, and the driver and the slot left with nothing of it. `escaped` is the
// figure line the child's survival produced ("" when it was killed).
void ExpectKilledAtTheFirstRewrite(const ScopedSlot& slot, int status, uint64_t done_before,
                                   uint64_t used_before, const std::string& escaped) {
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status << std::dec << " (exit 3: not killed; " << escaped
      << ")";
  EXPECT_EQ(ReadNvsimParam("rewrite_alloc_done"), done_before + 1)
      << "killed at the first rewritten call";
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 1u) << "one tampering counted";
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(slot.Stat(VGPU_STAT_TSGS), 0u);
  EXPECT_EQ(NvsimUsedBytes(), used_before);
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

// Checked: 64 KiB of video memory (16 MiB quota, which holds 3 TSGs at their 4.3125 MiB
// estimate). Made: a GR TSG, one more than the slot's cap of 64.
TEST(ClassSwap, MemoryCheckedAsATsgMadeKillsTheCaller) {
  ScopedSlot slot(16 * kMiB, "swap-tsg");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes(), done = ReadNvsimParam("rewrite_alloc_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_alloc_* test hook";
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  std::string escaped;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        for (uint32_t i = 0; i < kMaxTsgs + 1; ++i) {
          SwapParams p = MemoryThatIsAlsoATsg(64 * kKiB);
          uint32_t h = 0xd3000000 + i;
          if (!ArmClassRewrite(KEPLER_CHANNEL_GROUP_A)) _exit(kSetupFailed);
          const int64_t st = Alloc(s.ctl, s.client, s.device, &h, NV01_MEMORY_LOCAL_USER, &p);
          if (st != NV_OK) {
            m->first_fail = st;
            break;
          }
          ++m->ok;
        }
      },
      [&](pid_t child) {
        const DriverTsgs d = TsgsOf(child);
        escaped = Line(
            "vidmem->TSG: %u rewritten calls NV_OK; the driver holds %u GR TSGs (cap %u; "
            "%.4g MiB of RM-internal memory at 4.3125 MiB each) on a 16 MiB slot charged %llu "
            "KiB; the slot's TSG registry: %llu",
            made->ok, d.tsgs, kMaxTsgs, d.tsgs * 4.3125,
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_MEM_CHARGED) / kKiB),
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)));
      });
  ExpectKilledAtTheFirstRewrite(slot, status, done, used, escaped);
  EXPECT_EQ(TsgsOf(0).tsgs, 0u);
  munmap(made, sizeof(Made));
}

// Checked: 64 KiB of video memory under a TSG the tenant made. Made: a channel under that TSG,
// one more than the slot's cap of 1024; the slot's record of the TSG counts none of them.
TEST(ClassSwap, MemoryCheckedAsAChannelMadeKillsTheCaller) {
  ScopedSlot slot(128 * kMiB, "swap-channel");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes(), done = ReadNvsimParam("rewrite_alloc_done");
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  std::string escaped;
  constexpr uint32_t kTsg = 0xd3100000;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        nv_channel_group_alloc_params tp{};
        tp.engineType = 1;
        uint32_t tsg = kTsg;
        if (Alloc(s.ctl, s.client, s.device, &tsg, KEPLER_CHANNEL_GROUP_A, &tp) != NV_OK)
          _exit(kSetupFailed);
        for (uint32_t i = 0; i < kMaxChannels + 1; ++i) {
          SwapParams p = MemoryThatIsAlsoATsg(64 * kKiB);
          uint32_t h = 0xd3200000 + i;
          if (!ArmClassRewrite(kHopperChannel)) _exit(kSetupFailed);
          const int64_t st = Alloc(s.ctl, s.client, kTsg, &h, NV01_MEMORY_LOCAL_USER, &p);
          if (st != NV_OK) {
            m->first_fail = st;
            break;
          }
          ++m->ok;
        }
      },
      [&](pid_t child) {
        const DriverTsgs d = TsgsOf(child);
        escaped = Line(
            "vidmem->channel: %u rewritten calls NV_OK; the driver holds %u channels under %u "
            "TSG (cap %u); slot charged %llu KiB, its TSG registry: %llu",
            made->ok, d.channels, d.tsgs, kMaxChannels,
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_MEM_CHARGED) / kKiB),
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)));
      });
  ExpectKilledAtTheFirstRewrite(slot, status, done, used, escaped);
  EXPECT_EQ(TsgsOf(0).tsgs, 0u);
  munmap(made, sizeof(Made));
}

// Checked: 64 KiB of video memory, after the slot's 64 VA spaces. Made: a VA space past the cap
// (the driver's page directories behind it counted nowhere).
TEST(ClassSwap, MemoryCheckedAsAVaSpaceMadeKillsTheCaller) {
  ScopedSlot slot(64 * kMiB, "swap-vaspace");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes(), done = ReadNvsimParam("rewrite_alloc_done");
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  std::string escaped;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        for (uint32_t i = 0; i < kMaxVaspaces + 1; ++i) {
          nv_vaspace_alloc_params vp{};
          uint32_t h = 0xd3300000 + i;
          if (Alloc(s.ctl, s.client, s.device, &h, FERMI_VASPACE_A, &vp) == NV_OK) ++m->legit;
        }
        for (uint32_t i = 0; i < 4; ++i) {
          SwapParams p = MemoryThatIsAlsoATsg(64 * kKiB);
          uint32_t h = 0xd3400000 + i;
          if (!ArmClassRewrite(FERMI_VASPACE_A)) _exit(kSetupFailed);
          const int64_t st = Alloc(s.ctl, s.client, s.device, &h, NV01_MEMORY_LOCAL_USER, &p);
          if (st != NV_OK) {
            m->first_fail = st;
            break;
          }
          ++m->ok;
        }
      },
      [&](pid_t) {
        escaped = Line(
            "vidmem->VA space: %u VA spaces granted without a rewrite (cap %u), then %u more "
            "through rewritten calls: %u VA spaces in the driver",
            made->legit, kMaxVaspaces, made->ok, made->legit + made->ok);
      });
  EXPECT_EQ(made->legit, kMaxVaspaces) << "the cap holds for VA spaces asked as such";
  ExpectKilledAtTheFirstRewrite(slot, status, done, used, escaped);
  munmap(made, sizeof(Made));
}

// The reverse: checked as a TSG (reserved its estimate, counted against the TSG cap, registered
// with the compute controller), made as a VA space after the slot's 64. The registry then holds
// TSGs the driver does not have, and the VA spaces are past their cap.
TEST(ClassSwap, TsgCheckedAsAVaSpaceMadeKillsTheCaller) {
  ScopedSlot slot(0, "swap-tsg-vas");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes(), done = ReadNvsimParam("rewrite_alloc_done");
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  std::string escaped;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        for (uint32_t i = 0; i < kMaxVaspaces; ++i) {
          nv_vaspace_alloc_params vp{};
          uint32_t h = 0xd3500000 + i;
          if (Alloc(s.ctl, s.client, s.device, &h, FERMI_VASPACE_A, &vp) == NV_OK) ++m->legit;
        }
        for (uint32_t i = 0; i < 4; ++i) {
          SwapParams p{};
          p.tsg.engineType = 1;
          uint32_t h = 0xd3600000 + i;
          if (!ArmClassRewrite(FERMI_VASPACE_A)) _exit(kSetupFailed);
          const int64_t st = Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &p);
          if (st != NV_OK) {
            m->first_fail = st;
            break;
          }
          ++m->ok;
        }
      },
      [&](pid_t child) {
        escaped = Line(
            "TSG->VA space: %u + %u VA spaces in the driver (cap %u); the slot's TSG registry "
            "holds %llu TSGs, the driver %u",
            made->legit, made->ok, kMaxVaspaces,
            static_cast<unsigned long long>(slot.Stat(VGPU_STAT_TSGS)), TsgsOf(child).tsgs);
      });
  ExpectKilledAtTheFirstRewrite(slot, status, done, used, escaped);
  munmap(made, sizeof(Made));
}

// The reverse into memory: checked as a TSG, made as 32 MiB of video memory on a 16 MiB slot.
// The driver's size query already names the class (0x40 is charged): killed before this change
// too; kept so that the new class query does not lose it.
TEST(ClassSwap, TsgCheckedAsMemoryMadeKillsTheCaller) {
  ScopedSlot slot(16 * kMiB, "swap-tsg-mem");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes(), done = ReadNvsimParam("rewrite_alloc_done");
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  std::string escaped;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        SwapParams p = MemoryThatIsAlsoATsg(32 * kMiB);
        uint32_t h = 0xd3700000;
        if (!ArmClassRewrite(NV01_MEMORY_LOCAL_USER)) _exit(kSetupFailed);
        const int64_t st = Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &p);
        if (st == NV_OK) ++m->ok;
      },
      [&](pid_t) {
        escaped = Line("TSG->vidmem: %u calls NV_OK, nvsim used %llu MiB on a 16 MiB slot",
                       made->ok, static_cast<unsigned long long>(NvsimUsedBytes() / kMiB));
      });
  ExpectKilledAtTheFirstRewrite(slot, status, done, used, escaped);
  munmap(made, sizeof(Made));
}

// The control: the same calls without the rewrite are served and the caller lives.
TEST(ClassSwap, TheSameCallsUnrewrittenLive) {
  ScopedSlot slot(16 * kMiB, "swap-control");
  ASSERT_TRUE(slot.ok());
  const uint64_t used = NvsimUsedBytes();
  Made* made = SharedMade();
  ASSERT_NE(made, nullptr);
  bool inspected = false;
  const int status = RunSwapTenant(
      slot, made,
      [&](Session& s, Made* m) {
        SwapParams p = MemoryThatIsAlsoATsg(64 * kKiB);
        uint32_t h = 0xd3800000;
        if (Alloc(s.ctl, s.client, s.device, &h, NV01_MEMORY_LOCAL_USER, &p) == NV_OK) ++m->ok;
        SwapParams t{};
        t.tsg.engineType = 1;
        h = 0xd3800001;
        if (Alloc(s.ctl, s.client, s.device, &h, KEPLER_CHANNEL_GROUP_A, &t) == NV_OK) ++m->ok;
      },
      [&](pid_t child) {
        inspected = true;
        EXPECT_EQ(TsgsOf(child).tsgs, 1u);
        EXPECT_EQ(slot.Stat(VGPU_STAT_TSGS), 1u);
        EXPECT_GT(slot.Stat(VGPU_STAT_MEM_CHARGED), 4 * kMiB) << "the TSG's estimate";
      });
  EXPECT_TRUE(inspected);
  EXPECT_EQ(made->ok, 2u);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kSurvived)
      << "status 0x" << std::hex << status;
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), 0u);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), used);
  munmap(made, sizeof(Made));
}

}  // namespace
}  // namespace vgpu_test

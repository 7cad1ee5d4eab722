// End to end through the real interposition: fake_client issues raw RM ioctls; libvgpu-shim.so
// runs the filter core on them; libvshim-fakenv.so (preloaded after the shim) plays the driver.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fake_device_dir.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ShimPreloadTest : public vgpu::test::FakeDeviceDirTest {
 protected:
  ShimPreloadTest() : FakeDeviceDirTest("vshim-e2e") {}
  std::string Env(const std::string& extra) {
    return "env -u VGPU_CONFIG -u VGPU_MEMORY_QUOTA VGPU_DEV_DIR=" + dir_ +
           " LD_PRELOAD=" VSHIM_LIB ":" VSHIM_FAKENV " " + extra + " ";
  }
  // Runs fake_client; stdout and stderr land in out_/err_.
  int Run(const std::string& env, const std::string& args) {
    std::string cmd = Env(env) + VSHIM_CLIENT " " + args + " >" + dir_ + "/out 2>" + dir_ + "/err";
    int st = system(cmd.c_str());
    out_ = ReadFile(dir_ + "/out");
    err_ = ReadFile(dir_ + "/err");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string out_, err_;
};

TEST_F(ShimPreloadTest, QuotaRefusesLikeTheDriverAndViewsShowTheSlot) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M", "quota"), 0) << out_ << err_;
  // 64 MiB / 2 MiB: the 33rd allocation is refused with NV_ERR_NO_MEMORY, ioctl rc 0.
  EXPECT_NE(out_.find("ALLOCS n=32 last_status=0x51"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW before rc=0 status=0x0 total=67108864 free=67108864"),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("VIEW full rc=0 status=0x0 total=67108864 free=0"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("VIEW freed3 rc=0 status=0x0 total=67108864 free=6291456"), std::string::npos)
      << out_;
  // One diagnostic line for the first refusal, naming quota, charged and request.
  EXPECT_NE(err_.find("quota 67108864, charged 67108864, request 2097152"), std::string::npos)
      << err_;
  EXPECT_EQ(err_.find('\n'), err_.size() - 1) << "more than one line: " << err_;
}

TEST_F(ShimPreloadTest, NoQuotaPassesThroughToTheDriversLimit) {
  ASSERT_EQ(Run("", "quota 40"), 0) << out_ << err_;
  EXPECT_NE(out_.find("ALLOCS n=40 last_status=0x0"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW before rc=0 status=0x0 total=17179869184 free=17179869184"),
            std::string::npos)
      << out_;
  EXPECT_EQ(err_, "");
}

// The driver allocates 6 MiB for each 2 MiB request (a racing thread's doing): after ten the
// slot holds 60 of 64 MiB; the eleventh passes the check (62) but the driver makes it 66. The
// shim frees it through the filter and reports NV_ERR_NO_MEMORY, so the charge stays at 60.
TEST_F(ShimPreloadTest, AllocationGrownBehindTheCheckIsUndone) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M FAKENV_INFLATE=3", "quota"), 0) << out_ << err_;
  EXPECT_NE(out_.find("ALLOCS n=10 last_status=0x51"), std::string::npos) << out_ << err_;
  EXPECT_NE(out_.find("VIEW full rc=0 status=0x0 total=67108864 free=4194304"), std::string::npos)
      << out_;
  EXPECT_NE(err_.find("object freed"), std::string::npos) << err_;
}

// Security review F2 in shim mode: the header of NV_ESC_IOCTL_XFER_CMD lives in the tenant's
// memory, so a sibling thread can store another escape into it after the shim read it. The fake
// driver stores RM_ALLOC there just before its own read (FAKENV_XFER_REWRITE_CMD). The shim must
// issue the inner call it checked, so the driver never reads a header at all: it runs the
// harmless control the core saw, and holds only the 2 MiB the slot was charged for.
TEST_F(ShimPreloadTest, XferHeaderTheDriverRunsIsTheOneTheShimChecked) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M FAKENV_XFER_REWRITE_CMD=0x2b", "xfer"), 0) << out_ << err_;
  // A wrapped allocation is still seen and charged.
  EXPECT_NE(out_.find("XFER_ALLOC rc=0 status=0x0 driver_mib=2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW xfer-alloc rc=0 status=0x0 total=67108864 free=65011712"),
            std::string::npos)
      << out_;
  // The swapped header reaches no driver read: 96 MiB would sit uncharged on a 64 MiB slot.
  EXPECT_NE(out_.find("XFER_SWAPPED rc=0 status=0x0 driver_mib=2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW xfer-swapped rc=0 status=0x0 total=67108864 free=65011712"),
            std::string::npos)
      << out_;
}

// vshim_hooks.h as shim/compute uses it: lifecycle events for TSGs, channels and clients, the
// owning ctl fd, and an RM control issued around the filter.
TEST_F(ShimPreloadTest, HooksReportTsgChannelAndClientLifecycle) {
  std::string cmd = Env("VGPU_MEMORY_QUOTA=64M") +
                    "LD_PRELOAD=" VSHIM_LIB ":" VSHIM_FAKENV ":" VSHIM_PROBE " " VSHIM_CLIENT
                    " tsg >" +
                    dir_ + "/out 2>" + dir_ + "/err";
  ASSERT_EQ(system(cmd.c_str()), 0);
  out_ = ReadFile(dir_ + "/out");
  err_ = ReadFile(dir_ + "/err");
  EXPECT_NE(out_.find("TSG 0x0\nCHANNEL 0x0\nFREE_TSG 0x0\nFREE_CLIENT 0x0"), std::string::npos)
      << out_;
  // 1 TSG_CREATED (engine 1 = GR0), 3 CHANNEL_CREATED, 2 TSG_FREED, 4 CHANNEL_FREED, 5 CLIENT_GONE.
  EXPECT_NE(err_.find("EVENT 1 client=0xc1d00001 parent=0x5c000001 object=0x5c002000 "
                      "class=0xa06c engine=1 fd_ok=1\nCTRL rc=0 status=0x0\n"
                      "EVENT 3 client=0xc1d00001 parent=0x5c002000 object=0x5c002001 "
                      "class=0xc86f engine=0 fd_ok=1\n"
                      "EVENT 2 client=0xc1d00001 parent=0x5c000001 object=0x5c002000 "
                      "class=0xa06c engine=1 fd_ok=1\n"
                      "EVENT 4 client=0xc1d00001 parent=0x5c002000 object=0x5c002001 "
                      "class=0xc86f engine=0 fd_ok=1\n"
                      "EVENT 5 client=0xc1d00001"),
            std::string::npos)
      << err_;
}

// A driver branch is its tables (docs/nvidia-rm-abi.md, "Adding a driver branch"): the shim's
// in-process path, unchanged, over the made-up branch of tests/unit/core/delta_branch.c (NOT a
// driver branch) linked into a test build of the library, against the fake driver answering
// version 999. Its renumbered FB_GET_INFO_V2 shows the slot, the old number is unknown, and its
// new TSG and channel classes reach the compute hooks as the 580 ones do.
TEST_F(ShimPreloadTest, AMadeUpBranchNeedsOnlyItsTables) {
  const std::string run =
      " VGPU_MEMORY_QUOTA=64M " VSHIM_CLIENT " delta >" + dir_ + "/out 2>" + dir_ + "/err";
  std::string cmd = Env("") +
                    "FAKENV_VERSION=999.0.1-test LD_PRELOAD=" VSHIM_DELTA_LIB ":" VSHIM_FAKENV
                    ":" VSHIM_PROBE +
                    run;
  ASSERT_EQ(system(cmd.c_str()), 0);
  out_ = ReadFile(dir_ + "/out");
  err_ = ReadFile(dir_ + "/err");
  EXPECT_NE(out_.find("ALLOCS n=4 last_status=0x0\n"
                      "VIEW delta rc=0 status=0x0 total=67108864 free=58720256\n"
                      "VIEW old-number rc=0 status=0x56"),
            std::string::npos)
      << out_ << err_;
  EXPECT_NE(out_.find("TSG 0x0\nCHANNEL 0x0\nFREE_TSG 0x0\nFREE_CLIENT 0x0"), std::string::npos)
      << out_;
  EXPECT_NE(err_.find("EVENT 1 client=0xc1d00001 parent=0x5c000001 object=0x5c002000 "
                      "class=0xd06c engine=1 fd_ok=1\nCTRL rc=0 status=0x0\n"
                      "EVENT 3 client=0xc1d00001 parent=0x5c002000 object=0x5c002001 "
                      "class=0xd06f engine=0 fd_ok=1\n"
                      "EVENT 2 client=0xc1d00001 parent=0x5c000001 object=0x5c002000 "
                      "class=0xd06c engine=1 fd_ok=1\n"),
            std::string::npos)
      << err_;
  // The released library (580 tables) over the 580 driver: the same calls are unknown.
  cmd = Env("") + "LD_PRELOAD=" VSHIM_LIB ":" VSHIM_FAKENV ":" VSHIM_PROBE + run;
  ASSERT_EQ(system(cmd.c_str()), 0);
  out_ = ReadFile(dir_ + "/out");
  err_ = ReadFile(dir_ + "/err");
  EXPECT_NE(out_.find("VIEW delta rc=0 status=0x56"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW old-number rc=0 status=0x0 total=67108864 free=58720256"),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("TSG 0x22\n"), std::string::npos) << out_;  // NV_ERR_INVALID_CLASS
  EXPECT_EQ(err_.find("EVENT 1 "), std::string::npos) << err_;
}

// Security review F11.3 in shim mode (docs/security.md): a slot is one GPU of the node. The fake
// driver plays two GPUs; the slot config names GPU 0 (gpu_index, the minor of its /dev/nvidiaN,
// as vgpu-manager writes it). The tenant must see only GPU 0 in CARD_INFO and the NV0000 lists,
// and must neither describe nor attach GPU 1 (RM attach, attach-all, ATTACH_GPUS_TO_FD).
TEST_F(ShimPreloadTest, SlotConfigConfinesTheTenantToItsGpu) {
  std::ofstream(dir_ + "/slot.conf") << "gpu_index = 0\n";
  ASSERT_EQ(Run("FAKENV_GPUS=2 VGPU_CONFIG=" + dir_ + "/slot.conf", "gpus"), 0) << out_ << err_;
  EXPECT_NE(out_.find("CARD_INFO rc=0 entries=1 first=0x1800 own=1\n"
                      "PROBED status=0x0 n=1\n"
                      "ATTACH_OWN status=0x0\n"
                      "ID_INFO_OTHER status=0x1f\n"
                      "ATTACH_OTHER status=0x1f all=0x1f to_fd rc=-1 errno=19 other_attached=0\n"
                      "ATTACHED status=0x0 n=1\n"),
            std::string::npos)
      << out_ << err_;
  // A slot on GPU 1 is confined to GPU 1: the config's minor picks the driver's id.
  std::ofstream(dir_ + "/slot.conf") << "gpu_index = 1\n";
  ASSERT_EQ(Run("FAKENV_GPUS=2 VGPU_CONFIG=" + dir_ + "/slot.conf", "gpus"), 0) << out_ << err_;
  EXPECT_NE(out_.find("CARD_INFO rc=0 entries=1 first=0x1900 own=0\n"), std::string::npos)
      << out_ << err_;
  EXPECT_NE(out_.find("ID_INFO_OTHER status=0x0\n"), std::string::npos) << out_ << err_;
}

// A config naming a GPU the driver does not list must not run unconfined: every NVIDIA open is
// refused, with one line that names the GPU.
TEST_F(ShimPreloadTest, ConfigNamingAGpuTheDriverDoesNotListRefusesTheDevice) {
  std::ofstream(dir_ + "/slot.conf") << "gpu_index = 2\n";
  Run("FAKENV_GPUS=2 VGPU_CONFIG=" + dir_ + "/slot.conf", "gpus");
  EXPECT_NE(out_.find("OPEN fail errno=13"), std::string::npos) << out_ << err_;
  EXPECT_NE(err_.find("gpu_index 2 is not a GPU of the driver"), std::string::npos) << err_;
}

// A config written before the shim read gpu_index (or by hand) names no GPU: the slot runs as
// before, unconfined, and says so.
TEST_F(ShimPreloadTest, ConfigWithoutAGpuRunsUnconfinedAndSaysSo) {
  std::ofstream(dir_ + "/slot.conf") << "mem_quota = 64M\n";
  ASSERT_EQ(Run("FAKENV_GPUS=2 VGPU_CONFIG=" + dir_ + "/slot.conf", "gpus"), 0) << out_ << err_;
  EXPECT_NE(out_.find("CARD_INFO rc=0 entries=2 "), std::string::npos) << out_;
  EXPECT_NE(err_.find("names no GPU (gpu_index): not confined to one GPU"), std::string::npos)
      << err_;
}

// Security review F10 in shim mode: the driver's class-0x3e system memory is charged to no memory
// cgroup, so the slot holds at most the core's per-slot budget (VCORE_SLOT_SYSMEM_DEFAULT_MIB,
// 2 GiB, the module's default too): 8 of 16 allocations of 256 MiB, the 9th NV_ERR_NO_MEMORY.
TEST_F(ShimPreloadTest, SystemMemoryIsHeldToTheSlotsBudget) {
  std::ofstream(dir_ + "/slot.conf") << "gpu_index = 0\nmem_quota = 64M\n";
  ASSERT_EQ(Run("VGPU_CONFIG=" + dir_ + "/slot.conf", "sysmem 16"), 0) << out_ << err_;
  EXPECT_NE(out_.find("SYSMEM n=8 last_status=0x51 driver_mib=2048"), std::string::npos)
      << out_ << err_;
  EXPECT_NE(err_.find("system memory budget exceeded"), std::string::npos) << err_;
  // Without a slot config (the shim run by hand) the budget holds all the same.
  ASSERT_EQ(Run("", "sysmem 16"), 0) << out_ << err_;
  EXPECT_NE(out_.find("SYSMEM n=8 last_status=0x51 driver_mib=2048"), std::string::npos)
      << out_ << err_;
}

TEST_F(ShimPreloadTest, ForkChildIsItsOwnSlotMemberAndLeavesOnExit) {
  std::ofstream(dir_ + "/slot.conf") << "mem_quota = 64M\n";
  ASSERT_EQ(Run("VGPU_CONFIG=" + dir_ + "/slot.conf", "fork"), 0) << out_ << err_;
  EXPECT_NE(out_.find("VIEW child-alive rc=0 status=0x0 total=67108864 free=35651584"),
            std::string::npos)
      << out_;  // 64 - 20 (parent) - 10 (child)
  EXPECT_NE(out_.find("VIEW child-exited rc=0 status=0x0 total=67108864 free=46137344"),
            std::string::npos)
      << out_;  // 64 - 20
}

TEST_F(ShimPreloadTest, VforkChildClosingFdsLeavesTheParentAlone) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M", "vfork"), 0) << out_ << err_;
  EXPECT_NE(out_.find("VIEW after-vfork rc=0 status=0x0 total=67108864 free=46137344"),
            std::string::npos)
      << out_;  // still 20 MiB charged
  EXPECT_NE(out_.find("ALLOCS n=22 last_status=0x51"), std::string::npos) << out_;  // 44 left
}

TEST_F(ShimPreloadTest, FdsClosedByCloseRangeAreForgotten) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M", "closerange"), 0) << out_ << err_;
  EXPECT_NE(out_.find("REUSED 1 SOCKET_IOCTL rc=0 n=0"), std::string::npos) << out_ << err_;
}

TEST_F(ShimPreloadTest, PassthroughDiagnosticModeFiltersNothing) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M VGPU_SHIM_PASSTHROUGH=1", "quota 40"), 0) << out_ << err_;
  EXPECT_NE(out_.find("ALLOCS n=40 last_status=0x0"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW before rc=0 status=0x0 total=17179869184"), std::string::npos) << out_;
}

// VGPU_SHIM_COUNT=1: the wrappers count what reaches them (the GPU suite's proof that a launch
// loop makes no call into the shim); without it they count nothing.
TEST_F(ShimPreloadTest, DiagnosticCountersSeeExactlyTheCallsMade) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M VGPU_SHIM_COUNT=1", "counters"), 0) << out_ << err_;
  // 3 pipe ioctls + 2 RM_ALLOCs on the ctl fd; one anonymous mmap; open/close of /dev/null.
  EXPECT_NE(out_.find("COUNTERS enabled=1 ioctls=5 nvidia=2 mmaps=1 opens=1 closes=1"),
            std::string::npos)
      << out_ << err_;
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=64M", "counters"), 0) << out_ << err_;
  EXPECT_NE(out_.find("COUNTERS enabled=0 ioctls=0 nvidia=0 mmaps=0 opens=0 closes=0"),
            std::string::npos)
      << out_ << err_;
}

TEST_F(ShimPreloadTest, ManagedMemoryFollowsThePolicy) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=4M", "managed"), 0) << err_;
  EXPECT_NE(out_.find("MANAGED0 ok"), std::string::npos) << out_ << err_;  // charged: 2 of 4
  EXPECT_NE(out_.find("MANAGED1 ok"), std::string::npos) << out_ << err_;  // charged: 4 of 4
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=3M", "managed"), 0) << err_;
  EXPECT_NE(out_.find("MANAGED1 fail errno=12"), std::string::npos) << out_ << err_;
  EXPECT_NE(err_.find("managed-memory mmap"), std::string::npos) << err_;
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=1M VGPU_MANAGED=allow-uncounted", "managed"), 0) << err_;
  EXPECT_NE(out_.find("MANAGED1 ok"), std::string::npos) << out_ << err_;
}

// Each CUDA context maps 2 MiB of nvidia-uvm: charged to the quota (a second was refused before),
// refused with ENOMEM once the quota is full, refunded as the mappings go, by piece, and kept
// while a mapping outlives its fd (the mapping holds the driver's file).
TEST_F(ShimPreloadTest, SecondContextMappingIsChargedToTheQuota) {
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=8M", "contexts"), 0) << out_ << err_;
  auto view = [&](const char* when, uint64_t free) {
    return out_.find(std::string("VIEW ") + when + " rc=0 status=0x0 total=8388608 free=" +
                     std::to_string(free) + "\n") != std::string::npos;
  };
  // Four charged 2 MiB mappings fill 8 MiB, the fifth is refused.
  EXPECT_NE(out_.find("CONTEXTS mapped=4 errno=12"), std::string::npos) << out_ << err_;
  EXPECT_TRUE(view("mapped", 0)) << out_;
  EXPECT_TRUE(view("unmapped", 2 * kMiB)) << out_;
  EXPECT_TRUE(view("half-unmapped", 3 * kMiB)) << out_;
  EXPECT_NE(out_.find("MREMAP shrink ok"), std::string::npos) << out_;
  EXPECT_TRUE(view("shrunk", 4 * kMiB)) << out_;
  EXPECT_TRUE(view("fd-closed", 4 * kMiB)) << out_;
  EXPECT_TRUE(view("all-unmapped", 8 * kMiB)) << out_;
  ASSERT_EQ(Run("VGPU_MEMORY_QUOTA=8M VGPU_MANAGED=allow-uncounted", "contexts"), 0) << err_;
  EXPECT_NE(out_.find("CONTEXTS mapped=8 errno=0"), std::string::npos) << out_ << err_;
  EXPECT_TRUE(view("mapped", 8 * kMiB)) << out_ << "allow-uncounted charges nothing";
}

TEST_F(ShimPreloadTest, BadConfigRefusesTheDeviceWithAClearError) {
  Run("VGPU_MEMORY_QUOTA=lots", "quota");
  EXPECT_NE(out_.find("OPEN fail errno=13"), std::string::npos) << out_;
  EXPECT_NE(err_.find("VGPU_MEMORY_QUOTA: bad value 'lots'"), std::string::npos) << err_;
}

TEST_F(ShimPreloadTest, TwoProcessesShareOneQuotaAndAKilledOneReturnsItsMemory) {
  std::ofstream(dir_ + "/slot.conf") << "mem_quota = 64M\n";
  std::string env = "VGPU_CONFIG=" + dir_ + "/slot.conf";
  // Holder: 20 x 2 MiB, then sleeps.
  std::string cmd = Env(env) + VSHIM_CLIENT " hold 20 >" + dir_ + "/hold.out 2>&1 & echo $!";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  int holder = 0;
  ASSERT_EQ(fscanf(p, "%d", &holder), 1);
  pclose(p);
  for (int i = 0; i < 500 && ReadFile(dir_ + "/hold.out").find("READY") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_NE(ReadFile(dir_ + "/hold.out").find("ALLOCS n=20"), std::string::npos)
      << ReadFile(dir_ + "/hold.out");
  ASSERT_EQ(Run(env, "quota"), 0) << out_ << err_;
  EXPECT_NE(out_.find("ALLOCS n=12 last_status=0x51"), std::string::npos) << out_;
  EXPECT_NE(out_.find("VIEW before rc=0 status=0x0 total=67108864 free=25165824"),
            std::string::npos)
      << out_;
  ASSERT_EQ(kill(holder, SIGKILL), 0);
  for (int i = 0; i < 500 && kill(holder, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Run(env, "quota"), 0) << out_ << err_;
  EXPECT_NE(out_.find("ALLOCS n=32 last_status=0x51"), std::string::npos) << out_;
}

}  // namespace

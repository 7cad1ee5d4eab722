// F3, the swap residue (docs/security/kernel-lifetime-compute.md): nvidia-uvm copies a call's
// params in from user memory itself, after the proxy read them (__UVM_ROUTE_CMD_*, uvm_api.h).
// A sibling thread that swaps hMemory of UVM_MAP_EXTERNAL_ALLOCATION in between makes UVM dup
// another object of the caller's than the one the proxy holds: that memory escapes the quota.
// The module runs those calls from a sealed copy of the params (kmod/seal.c): a page only
// the calling task can store into while its call is in flight, and whose replacement (munmap,
// MAP_FIXED over it) is tampering. nvsim's sibling hook (tests/vm/nvsim/nvsim_hook.c) stores
// from another task that uses the caller's mm, or replaces the mapping, just before nvsim copies
// the params in. Linked into vgpu_gtest (guest.cmake).
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint64_t kVa0 = 0x400000000ull;
constexpr uint64_t kVaStride = 1ull << 30;

// Arms nvsim's sibling for this process's next UVM map: hMemory becomes `memory`, stored into
// the page (replace false) or on a mapping put in its place (replace true).
bool ArmSibling(uint32_t memory, bool replace) {
  return WriteNvsimParam("sibling_uvm_map_hmemory", memory) &&
         WriteNvsimParam("sibling_uvm_map_replace", replace ? 1 : 0) &&
         WriteNvsimParam("sibling_uvm_map_tgid", static_cast<uint64_t>(getpid()));
}

size_t MapsLines() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

// A 64 MiB slot, four rounds of {A (4 MiB) and B (46 MiB: the last round fits beside three A and
// their page tables), map A with a sibling swapping hMemory to B, free B's and A's handles}: UVM
// must dup exactly A, so that what the driver holds for the slot is what it charges. Then UVM_FREE
// of every range and the file's close return both to 0.
TEST(UvmSealed, SiblingSwapOfTheMappedMemoryNeverLands) {
  const uint64_t quota = 64 * kMiB, size_a = 4 * kMiB, size_b = 46 * kMiB;
  ScopedSlot slot(quota, "uvm-sealed", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t tries = ReadNvsimParam("sibling_uvm_map_tries");
  const uint64_t landed = ReadNvsimParam("sibling_uvm_map_done");
  const uint64_t ptables0 = ReadNvsimParam("uvm_ptable_bytes");
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  constexpr uint32_t kRounds = 4;
  uint64_t held = 0, charged = 0;
  for (uint32_t round = 0; round < kRounds; ++round) {
    const uint32_t a = 0xd6000000 + 2 * round, b = a + 1;
    ASSERT_EQ(s.Vidmem(a, size_a), NV_OK) << "round " << round;
    ASSERT_EQ(s.Vidmem(b, size_b), NV_OK) << "round " << round;
    ASSERT_TRUE(ArmSibling(b, false));
    EXPECT_EQ(MapExternal(uvm, kVa0 + round * kVaStride, size_a, s.client, a), NV_OK);
    EXPECT_TRUE(WriteNvsimParam("sibling_uvm_map_tgid", 0));
    EXPECT_EQ(s.FreeObj(b), NV_OK);
    EXPECT_EQ(s.FreeObj(a), NV_OK);
    held = NvsimUsedBytes() - base;
    charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    EXPECT_LE(held, charged) << "round " << round << ": the driver holds what is not charged";
    EXPECT_EQ(charged, (round + 1) * (size_a + UvmMapPtables(kVa0, size_a)))
        << "round " << round << ": A and its mapping's page tables (F11.1)";
  }
  const uint64_t ptables = ReadNvsimParam("uvm_ptable_bytes") - ptables0;
  const uint64_t stores = ReadNvsimParam("sibling_uvm_map_done") - landed;
  std::printf(
      "F3 swap: %u rounds of map A (4 MiB) with a sibling swapping hMemory to B (46 MiB), then "
      "both handles freed, on a 64 MiB slot: %llu of %llu stores landed, driver holds %llu MiB, "
      "charged %llu MiB\n",
      kRounds, static_cast<unsigned long long>(stores),
      static_cast<unsigned long long>(ReadNvsimParam("sibling_uvm_map_tries") - tries),
      static_cast<unsigned long long>(held >> 20), static_cast<unsigned long long>(charged >> 20));
  EXPECT_EQ(ReadNvsimParam("sibling_uvm_map_tries"), tries + kRounds) << "the sibling ran";
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the params UVM reads";
  EXPECT_EQ(held - ptables, kRounds * size_a) << "UVM dups exactly A";
  EXPECT_LE(charged, quota);

  for (uint32_t round = 0; round < kRounds; ++round)
    EXPECT_EQ(FreeRange(uvm, kVa0 + round * kVaStride, size_a), NV_OK);
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  close(uvm);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
}

// The same swap made by replacing the page (munmap and an anonymous MAP_FIXED mapping holding
// the swapped params), which no page protection can stop: it is tampering. The tenant (a forked
// child with a client of its own, on files the parent keeps open: RM lets UVM dup only the
// calling process's clients) is killed in the call, the UVM file refuses everything after, and
// the slot keeps charging at least what the driver holds, at every step, until the files close.
TEST(UvmSealed, ReplacedParamsAreTamperingAndKeepEveryMemoryCharged) {
  const uint64_t quota = 64 * kMiB, size_a = 4 * kMiB, size_b = 48 * kMiB;
  const uint32_t a = 0xd6100000, b = 0xd6100001;
  ScopedSlot slot(quota, "uvm-replaced", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  const uint64_t landed = ReadNvsimParam("sibling_uvm_map_done");
  const uint64_t tampered = slot.Stat(VGPU_STAT_OVERQUOTA);
  auto s = std::make_unique<Session>();
  ASSERT_EQ(s->Open(slot.ctl(), slot.dev()), "");
  const int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);

  const pid_t child = fork();
  if (child == 0) {
    uint32_t client = 0, device = 0xd6100002, ha = a, hb = b;
    uint64_t sa = size_a, sb = size_b;
    nv0080_alloc_params dp{};
    if (AllocClient(s->ctl, &client) != NV_OK ||
        Alloc(s->ctl, client, client, &device, NV01_DEVICE_0, &dp) != NV_OK ||
        AllocVidmem(s->ctl, client, device, &ha, &sa) != NV_OK ||
        AllocVidmem(s->ctl, client, device, &hb, &sb) != NV_OK || !ArmSibling(b, true))
      _exit(4);
    const uint32_t st = MapExternal(uvm, kVa0, size_a, client, a);
    std::printf("F3 replace: the tampered map returned to the tenant, status 0x%x\n", st);
    std::fflush(stdout);
    _exit(3);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WriteNvsimParam("sibling_uvm_map_tgid", 0));
  EXPECT_EQ(ReadNvsimParam("sibling_uvm_map_done"), landed + 1) << "the mapping was replaced";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "status 0x" << std::hex << status << ": the tampering tenant was not killed";
  EXPECT_EQ(slot.Stat(VGPU_STAT_OVERQUOTA), tampered + 1) << "the tampering is counted";

  auto step = [&](const char* what) {
    const uint64_t held = NvsimUsedBytes() - base, charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
    std::printf("F3 replace: %s: driver holds %llu MiB, charged %llu MiB\n", what,
                static_cast<unsigned long long>(held >> 20),
                static_cast<unsigned long long>(charged >> 20));
    EXPECT_GE(charged, held) << what << ": the driver holds what is not charged";
  };
  step("after the tampered map");
  EXPECT_NE(FreeRange(uvm, kVa0, size_a), NV_OK) << "the tampered UVM file is closed to calls";
  s.reset();  // the RM files close: every handle goes, UVM's dup stays
  EXPECT_EQ(SettledOpenFiles(slot, 1), 1u);
  step("the RM files closed");
  close(uvm);
  EXPECT_EQ(SettledCharge(slot, 0), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base);
}

// An honest map and free through the seal: the params come back with the driver's answer, and
// no mapping of the module's is left in the caller's address space.
TEST(UvmSealed, TheSealedCopyAnswersAndLeavesNoMapping) {
  const uint64_t size = 8 * kMiB;
  ScopedSlot slot(64 * kMiB, "uvm-seal-maps", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const int uvm = OpenUvmOf(slot);
  ASSERT_GE(uvm, 0);
  ASSERT_EQ(s.Vidmem(0xd6200000, size), NV_OK);
  const size_t lines = MapsLines();
  EXPECT_EQ(MapExternal(uvm, kVa0, size, s.client, 0xd6200000), NV_OK);
  EXPECT_EQ(FreeRange(uvm, kVa0, size), NV_OK);
  EXPECT_EQ(FreeRange(uvm, kVa0, size), NV_ERR_INVALID_ADDRESS) << "the driver's status came back";
  // Unreadable params: -EFAULT, as the driver answers.
  EXPECT_EQ(ioctl(uvm, UVM_FREE, reinterpret_cast<void*>(8)), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(MapsLines(), lines) << "a sealed copy's mapping was left behind";
  EXPECT_EQ(s.FreeObj(0xd6200000), NV_OK);
  close(uvm);
}

// The seal's cost per call: UVM_FREE of no range (24 B of params, sealed through the proxy)
// against the same call on nvsim's own node, and against UVM_UNREGISTER_GPU of no GPU (20 B, not
// sealed, copied in and out by nvsim as UVM_FREE is) through the proxy, in interleaved batches
// whose order alternates. A measurement: it fails only if a call fails.
TEST(UvmSealed, CostPerCall) {
  ScopedSlot slot(64 * kMiB, "uvm-seal-cost", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const int proxy = OpenUvmOf(slot), direct = OpenUvmAt("/dev/nvidia-uvm");
  ASSERT_GE(proxy, 0);
  ASSERT_GE(direct, 0);
  constexpr int kRounds = 15, kCalls = 200;
  auto batch = [&](int fd, bool sealed_cmd) {
    uvm_free_params fp{};
    uvm_unregister_gpu_params up{};
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      fp.base = kVa0;
      fp.length = 4096;
      const int rc = sealed_cmd ? ioctl(fd, UVM_FREE, &fp) : ioctl(fd, UVM_UNREGISTER_GPU, &up);
      EXPECT_EQ(rc, 0) << strerror(errno);
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
           kCalls;
  };
  std::vector<double> sealed, direct_ns, unsealed;
  for (int r = 0; r < kRounds; ++r) {
    if (r % 2) {
      direct_ns.push_back(batch(direct, true));
      unsealed.push_back(batch(proxy, false));
      sealed.push_back(batch(proxy, true));
    } else {
      sealed.push_back(batch(proxy, true));
      unsealed.push_back(batch(proxy, false));
      direct_ns.push_back(batch(direct, true));
    }
  }
  auto min = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> vs_direct, vs_unsealed;
  for (int r = 0; r < kRounds; ++r) {
    vs_direct.push_back(sealed[r] / direct_ns[r]);
    vs_unsealed.push_back(sealed[r] / unsealed[r]);
  }
  std::printf(
      "bench uvm seal: UVM_FREE through the proxy min %.0f median %.0f ns/call; on nvsim directly "
      "min %.0f median %.0f; UNREGISTER_GPU (unsealed) through the proxy min %.0f median %.0f; "
      "proxy/direct min-of-mins %.2f median %.2f; FREE/UNREGISTER_GPU min-of-mins %.2f median "
      "%.2f\n",
      min(sealed), median(sealed), min(direct_ns), median(direct_ns), min(unsealed),
      median(unsealed), min(sealed) / min(direct_ns), median(vs_direct),
      min(sealed) / min(unsealed), median(vs_unsealed));
  close(direct);
  close(proxy);
}

}  // namespace
}  // namespace vgpu_test

// The call path's security rules (docs/security/kernel-call-path.md), each against nvsim
// modelling what the 580 driver does (tests/vm/nvsim/README.md):
//   - the driver never reads a header the core did not check (XFER);
//   - under a quota, paths that cannot be charged are refused (legacy VID_HEAP allocations
//     whose handle the driver generates, UVM migration, one managed mapping per UVM file);
//   - an admin caller's legacy heap query gets no handle on the whole framebuffer;
//   - no usable driver file reaches another process (a fork during a call);
//   - another slot's pids and usage are not readable by an unprivileged user.
// Linked into vgpu_gtest (guest.cmake).
#include <sys/mman.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

// nvidia-uvm commands nvsim does not implement (uvm_ioctl.h; docs/nvidia-rm-abi.md §7); it
// counts UVM_MIGRATE (nvsim_abi.h).
constexpr unsigned long UVM_MIGRATE_RANGE_GROUP = 53;
constexpr unsigned long UVM_POPULATE_PAGEABLE = 71;

// F2: nvsim's rewrite_xfer hook stores into the XFER header just before the driver reads it:
// a sibling thread's store between the proxy's check and the driver's read, made deterministic.
// The wrapped call is an NVOS21 that reads as a harmless control (NVOS54 and NVOS21 are both
// 32 bytes; hObjectNew 0x101 is the control NV0000 GET_BUILD_VERSION); the store turns the
// escape into RM_ALLOC of 96 MiB on a 64 MiB slot. The driver must run what the core checked.
TEST(CallPath, XferHeaderTheDriverRunsIsTheOneTheCoreChecked) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  nv_memory_allocation_params mp = VidmemParams(s.client, 96 * kMiB);
  nvos21 a{};
  a.hRoot = s.client;
  a.hObjectParent = s.device;
  a.hObjectNew = 0x101;
  a.hClass = NV01_MEMORY_LOCAL_USER;
  a.pAllocParms = Ptr(&mp);
  nv_ioctl_xfer x{NV_ESC_RM_CONTROL, sizeof(a), Ptr(&a)};
  const uint64_t done = ReadNvsimParam("rewrite_xfer_done");
  ASSERT_TRUE(WriteNvsimParam("rewrite_xfer_offset", 0) &&
              WriteNvsimParam("rewrite_xfer_value", NV_ESC_RM_ALLOC) &&
              WriteNvsimParam("rewrite_xfer_tgid", static_cast<uint64_t>(getpid())));
  Rc rc = RawIoctl(s.ctl, NV_ESC_IOCTL_XFER_CMD, &x, sizeof(x));
  WriteNvsimParam("rewrite_xfer_tgid", 0);
  const uint64_t held = NvsimUsedBytes() - base;
  const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  std::printf(
      "xfer header rewrite: ioctl %d errno %d, rewrites %llu, driver holds %llu MiB, "
      "charged %llu MiB\n",
      rc.ret, rc.err, static_cast<unsigned long long>(ReadNvsimParam("rewrite_xfer_done") - done),
      static_cast<unsigned long long>(held / kMiB),
      static_cast<unsigned long long>(charged / kMiB));
  EXPECT_LE(held, 64 * kMiB) << "the driver ran an escape the core never saw";
  EXPECT_EQ(held, charged);
  // An XFER-wrapped allocation the core checked is still charged, and refused over the quota.
  nvos64 b{};
  nv_memory_allocation_params mp2 = mp;
  mp2.size = 8 * kMiB;
  b.hRoot = s.client;
  b.hObjectParent = s.device;
  b.hObjectNew = 0xa1;
  b.hClass = NV01_MEMORY_LOCAL_USER;
  b.pAllocParms = Ptr(&mp2);
  nv_ioctl_xfer y{NV_ESC_RM_ALLOC, sizeof(b), Ptr(&b)};
  ASSERT_EQ(RawIoctl(s.ctl, NV_ESC_IOCTL_XFER_CMD, &y, sizeof(y)).ret, 0);
  EXPECT_EQ(b.status, NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), charged + 8 * kMiB);
  EXPECT_EQ(NvsimUsedBytes() - base, slot.Stat(VGPU_STAT_MEM_CHARGED));
}

// NVOS32 ALLOC_SIZE of `size` bytes of video memory under hMemory = `handle`, `flags`.
uint32_t VidHeapAllocSize(Session& s, uint32_t handle, uint32_t flags, uint64_t size) {
  nvos32 v{};
  v.hRoot = s.client;
  v.hObjectParent = s.device;
  v.function = NVOS32_FUNCTION_ALLOC_SIZE;
  memcpy(v.data + NVOS32_ALLOCSIZE_HMEMORY_DOFF, &handle, 4);
  memcpy(v.data + NVOS32_ALLOCSIZE_FLAGS_DOFF, &flags, 4);
  memcpy(v.data + NVOS32_ALLOCSIZE_SIZE_DOFF, &size, 8);
  Rc rc = RawIoctl(s.ctl, NV_ESC_RM_VID_HEAP_CONTROL, &v, sizeof(v));
  return rc.ret ? 0xffffffffu : v.status;
}

// F9: without NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED the driver makes its own handle
// (rmapi_deprecated_vidheapctrl.c, _rmVidHeapControlAllocCommon; nvsim does the same): a charge
// recorded under the caller's hMemory is refunded by RM_FREE(hMemory), which frees nothing.
TEST(CallPath, LegacyVidHeapAllocLeavesNoMemoryUncharged) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  for (uint32_t i = 0; i < 4; ++i) {
    VidHeapAllocSize(s, 0x7000 + i, 0, 60 * kMiB);
    s.FreeObj(0x7000 + i);
  }
  const uint64_t held = NvsimUsedBytes() - base;
  const uint64_t charged = slot.Stat(VGPU_STAT_MEM_CHARGED);
  std::printf("legacy VHC without a provided handle: driver holds %llu MiB, charged %llu MiB\n",
              static_cast<unsigned long long>(held / kMiB),
              static_cast<unsigned long long>(charged / kMiB));
  EXPECT_LE(held, 64 * kMiB);
  EXPECT_EQ(held, charged);
  // With the handle provided, the driver uses it: charged, and the free refunds it.
  EXPECT_EQ(VidHeapAllocSize(s, 0x7100, NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED, 8 * kMiB),
            NV_OK);
  EXPECT_EQ(NvsimUsedBytes() - base, slot.Stat(VGPU_STAT_MEM_CHARGED));
  EXPECT_EQ(s.FreeObj(0x7100), NV_OK);
  EXPECT_EQ(NvsimUsedBytes() - base, slot.Stat(VGPU_STAT_MEM_CHARGED));
}

// F11.2: the legacy heap query (RM_ALLOC_MEMORY class 0x40) first tries a whole-FB
// NV01_MEMORY_LOCAL_PHYSICAL handle, which RM grants to CAP_SYS_ADMIN callers
// (rmapi_deprecated_allocmemory.c, _rmAllocMemoryLocalUser; nvsim counts them). The suite runs
// as root: a tenant with CAP_SYS_ADMIN must still get only the heap's limit.
TEST(CallPath, AdminHeapQueryGetsNoWholeFramebufferHandle) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint64_t before = ReadNvsimParam("local_physical_allocs");
  nvos02_with_fd m{};
  m.hRoot = s.client;
  m.hObjectParent = s.device;
  m.hObjectNew = 0xb1;
  m.hClass = NV01_MEMORY_LOCAL_USER;
  m.fd = -1;
  ASSERT_EQ(RawIoctl(s.dev, NV_ESC_RM_ALLOC_MEMORY, &m, sizeof(m)).ret, 0);
  const uint64_t made = ReadNvsimParam("local_physical_allocs") - before;
  std::printf("admin heap query: status 0x%x, whole-FB handles made %llu\n", m.status,
              static_cast<unsigned long long>(made));
  EXPECT_EQ(made, 0u) << "a tenant with CAP_SYS_ADMIN got a handle on all of video memory";
  if (m.status == NV_OK) {
    EXPECT_EQ(m.limit + 1, 64 * kMiB) << "the heap query still answers, with the slot's view";
  }
  // The caller keeps its capability (the slot is destroyed over netlink, which needs it).
  EXPECT_TRUE(slot.Get().id == slot.id());
}

// F6: UVM_MIGRATE, UVM_MIGRATE_RANGE_GROUP and UVM_POPULATE_PAGEABLE place memory in video
// memory that no RM call allocates (with HMM, plain malloc memory): under a quota (managed
// policy refuse) they are refused with EPERM and counted, never forwarded (nvsim would answer
// EINVAL: it does not implement them).
TEST(CallPath, UvmMigrationIsRefusedUnderAQuota) {
  ScopedSlot slot(64 * kMiB, "uvm", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  int uvm = OpenUvm(slot);
  ASSERT_GE(uvm, 0) << strerror(errno);
  const unsigned long kMoves[] = {UVM_MIGRATE, UVM_MIGRATE_RANGE_GROUP, UVM_POPULATE_PAGEABLE};
  for (unsigned long cmd : kMoves) {
    uint8_t params[256] = {};
    errno = 0;
    EXPECT_EQ(ioctl(uvm, cmd, params), -1);
    EXPECT_EQ(errno, EPERM) << "UVM ioctl " << cmd << " reached the driver";
  }
  EXPECT_GE(slot.Stat(VGPU_STAT_MANAGED_DENIALS), 3u);
  close(uvm);
  // Without a quota (managed memory allowed uncounted) they go to the driver.
  ScopedSlot free_slot(0, "uvm-free", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(free_slot.ok());
  uvm = OpenUvm(free_slot);
  ASSERT_GE(uvm, 0);
  uint8_t params[256] = {};
  errno = 0;
  EXPECT_EQ(ioctl(uvm, UVM_MIGRATE, params), -1);
  EXPECT_EQ(errno, EINVAL) << "nvsim's answer";
  close(uvm);
}

// F4: the driver looks some files up in the caller's fd table: the fd of REGISTER_FD (and the
// other fd fields) and, for a device allocation, a /dev/nvidiaN of the GPU (docs/nvidia-rm-abi.md
// §9.3). Whatever the module installs there for the call is visible to the caller's other threads,
// and a child forked by one of them during the call inherits it. It must be useless: the children
// try an RM call (a root client allocation) on every major-195 file they inherited and exit 3 when
// one succeeds. The tenant alternates the two kinds of call (a device allocation; REGISTER_FD of a
// fresh /dev/vgpuN file) while a sibling thread forks.
TEST(CallPath, ForkedChildNeverInheritsAUsableDriverFile) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  const int calls = DebianKernel() ? 2000 : 100;
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  pid_t tenant = fork();
  ASSERT_GE(tenant, 0);
  if (tenant == 0) {
    Session s;
    if (!s.Open(slot.ctl(), slot.dev()).empty()) _exit(2);
    std::atomic<bool> stop{false};
    std::atomic<int> held{0}, usable{0}, forks{0};
    std::thread forker([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        pid_t c = fork();
        if (c == 0) {
          int found = 0;
          for (int fd = 0; fd < 64; ++fd) {
            struct stat st {};
            if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != 195) continue;
            found = 1;
            uint32_t client = 0;
            if (AllocClient(fd, &client) == NV_OK) _exit(3);
          }
          _exit(found ? 4 : 0);
        }
        if (c < 0) continue;
        int st = 0;
        waitpid(c, &st, 0);
        forks++;
        if (WIFEXITED(st) && WEXITSTATUS(st) >= 3) held++;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 3) usable++;
      }
    });
    for (int i = 0; i < calls && usable == 0; ++i) {
      if (i % 2) {
        int dev = open(slot.dev().c_str(), O_RDWR | O_CLOEXEC);
        if (dev < 0) _exit(5);
        nv_ioctl_register_fd r{s.ctl};
        if (RawIoctl(dev, NV_ESC_REGISTER_FD, &r, sizeof(r)).ret) _exit(5);
        close(dev);
        continue;
      }
      uint32_t h = 0xd1000000 + i;
      nv0080_alloc_params dp{};
      if (Alloc(s.ctl, s.client, s.client, &h, NV01_DEVICE_0, &dp) == NV_OK)
        Free(s.ctl, s.client, s.client, h);
    }
    stop = true;
    forker.join();
    std::printf(
        "fork during device allocations and REGISTER_FD: %d forks, %d children held a "
        "major-195 file, %d could allocate an RM client on it\n",
        forks.load(), held.load(), usable.load());
    std::fflush(stdout);
    _exit(usable ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(tenant, &status, 0), tenant);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status
      << " (exit 3: a forked child made an RM call on an inherited driver file; 5: REGISTER_FD "
         "failed)";
}

// F4, nvidia-uvm: UVM_MM_INITIALIZE's uvmFd is looked up with an f_op test (uvm.c:49-75, modelled
// by nvsim), so the module runs that call from its kernel thread with the real file in that
// thread's fd table: the call works through the proxy (nvsim fget()s the file in the kernel
// thread's table and copies the parameters through the caller's mm), and a sibling thread looking
// for a file of nvidia-uvm's device among the numbers a temporary fd would take finds none, or
// (before the kernel thread, with a decoy there) one that is inert once the call ended. A use
// during the call: NoSiblingReachesNvidiaUvmDuringMmInitialize.
TEST(CallPath, UvmMmInitializeWorksAndACopyOfItsFdIsInert) {
  ScopedSlot slot(64 * kMiB, "uvm", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const std::string uvm_path = "/dev/vgpu-uvm" + std::to_string(slot.id());
  struct stat real_uvm {};
  ASSERT_EQ(stat("/dev/nvidia-uvm", &real_uvm), 0) << strerror(errno);
  const int calls = DebianKernel() ? 2000 : 100;
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int va = OpenUvm(slot);
    if (va < 0) _exit(2);
    int next = open("/dev/null", O_RDONLY);  // the mm file's number; the decoy's is next + 1
    close(next);
    std::atomic<bool> stop{false};
    std::atomic<int> got{-1};
    std::thread thief([&] {
      for (int n = 0; !stop.load(std::memory_order_relaxed); n ^= 1) {
        int d = fcntl(next + n, F_DUPFD_CLOEXEC, 200);
        if (d < 0) continue;
        struct stat st {};
        if (fstat(d, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == real_uvm.st_rdev) {
          got = d;
          return;
        }
        close(d);
      }
    });
    int failed = 0;
    for (int i = 0; i < calls && got < 0; ++i) {
      const int r = MmInitializeOnce(uvm_path, va);
      if (r < 0) _exit(5);
      failed += r == 0;
    }
    stop = true;
    thief.join();
    if (failed) {
      std::printf("UVM_MM_INITIALIZE through the proxy failed %d times\n", failed);
      _exit(4);
    }
    if (got < 0) _exit(0);
    uvm_initialize_params ip{};
    errno = 0;
    if (ioctl(got, UVM_INITIALIZE, &ip) == 0 || errno != EPERM) _exit(3);
    _exit(6);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  const int rc = WEXITSTATUS(status);
  EXPECT_TRUE(rc == 0 || rc == 6)
      << rc << ": 3: an ioctl on the copy did not fail with EPERM; 4: UVM_MM_INITIALIZE failed "
      << "through the proxy; 2/5: a UVM file did not open";
  std::printf("UVM_MM_INITIALIZE copy race: %s\n",
              rc == 6 ? "a copy of the uvmFd decoy was made, and it was inert after the call"
                      : "the window was not caught");
  std::fflush(stdout);
}

// F4, nvidia-uvm: while UVM_MM_INITIALIZE runs, no file in the caller's fd table may carry
// nvidia-uvm's file operations: a sibling thread's ioctl on one reaches nvidia-uvm on the caller's
// own va space, unfiltered. The sibling calls UVM_MIGRATE (refused under a quota, F6) on the
// numbers a temporary fd of the call takes (the lowest free ones); nvsim counts every UVM_MIGRATE
// it receives, and its test hook uvm_mm_initialize_delay_us holds each MM_INITIALIZE open for
// 2 ms after its fget, so the sibling's calls land inside the call for certain.
TEST(CallPath, NoSiblingReachesNvidiaUvmDuringMmInitialize) {
  ScopedSlot slot(64 * kMiB, "uvm", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  const std::string uvm_path = "/dev/vgpu-uvm" + std::to_string(slot.id());
  const int calls = DebianKernel() ? 200 : 20;
  const uint64_t before = ReadNvsimParam("uvm_migrate_calls");
  ASSERT_TRUE(WriteNvsimParam("uvm_mm_initialize_delay_us", 2000));
  std::fflush(stdout);  // a child that flushes must not print the parent's buffer again
  pid_t child = fork();
  if (child == 0) {
    int va = OpenUvm(slot);
    if (va < 0) _exit(2);
    int next = open("/dev/null", O_RDONLY);  // the mm file's number; the call's fds follow
    close(next);
    std::atomic<bool> stop{false};
    std::atomic<long> tries{0}, on_a_file{0};
    std::thread sibling([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (int fd = next + 1; fd <= next + 2; ++fd) {
          uint8_t params[256] = {};
          tries++;
          if (ioctl(fd, UVM_MIGRATE, params) == 0 || errno != EBADF) on_a_file++;
        }
      }
    });
    int failed = 0;
    for (int i = 0; i < calls; ++i) {
      const int r = MmInitializeOnce(uvm_path, va);
      if (r < 0) _exit(5);
      failed += r == 0;
    }
    stop = true;
    sibling.join();
    std::printf("  %d UVM_MM_INITIALIZE (%d failed); sibling: %ld calls, %ld found a file\n", calls,
                failed, tries.load(), on_a_file.load());
    std::fflush(stdout);
    _exit(failed ? 4 : 0);
  }
  ASSERT_GE(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  WriteNvsimParam("uvm_mm_initialize_delay_us", 0);
  const uint64_t reached = ReadNvsimParam("uvm_migrate_calls") - before;
  std::printf(
      "UVM_MM_INITIALIZE with a sibling on its fds: %llu sibling calls reached nvidia-uvm\n",
      static_cast<unsigned long long>(reached));
  std::fflush(stdout);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << status << ": 4: UVM_MM_INITIALIZE failed through the proxy; 2/5: a UVM file did not open";
  EXPECT_EQ(reached, 0u) << "a sibling thread reached nvidia-uvm through a file of the call";
}

// F11.4: GPU accounting names every process that used the GPU, other tenants' included, with its
// utilisation and memory (NV0000 GPUACCT_GET_ACCOUNTING_PIDS, GET_PROC_ACCOUNTING_INFO), and its
// SET/CLEAR controls change node-wide state. They must not reach the driver from a tenant; the
// accounting state itself (nvidia-smi -q) still does.
TEST(CallPath, GpuAccountingOfOtherProcessesIsNotReadable) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  struct {
    uint32_t cmd;
    const char* name;
  } const kAcct[] = {{0xb01, "SET_ACCOUNTING_STATE"},
                     {0xb03, "GET_PROC_ACCOUNTING_INFO"},
                     {0xb04, "GET_ACCOUNTING_PIDS"},
                     {0xb05, "CLEAR_ACCOUNTING_DATA"}};
  std::vector<uint8_t> params(16384);
  int reached = 0;
  for (const auto& c : kAcct) {
    std::fill(params.begin(), params.end(), 0);
    const int64_t st = Control(s.ctl, s.client, s.client, c.cmd, params.data(), 16016);
    std::printf("  GPUACCT %s: status 0x%llx\n", c.name, static_cast<unsigned long long>(st));
    if (st != NV_ERR_INSUFFICIENT_PERMISSIONS) ++reached;
    EXPECT_EQ(st, NV_ERR_INSUFFICIENT_PERMISSIONS) << c.name << " reached the driver";
  }
  std::printf("gpu accounting: %d of 4 controls reached the driver\n", reached);
  // GET_ACCOUNTING_STATE shows only whether accounting is on: still the driver's answer.
  EXPECT_NE(Control(s.ctl, s.client, s.client, 0xb02, params.data(), 8),
            NV_ERR_INSUFFICIENT_PERMISSIONS);
}

// F11.4: the slot attributes that show other tenants' pids and usage are root-only.
TEST(CallPath, SlotPidsAndUsageAreNotWorldReadable) {
  ScopedSlot slot(64 * kMiB, "private");
  ASSERT_TRUE(slot.ok());
  const std::string dir = "/sys/class/vgpu/vgpuctl" + std::to_string(slot.id()) + "/";
  static const char* const kPrivate[] = {"pids", "name", "open_files", "stats/mem_charged",
                                         "stats/ioctls"};
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) _exit(2);
    int readable = 0;
    for (const char* f : kPrivate) {
      int fd = open((dir + f).c_str(), O_RDONLY);
      if (fd >= 0) {
        std::printf("  %s readable by uid 65534\n", f);
        readable++;
        close(fd);
      }
    }
    auto nl = vgpu::kmod::Client::Open();
    if (nl.ok() && nl.value()->GetSlot(slot.id()).ok()) {
      std::printf("  netlink SLOT_GET answered uid 65534\n");
      readable++;
    }
    std::fflush(stdout);
    _exit(readable ? 3 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // They exist, and root still reads them.
  for (const char* f : kPrivate) EXPECT_TRUE(std::ifstream(dir + f).good()) << f;
}

}  // namespace
}  // namespace vgpu_test

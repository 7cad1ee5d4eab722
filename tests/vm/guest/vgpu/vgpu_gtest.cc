// vgpu.ko in the guest, in front of nvsim.ko (the simulated driver that keeps nvidia.ko's
// contract, docs/nvidia-rm-abi.md §9): control plane, forwarding, enforcement.
// Hostile input is in parts/vgpu_hostile.cc (same program).
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <fstream>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

using vgpu::StatusCode;

TEST(Control, DriverIsBound) {
  auto nl = Netlink();
  ASSERT_TRUE(nl);
  auto d = nl->GetDriver();
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->bound);
  EXPECT_EQ(d->ctl_path, "/dev/nvidiactl");
}

TEST(Control, SlotNodesExistAndAreNeverMajor195) {
  ScopedSlot slot(0);
  ASSERT_TRUE(slot.ok());
  unsigned maj = 0;
  ASSERT_TRUE(IsChar(slot.ctl(), &maj)) << slot.ctl();
  EXPECT_NE(maj, 195u);
  ASSERT_TRUE(IsChar(slot.dev(), &maj)) << slot.dev();
  EXPECT_NE(maj, 195u);
  // No UVM node unless asked for.
  EXPECT_NE(access(("/dev/vgpu-uvm" + std::to_string(slot.id())).c_str(), F_OK), 0);
  // The counters are also under sysfs.
  std::ifstream q("/sys/class/vgpu/vgpuctl" + std::to_string(slot.id()) + "/slot_id");
  uint32_t id = ~0u;
  q >> id;
  EXPECT_EQ(id, slot.id());
}

TEST(Control, RequestsAreValidatedStrictly) {
  auto nl = Netlink();
  vgpu::kmod::SlotSpec spec;
  spec.gpu = 0;
  spec.config.compute_share = 101;  // range 1..100
  auto s = nl->CreateSlot(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  spec.config.compute_share.reset();
  spec.flags = 0x80;  // not in __VGPU_SLOT_F_ALL
  s = nl->CreateSlot(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  spec.flags = 0;
  spec.gpu = 7;  // nvsim has one GPU: /dev/nvidia7 does not exist
  s = nl->CreateSlot(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("real driver node missing"), std::string::npos)
      << s.status().ToString();
  EXPECT_EQ(nl->ListSlots()->size(), 0u) << "failed creations leave nothing behind";
  EXPECT_EQ(nl->GetSlot(63).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(nl->DestroySlot(63, 0).code(), StatusCode::kNotFound);
}

TEST(Control, SetChangesQuotaAndListSeesIt) {
  ScopedSlot slot(64 * kMiB, "set-me");
  ASSERT_TRUE(slot.ok());
  vgpu::kmod::SlotConfig cfg;
  cfg.mem_quota = 32 * kMiB;
  cfg.name = "renamed";
  auto s = slot.nl().UpdateSlot(slot.id(), cfg);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->mem_quota, 32 * kMiB);
  auto all = slot.nl().ListSlots();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  bool seen = false;
  for (const auto& x : *all) seen |= x.id == slot.id() && x.name == "renamed";
  EXPECT_TRUE(seen);
}

// Drops to uid/gid 65534 without capabilities, then tries every mutating command.
TEST(Control, UnprivilegedCannotCreateOrChangeSlots) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgid(65534) || setuid(65534)) _exit(90);
    auto c = vgpu::kmod::Client::Open();
    if (!c.ok()) _exit(91);
    vgpu::kmod::SlotSpec spec;
    spec.gpu = 0;
    int bad = 0;
    if ((*c)->CreateSlot(spec).status().code() != StatusCode::kPermissionDenied) bad |= 1;
    vgpu::kmod::SlotConfig cfg;
    cfg.mem_quota = 1ull << 40;
    if ((*c)->UpdateSlot(slot.id(), cfg).status().code() != StatusCode::kPermissionDenied) bad |= 2;
    if ((*c)->DestroySlot(slot.id(), VGPU_DEL_F_DEFER).code() != StatusCode::kPermissionDenied)
      bad |= 4;
    if ((*c)->Bind().code() != StatusCode::kPermissionDenied) bad |= 8;
    // Reads show every tenant's pids and usage: admin-only too (issue 17, F11.4).
    if ((*c)->GetSlot(slot.id()).status().code() != StatusCode::kPermissionDenied ||
        (*c)->ListSlots().status().code() != StatusCode::kPermissionDenied)
      bad |= 16;
    _exit(bad);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "bit 1 create, 2 set, 4 destroy, 8 bind, 16 reads";
  EXPECT_EQ(slot.Get().mem_quota, 64 * kMiB);
}

TEST(Forwarding, SessionThroughProxyNodes) {
  ScopedSlot slot(0);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  // With no quota the view is the GPU's: nvsim's heap (1024 MiB).
  EXPECT_EQ(s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE), 1024u * 1024u);
  auto info = slot.Get();
  EXPECT_EQ(info.open_files, 2u);
  ASSERT_EQ(info.pids.size(), 1u);
  EXPECT_EQ(info.pids[0], static_cast<uint32_t>(getpid()));
  EXPECT_GE(info.stats[VGPU_STAT_IOCTLS], 4u);
}

// §9.3.2: NV01_DEVICE_0 needs a real /dev/nvidiaN in the caller's table; the proxy provides
// the one behind the caller's own /dev/vgpuN, and nothing when the caller has none.
TEST(Forwarding, DeviceAllocNeedsTheCallersOwnGpuFile) {
  ScopedSlot slot(0);
  ASSERT_TRUE(slot.ok());
  int ctl = open(slot.ctl().c_str(), O_RDWR);
  ASSERT_GE(ctl, 0);
  uint32_t client = 0, device = 0xd0000001;
  ASSERT_EQ(AllocClient(ctl, &client), NV_OK);
  nv0080_alloc_params dp{};
  EXPECT_EQ(Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp),
            NV_ERR_INSUFFICIENT_PERMISSIONS);
  int dev = open(slot.dev().c_str(), O_RDWR);
  ASSERT_GE(dev, 0);
  EXPECT_EQ(Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp), NV_OK);
  close(dev);
  close(ctl);
}

// §9.2: REGISTER_FD takes a ctl fd: the proxy translates its own ctl file, refuses others.
TEST(Forwarding, RegisterFdTranslatesOnlyThisSlotsFiles) {
  ScopedSlot a(0, "a"), b(0, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  int actl = open(a.ctl().c_str(), O_RDWR), adev = open(a.dev().c_str(), O_RDWR);
  int bctl = open(b.ctl().c_str(), O_RDWR), null = open("/dev/null", O_RDWR);
  ASSERT_TRUE(actl >= 0 && adev >= 0 && bctl >= 0 && null >= 0);
  nv_ioctl_register_fd r{bctl};
  Rc rc = RawIoctl(adev, NV_ESC_REGISTER_FD, &r, sizeof(r));
  EXPECT_EQ(rc.err, EPERM) << "another slot's ctl file";
  EXPECT_EQ(r.ctl_fd, bctl) << "the field is left as the caller wrote it";
  r.ctl_fd = null;
  EXPECT_EQ(RawIoctl(adev, NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL) << "/dev/null";
  r.ctl_fd = 1000;
  EXPECT_EQ(RawIoctl(adev, NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL) << "closed fd";
  r.ctl_fd = actl;
  rc = RawIoctl(adev, NV_ESC_REGISTER_FD, &r, sizeof(r));
  EXPECT_EQ(rc.ret, 0) << strerror(rc.err);
  EXPECT_EQ(r.ctl_fd, actl) << "the temporary fd number is restored";
  EXPECT_GE(a.Stat(VGPU_STAT_FD_REFUSED), 3u);
  close(actl), close(adev), close(bctl), close(null);
}

TEST(Enforcement, QuotaHoldsAndNvsimAgrees) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  uint64_t base = NvsimUsedBytes();
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  EXPECT_EQ(s.Vidmem(0xa1, 32 * kMiB), NV_OK);
  EXPECT_EQ(s.Vidmem(0xa2, 32 * kMiB), NV_OK);
  EXPECT_EQ(s.Vidmem(0xa3, 2 * kMiB), NV_ERR_NO_MEMORY) << "over the 64 MiB quota";
  auto info = slot.Get();
  EXPECT_EQ(info.stats[VGPU_STAT_MEM_CHARGED], 64 * kMiB);
  EXPECT_EQ(info.stats[VGPU_STAT_MEM_DENIALS], 1u);
  EXPECT_EQ(NvsimUsedBytes() - base, 64 * kMiB) << "the driver's view agrees with the charge";
  // The view: total = quota, free = quota - charged (KiB).
  EXPECT_EQ(s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE), 64u * 1024u);
  EXPECT_EQ(s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE), 0u);
  EXPECT_EQ(s.FreeObj(0xa1), NV_OK);
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 32 * kMiB);
  EXPECT_EQ(s.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE), 32u * 1024u);
  EXPECT_EQ(s.Vidmem(0xa3, 2 * kMiB), NV_OK);
  EXPECT_EQ(NvsimUsedBytes() - base, 34 * kMiB);
}

// The memory view on a list longer than a short query's (libcuda and NVML ask 1-5 indices):
// every index it rewrites shows the slot's figures wherever it sits in the list, an index it
// does not rewrite keeps the driver's answer, and entries past fbInfoListSize are not touched.
TEST(Enforcement, TheMemoryViewRewritesEveryIndexOfALongList) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  ASSERT_EQ(s.Vidmem(0xa1, 16 * kMiB), NV_OK);
  ASSERT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 16 * kMiB);
  constexpr uint32_t kTotal = 64u * 1024u, kFree = 48u * 1024u, kUntouched = 0xdeadbeefu;
  const std::pair<uint32_t, uint32_t> want[] = {
      {NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE, 0},  // not rewritten: nvsim answers 0
      {NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE, kTotal},
      {NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE, kTotal},
      {NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE, kTotal},
      {NV2080_CTRL_FB_INFO_INDEX_MAPPABLE_HEAP_SIZE, kTotal},
      {NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE, kTotal},
      {NV2080_CTRL_FB_INFO_INDEX_FB_TAX_SIZE_KB, 0},
      {NV2080_CTRL_FB_INFO_INDEX_HEAP_OFFLINE_SIZE, 0},
      {NV2080_CTRL_FB_INFO_INDEX_BAR1_SIZE, 0},
      {NV2080_CTRL_FB_INFO_INDEX_LARGEST_FREE_REGION_SIZE_KB, kFree},
      {NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE, kFree},
      {NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE, kTotal},
  };
  constexpr uint32_t n = sizeof(want) / sizeof(want[0]);
  nv2080_fb_get_info_v2_params p{};
  p.fbInfoListSize = n;
  for (uint32_t i = 0; i < NV2080_CTRL_FB_INFO_MAX_LIST_SIZE; i++) {
    p.fbInfoList[i].index = i < n ? want[i].first : NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
    p.fbInfoList[i].data = kUntouched;
  }
  const uint64_t views = slot.Stat(VGPU_STAT_VIEWS_REWRITTEN);
  ASSERT_EQ(Control(s.ctl, s.client, s.subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
            NV_OK);
  for (uint32_t i = 0; i < n; i++) {
    EXPECT_EQ(p.fbInfoList[i].index, want[i].first) << "entry " << i;
    EXPECT_EQ(p.fbInfoList[i].data, want[i].second) << "entry " << i;
  }
  EXPECT_EQ(p.fbInfoList[n].data, kUntouched) << "past fbInfoListSize";
  EXPECT_EQ(slot.Stat(VGPU_STAT_VIEWS_REWRITTEN), views + 1);
}

TEST(Enforcement, CloseRefundsWhatTheDriverFrees) {
  ScopedSlot slot(64 * kMiB);
  ASSERT_TRUE(slot.ok());
  uint64_t base = NvsimUsedBytes();
  {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    ASSERT_EQ(s.Vidmem(0xa1, 16 * kMiB), NV_OK);
    EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 16 * kMiB);
  }  // close: the real close frees the client and its memory
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u);
  EXPECT_EQ(NvsimUsedBytes(), base);
  EXPECT_EQ(slot.Get().open_files, 0u);
}

TEST(Isolation, TwoSlotsOnOneGpu) {
  ScopedSlot a(64 * kMiB, "a"), b(32 * kMiB, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  uint64_t base = NvsimUsedBytes();
  Session sa, sb;
  ASSERT_EQ(sa.Open(a.ctl(), a.dev()), "");
  ASSERT_EQ(sb.Open(b.ctl(), b.dev()), "");
  // Each is held to its own quota.
  EXPECT_EQ(sa.Vidmem(0xa1, 48 * kMiB), NV_OK);
  EXPECT_EQ(sb.Vidmem(0xb1, 48 * kMiB), NV_ERR_NO_MEMORY);
  EXPECT_EQ(sb.Vidmem(0xb1, 32 * kMiB), NV_OK);
  EXPECT_EQ(a.Stat(VGPU_STAT_MEM_CHARGED), 48 * kMiB);
  EXPECT_EQ(b.Stat(VGPU_STAT_MEM_CHARGED), 32 * kMiB);
  EXPECT_EQ(NvsimUsedBytes() - base, 80 * kMiB);
  // Each sees only its own memory.
  EXPECT_EQ(sa.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE), 64u * 1024u);
  EXPECT_EQ(sa.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE), 16u * 1024u);
  EXPECT_EQ(sb.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE), 32u * 1024u);
  EXPECT_EQ(sb.Fb(NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE), 0u);
  // Neither can act on the other's client or objects: the client is bound to the other
  // slot's real ctl file (§9.2), whatever the filter decides.
  EXPECT_NE(Free(sb.ctl, sa.client, sa.device, 0xa1), NV_OK);
  EXPECT_NE(Control(sb.ctl, sa.client, sa.subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, nullptr, 0),
            NV_OK);
  nv2080_fb_get_info_v2_params p{};
  p.fbInfoListSize = 1;
  p.fbInfoList[0].index = NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE;
  EXPECT_NE(Control(sb.ctl, sa.client, sa.subdevice, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
            NV_OK);
  EXPECT_EQ(a.Stat(VGPU_STAT_MEM_CHARGED), 48 * kMiB) << "a's memory is untouched";
  // Nor use the other's files: a mapping target or REGISTER_FD naming b's file is refused.
  nv_ioctl_register_fd r{sb.ctl};
  int adev2 = open(a.dev().c_str(), O_RDWR);
  ASSERT_GE(adev2, 0);
  EXPECT_EQ(RawIoctl(adev2, NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EPERM);
  close(adev2);
  // Process lists are per slot.
  EXPECT_EQ(a.Get().pids.size(), 1u);
  EXPECT_EQ(b.Get().pids.size(), 1u);
}

// §9.4: RM_MAP_MEMORY names a fresh file by fd; the proxy hands the driver the real file,
// and mmap of the fresh proxy file is switched to the real file (the VMA shows its path).
TEST(Forwarding, MmapIsSwitchedToTheRealFile) {
  ScopedSlot slot(0);
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  const uint32_t hmem = 0xc1;
  int64_t st = s.Sysmem(hmem, 2 * kMiB);
  if (st != NV_OK) GTEST_SKIP() << "sysmem class 0x3e refused (" << st << ")";
  int fresh = open(slot.ctl().c_str(), O_RDWR);
  ASSERT_GE(fresh, 0);
  nvos33_with_fd m{};
  m.hClient = s.client;
  m.hDevice = s.device;
  m.hMemory = hmem;
  m.length = 4096;
  m.fd = fresh;
  Rc rc = RawIoctl(s.ctl, NV_ESC_RM_MAP_MEMORY, &m, sizeof(m));
  ASSERT_EQ(rc.ret, 0) << strerror(rc.err);
  ASSERT_EQ(m.status, NV_OK);
  EXPECT_EQ(m.fd, fresh) << "fd field restored";
  void* va = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fresh, 0);
  ASSERT_NE(va, MAP_FAILED) << strerror(errno);
  close(fresh);  // libcuda closes at once: the VMA keeps the real file
  static_cast<volatile char*>(va)[0] = 42;
  EXPECT_EQ(static_cast<volatile char*>(va)[0], 42);
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "%lx-", reinterpret_cast<unsigned long>(va));
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line)) {
    if (line.rfind(prefix, 0) == 0) found = line;
  }
  EXPECT_NE(found.find("/dev/nvidiactl"), std::string::npos) << found;
  EXPECT_EQ(munmap(va, 4096), 0);
  EXPECT_GE(slot.Stat(VGPU_STAT_MMAPS), 1u);
}

// §7, §9.3.2: UVM_REGISTER_GPU arrives on the UVM node but needs a real GPU file in the
// caller's table; managed memory (UVM mmap) reaches the driver, charged (parts/vgpu_managed.cc).
TEST(Forwarding, UvmNodeRegisterGpuAndManagedPolicy) {
  ScopedSlot slot(64 * kMiB, "uvm", VGPU_SLOT_F_UVM);
  ASSERT_TRUE(slot.ok());
  std::string uvm_path = "/dev/vgpu-uvm" + std::to_string(slot.id());
  unsigned maj = 0;
  ASSERT_TRUE(IsChar(uvm_path, &maj));
  int uvm = open(uvm_path.c_str(), O_RDWR);
  ASSERT_GE(uvm, 0) << strerror(errno);
  uvm_initialize_params ip{};
  ASSERT_EQ(ioctl(uvm, UVM_INITIALIZE, &ip), 0) << strerror(errno);
  EXPECT_EQ(ip.rmStatus, NV_OK);
  int ctl = open(slot.ctl().c_str(), O_RDWR);
  ASSERT_GE(ctl, 0);
  uvm_register_gpu_params rp{};
  memcpy(rp.gpu_uuid, NVSIM_GPU_UUID_PREFIX, sizeof(NVSIM_GPU_UUID_PREFIX) - 1);
  rp.rmCtrlFd = ctl;
  ASSERT_EQ(ioctl(uvm, UVM_REGISTER_GPU, &rp), 0) << strerror(errno);
  EXPECT_EQ(rp.rmStatus, NV_ERR_INSUFFICIENT_PERMISSIONS) << "no GPU file open yet";
  int dev = open(slot.dev().c_str(), O_RDWR);
  ASSERT_GE(dev, 0);
  rp.rmStatus = 0;
  ASSERT_EQ(ioctl(uvm, UVM_REGISTER_GPU, &rp), 0) << strerror(errno);
  EXPECT_EQ(rp.rmStatus, NV_OK) << "the real file behind our /dev/vgpuN is seen";
  EXPECT_EQ(rp.rmCtrlFd, ctl);
  // Mappings reach the driver: the first (<= 2 MiB) free, a later one charged until the driver
  // answers; nvsim, like uvm_mmap, refuses an offset that is not the address (EINVAL), and the
  // refused mapping's charge is refunded. Charged mappings: parts/vgpu_managed.cc.
  void* va = mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, uvm, 0);
  EXPECT_EQ(va, MAP_FAILED);
  EXPECT_EQ(errno, EINVAL) << "the context mapping went to the driver";
  va = mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, uvm, 0);
  EXPECT_EQ(va, MAP_FAILED);
  EXPECT_EQ(errno, EINVAL) << "a later mapping went to the driver too";
  EXPECT_EQ(slot.Stat(VGPU_STAT_MEM_CHARGED), 0u) << "what the driver refused is refunded";
  EXPECT_EQ(slot.Stat(VGPU_STAT_MANAGED_DENIALS), 0u);
  close(dev), close(ctl), close(uvm);
}

TEST(Forwarding, PollIsForwarded) {
  ScopedSlot slot(0);
  ASSERT_TRUE(slot.ok());
  int dev = open(slot.dev().c_str(), O_RDWR);
  ASSERT_GE(dev, 0);
  pollfd p{dev, POLLIN, 0};
  EXPECT_GE(poll(&p, 1, 0), 0);
  EXPECT_EQ(p.revents & (POLLERR | POLLNVAL), 0);
  close(dev);
}

TEST(Lifetime, DestroyWithOpenFilesIsRefusedOrDeferred) {
  auto nl = Netlink();
  vgpu::kmod::SlotSpec spec;
  spec.gpu = 0;
  spec.config.mem_quota = 64 * kMiB;
  auto s = nl->CreateSlot(spec);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  uint32_t id = s->id;
  uint64_t base = NvsimUsedBytes();
  {
    Session sess;
    ASSERT_EQ(sess.Open("/dev/" + s->node_ctl, "/dev/" + s->node_dev), "");
    ASSERT_EQ(sess.Vidmem(0xa1, 8 * kMiB), NV_OK);
    EXPECT_EQ(nl->DestroySlot(id, 0).code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(nl->DestroySlot(id, VGPU_DEL_F_DEFER).ok());
    EXPECT_NE(access(("/dev/" + s->node_ctl).c_str(), F_OK), 0) << "node removed at once";
    EXPECT_EQ(nl->GetSlot(id).status().code(), StatusCode::kNotFound);
    // Revoked: further calls fail cleanly, close still releases everything.
    EXPECT_EQ(sess.Vidmem(0xa2, 2 * kMiB), -ENODEV);
    void* va = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, sess.dev, 0);
    EXPECT_EQ(va, MAP_FAILED);
    EXPECT_EQ(errno, ENODEV);
  }
  EXPECT_EQ(NvsimUsedBytes(), base) << "the real close freed the slot's memory";
}

TEST(Events, AttachExitAndQuotaDenial) {
  auto nl = Netlink();
  ASSERT_TRUE(nl->SubscribeEvents().ok());
  ScopedSlot slot(4 * kMiB, "ev");
  ASSERT_TRUE(slot.ok());
  {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    EXPECT_EQ(s.Vidmem(0xa1, 8 * kMiB), NV_ERR_NO_MEMORY);
  }
  bool attach = false, denied = false, exit_seen = false;
  for (int i = 0; i < 50 && !(attach && denied && exit_seen); ++i) {
    auto e = nl->NextEvent(1000);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    if (!e->has_value()) break;
    const auto& ev = **e;
    if (ev.slot != slot.id()) continue;
    if (ev.type == VGPU_EVENT_ATTACH) attach = ev.pid == static_cast<uint32_t>(getpid());
    if (ev.type == VGPU_EVENT_QUOTA_DENIED) denied = ev.quota == 4 * kMiB;
    if (ev.type == VGPU_EVENT_EXIT) exit_seen = true;
  }
  EXPECT_TRUE(attach);
  EXPECT_TRUE(denied);
  EXPECT_TRUE(exit_seen);
}

}  // namespace
}  // namespace vgpu_test

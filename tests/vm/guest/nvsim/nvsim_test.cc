// In-guest tests of nvsim.ko: the contract of docs/nvidia-rm-abi.md §9 that vgpu.ko will be
// tested against. guest.sh loads nvsim with num_gpus=2 vidmem_mib=1024 reserved_mib=64.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nvsim_rm.h"

using namespace nvsim_test;

namespace {

constexpr uint64_t kHeap = 1024 * kMiB;
constexpr uint64_t kReserved = 64 * kMiB;

class Fd {
 public:
  explicit Fd(const char* path) : fd_(open(path, O_RDWR)) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// A client with device + subdevice on GPU 0, created through ctl_ while /dev/nvidia0 is open.
class NvsimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GE(ctl_.get(), 0) << strerror(errno);
    ASSERT_GE(dev0_.get(), 0) << strerror(errno);
    ASSERT_EQ(AllocClient(ctl_.get(), &client_), NV_OK);
    nv0080_alloc_params dp{};
    ASSERT_EQ(Alloc(ctl_.get(), client_, client_, &device_, NV01_DEVICE_0, &dp), NV_OK);
    uint32_t sub_id = 0;
    ASSERT_EQ(Alloc(ctl_.get(), client_, device_, &subdevice_, NV20_SUBDEVICE_0, &sub_id), NV_OK);
  }
  uint32_t HeapFreeKiB() {
    return FbInfo(ctl_.get(), client_, subdevice_, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE);
  }
  uint32_t NewTsg(uint32_t timeslice_us, int channels) {
    nv_channel_group_alloc_params tp{};
    tp.engineType = 1;
    uint32_t tsg = 0;
    EXPECT_EQ(Alloc(ctl_.get(), client_, device_, &tsg, KEPLER_CHANNEL_GROUP_A, &tp), NV_OK);
    for (int i = 0; i < channels; ++i) {
      uint32_t ch = 0;
      EXPECT_EQ(Alloc(ctl_.get(), client_, tsg, &ch, 0xc86f), NV_OK);
      channels_.push_back(ch);
    }
    nva06c_timeslice_params ts{timeslice_us};
    EXPECT_EQ(Control(ctl_.get(), client_, tsg, NVA06C_CTRL_CMD_SET_TIMESLICE, &ts, sizeof(ts)),
              NV_OK);
    return tsg;
  }
  nvsim_tsg_runtime_params Runtime(uint32_t tsg) {
    nvsim_tsg_runtime_params rt{};
    EXPECT_EQ(Control(ctl_.get(), client_, tsg, NVSIM_CTRL_CMD_TSG_GET_RUNTIME, &rt, sizeof(rt)),
              NV_OK);
    return rt;
  }
  void Schedule(uint32_t tsg, bool on) {
    nva06c_gpfifo_schedule_params sp{on, 0, 0};
    ASSERT_EQ(Control(ctl_.get(), client_, tsg, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sp, 3), NV_OK);
  }

  Fd ctl_{"/dev/nvidiactl"};
  Fd dev0_{"/dev/nvidia0"};
  uint32_t client_ = 0, device_ = 0, subdevice_ = 0;
  std::vector<uint32_t> channels_;
};

TEST(NvsimNodes, MajorMinorAndNames) {
  struct stat st {};
  ASSERT_EQ(stat("/dev/nvidiactl", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(major(st.st_rdev), 195u);
  EXPECT_EQ(minor(st.st_rdev), 255u);
  for (unsigned i = 0; i < 2; ++i) {
    std::string path = "/dev/nvidia" + std::to_string(i);
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(major(st.st_rdev), 195u);
    EXPECT_EQ(minor(st.st_rdev), i);
  }
  EXPECT_NE(stat("/dev/nvidia2", &st), 0);
}

TEST(NvsimEscapes, CheckVersionStr) {
  Fd ctl("/dev/nvidiactl");
  nv_ioctl_rm_api_version v{};
  v.cmd = NV_RM_API_VERSION_CMD_QUERY;
  ASSERT_EQ(RawIoctl(ctl.get(), NV_ESC_CHECK_VERSION_STR, &v, sizeof(v)).ret, 0);
  EXPECT_STREQ(v.versionString, "580.159.04");
  v = {};
  strcpy(v.versionString, "580.159.04");
  ASSERT_EQ(RawIoctl(ctl.get(), NV_ESC_CHECK_VERSION_STR, &v, sizeof(v)).ret, 0);
  EXPECT_EQ(v.reply, unsigned{NV_RM_API_VERSION_REPLY_RECOGNIZED});
  v = {};
  strcpy(v.versionString, "535.0");
  Rc rc = RawIoctl(ctl.get(), NV_ESC_CHECK_VERSION_STR, &v, sizeof(v));
  EXPECT_EQ(rc.ret, -1);
  EXPECT_EQ(rc.err, EINVAL);
  EXPECT_EQ(v.reply, unsigned{NV_RM_API_VERSION_REPLY_UNRECOGNIZED});
  EXPECT_STREQ(v.versionString, "580.159.04");
}

TEST(NvsimEscapes, CardInfo) {
  Fd ctl("/dev/nvidiactl");
  Fd dev("/dev/nvidia0");
  nv_ioctl_card_info ci[32]{};
  ASSERT_EQ(RawIoctl(ctl.get(), NV_ESC_CARD_INFO, ci, sizeof(ci)).ret, 0);
  EXPECT_EQ(ci[0].valid, 1);
  EXPECT_EQ(ci[1].valid, 1);
  EXPECT_EQ(ci[2].valid, 0);
  EXPECT_EQ(ci[1].minor_number, 1u);
  EXPECT_EQ(ci[0].pci_info.vendor_id, 0x10de);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_CARD_INFO, ci, 100).err, EINVAL);
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_CARD_INFO, ci, sizeof(ci)).err, EINVAL);
}

// The driver looks only at nr and size (§1.3): magic 'X' and _IOC_NONE work.
TEST(NvsimEscapes, DecodesOnlyNrAndSize) {
  Fd ctl("/dev/nvidiactl");
  nvos64 p{};
  p.hClass = NV01_ROOT_CLIENT;
  ASSERT_EQ(ioctl(ctl.get(), _IOC(_IOC_NONE, 'X', NV_ESC_RM_ALLOC, sizeof(p)), &p), 0);
  EXPECT_EQ(p.status, 0u);
  EXPECT_NE(p.hObjectNew, 0u);
}

TEST(NvsimEscapes, XferUnwrapsAndIsBounded) {
  Fd ctl("/dev/nvidiactl");
  nvos64 p{};
  p.hClass = NV01_ROOT_CLIENT;
  nv_ioctl_xfer x{NV_ESC_RM_ALLOC, sizeof(p), Ptr(&p)};
  ASSERT_EQ(RawIoctl(ctl.get(), NV_ESC_IOCTL_XFER_CMD, &x, sizeof(x)).ret, 0);
  EXPECT_EQ(p.status, 0u);
  EXPECT_NE(p.hObjectNew, 0u);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_IOCTL_XFER_CMD, &x, 24).err, EINVAL);  // outer size != 16
  nv_ioctl_xfer nested{NV_ESC_IOCTL_XFER_CMD, sizeof(x), Ptr(&x)};
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_IOCTL_XFER_CMD, &nested, sizeof(nested)).err, EINVAL);
  nv_ioctl_xfer big{NV_ESC_RM_ALLOC, NV_ABSOLUTE_MAX_IOCTL_SIZE + 1, Ptr(&p)};
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_IOCTL_XFER_CMD, &big, sizeof(big)).err, EINVAL);
  nv_ioctl_xfer bad{NV_ESC_RM_ALLOC, sizeof(p), 16};
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_IOCTL_XFER_CMD, &bad, sizeof(bad)).err, EFAULT);
}

TEST(NvsimEscapes, BadSizesAndFilesAreEinval) {
  Fd ctl("/dev/nvidiactl");
  Fd dev("/dev/nvidia0");
  char buf[64] = {};
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_CONTROL, buf, 31).err, EINVAL);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_FREE, buf, 17).err, EINVAL);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_ALLOC, buf, 40).err, EINVAL);
  EXPECT_EQ(RawIoctl(ctl.get(), 0x99, buf, 8).err, EINVAL);                     // unknown escape
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_RM_CONTROL, buf, 32).err, EINVAL);       // ctl only
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_ALLOC_MEMORY, buf, 56).err, EINVAL);  // dev only
}

TEST(NvsimEscapes, BadPointersAreEfault) {
  Fd ctl("/dev/nvidiactl");
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_CONTROL, reinterpret_cast<void*>(8), 32).err, EFAULT);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_ALLOC, nullptr, 48).err, EFAULT);
  void* ro = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(ro, MAP_FAILED);
  EXPECT_EQ(RawIoctl(ctl.get(), NV_ESC_RM_ALLOC, ro, 48).err, EFAULT);  // copy back faults
  munmap(ro, 4096);
}

// §9.2: a client is bound to the ctl file that created it; another file sees 0x23.
TEST_F(NvsimTest, ClientIsBoundToItsCtlFile) {
  Fd other("/dev/nvidiactl");
  EXPECT_EQ(FbInfo(ctl_.get(), client_, subdevice_, NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE),
            kHeap >> 10);
  nv2080_fb_get_info_v2_params p{};
  EXPECT_EQ(
      Control(other.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
      NV_ERR_INVALID_CLIENT);
  EXPECT_EQ(Free(other.get(), client_, client_, device_), NV_ERR_INVALID_CLIENT);
  uint32_t h = 0;
  EXPECT_EQ(Alloc(other.get(), client_, device_, &h, NV20_SUBDEVICE_0), NV_ERR_INVALID_CLIENT);
  EXPECT_EQ(
      Control(ctl_.get(), 0xdeadbeef, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
      NV_ERR_INVALID_CLIENT);
}

TEST_F(NvsimTest, CloseFreesClientsAndTheirMemory) {
  const uint32_t before = HeapFreeKiB();
  {
    Fd ctl2("/dev/nvidiactl");
    uint32_t c2 = 0, d2 = 0, m2 = 0;
    ASSERT_EQ(AllocClient(ctl2.get(), &c2), NV_OK);
    nv0080_alloc_params dp{};
    ASSERT_EQ(Alloc(ctl2.get(), c2, c2, &d2, NV01_DEVICE_0, &dp), NV_OK);
    uint64_t size = 100 * kMiB;
    ASSERT_EQ(AllocVidmem(ctl2.get(), c2, d2, &m2, &size), NV_OK);
    EXPECT_EQ(HeapFreeKiB(), before - (100 * kMiB >> 10));
  }  // the close is the only free (libcuda relies on it, §9.1)
  EXPECT_EQ(HeapFreeKiB(), before);
}

// §9.3.2: NV01_DEVICE_0 needs a GPU file in the caller's fd table.
TEST_F(NvsimTest, DeviceAllocNeedsGpuFileInFdTable) {
  nv0080_alloc_params dp{};
  dp.deviceId = 1;
  uint32_t d1 = 0;
  EXPECT_EQ(Alloc(ctl_.get(), client_, client_, &d1, NV01_DEVICE_0, &dp),
            NV_ERR_INSUFFICIENT_PERMISSIONS);
  {
    Fd dev1("/dev/nvidia1");
    d1 = 0;
    EXPECT_EQ(Alloc(ctl_.get(), client_, client_, &d1, NV01_DEVICE_0, &dp), NV_OK);
  }
  uint32_t d1b = 0;
  EXPECT_EQ(Alloc(ctl_.get(), client_, client_, &d1b, NV01_DEVICE_0, &dp),
            NV_ERR_INSUFFICIENT_PERMISSIONS);
  uint32_t sub = 0, sub_id = 0;
  EXPECT_EQ(Alloc(ctl_.get(), client_, d1, &sub, NV20_SUBDEVICE_0, &sub_id), NV_OK)
      << "existing objects keep working (T15)";
  dp.deviceId = 7;
  EXPECT_EQ(Alloc(ctl_.get(), client_, client_, &d1b, NV01_DEVICE_0, &dp), NV_ERR_INVALID_ARGUMENT);
}

// §9.2 REGISTER_FD refusals (T6) and what registration enables (T12).
TEST_F(NvsimTest, RegisterFd) {
  Fd dev("/dev/nvidia0");
  Fd null("/dev/null");
  nvos02_with_fd am{};
  am.hRoot = client_;
  am.hObjectParent = device_;
  am.hClass = NV01_MEMORY_SYSTEM_OS_DESCRIPTOR;
  am.limit = 4095;
  am.fd = -1;
  ASSERT_EQ(RawIoctl(dev.get(), NV_ESC_RM_ALLOC_MEMORY, &am, sizeof(am)).ret, 0);
  EXPECT_EQ(am.status, unsigned{NV_ERR_INVALID_CLIENT}) << "unregistered dev file";

  nv_ioctl_register_fd r{null.get()};
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL);
  r.ctl_fd = dev0_.get();
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL);
  r.ctl_fd = 987;
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL);
  r.ctl_fd = ctl_.get();
  EXPECT_EQ(RawIoctl(ctl_.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL) << "self-link";
  ASSERT_EQ(RawIoctl(dev.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).ret, 0);
  EXPECT_EQ(RawIoctl(dev.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).err, EINVAL) << "twice";

  am.status = 0xff;
  ASSERT_EQ(RawIoctl(dev.get(), NV_ESC_RM_ALLOC_MEMORY, &am, sizeof(am)).ret, 0);
  EXPECT_EQ(am.status, unsigned{NV_OK}) << "registered dev file acts for the ctl's clients";

  // A chain: ctl2 registered with ctl_, then a dev file registering with ctl2.
  Fd ctl2("/dev/nvidiactl");
  Fd dev2("/dev/nvidia0");
  ASSERT_EQ(RawIoctl(ctl2.get(), NV_ESC_REGISTER_FD, &r, sizeof(r)).ret, 0);
  nv_ioctl_register_fd r2{ctl2.get()};
  EXPECT_EQ(RawIoctl(dev2.get(), NV_ESC_REGISTER_FD, &r2, sizeof(r2)).err, EINVAL) << "chain";
}

TEST_F(NvsimTest, VidmemRoundsAndRunsOut) {
  const uint32_t free0 = HeapFreeKiB();
  ASSERT_EQ(free0, kHeap >> 10);
  uint32_t small = 0, big = 0, too_big = 0, virt = 0;
  uint64_t size = 4096;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &small, &size), NV_OK);
  EXPECT_EQ(size, 2 * kMiB) << "class 0x40 rounds up to 2 MiB";
  size = 900 * kMiB;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &big, &size), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - (902 * kMiB >> 10));
  size = 200 * kMiB;
  EXPECT_EQ(AllocVidmem(ctl_.get(), client_, device_, &too_big, &size), NV_ERR_NO_MEMORY);
  EXPECT_EQ(HeapFreeKiB(), free0 - (902 * kMiB >> 10)) << "a refused allocation takes nothing";
  nv_memory_allocation_params vp{};
  vp.size = 64ull << 30;
  vp.flags = 0x80000 | NVOS32_ALLOC_FLAGS_LAZY;
  EXPECT_EQ(Alloc(ctl_.get(), client_, device_, &virt, NV50_MEMORY_VIRTUAL, &vp), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - (902 * kMiB >> 10)) << "a lazy VA range consumes nothing";
  // An eager one gets the page tables of its whole extent at once (virtmemConstruct_IMPL, 580;
  // 273.0625 MiB per 128 GiB on the H200): 136.5625 MiB for 64 GiB, past the 122 MiB left.
  vp.flags = 0x80000;
  uint32_t eager = 0;
  EXPECT_EQ(Alloc(ctl_.get(), client_, device_, &eager, NV50_MEMORY_VIRTUAL, &vp),
            NV_ERR_NO_MEMORY);
  EXPECT_EQ(HeapFreeKiB(), free0 - (902 * kMiB >> 10)) << "a refused range takes nothing";
  EXPECT_EQ(Free(ctl_.get(), client_, device_, big), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - (2 * kMiB >> 10));
  vp.size = 8ull << 30;  // 17.125 MiB of page tables, until its free
  eager = 0x5c00e000;
  ASSERT_EQ(Alloc(ctl_.get(), client_, device_, &eager, NV50_MEMORY_VIRTUAL, &vp), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - ((2 * kMiB + 17 * kMiB + kMiB / 8) >> 10));
  EXPECT_EQ(Free(ctl_.get(), client_, device_, eager), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - (2 * kMiB >> 10));
  // A second free finds nothing and, like the driver (RS_COMPATABILITY_MODE), succeeds.
  EXPECT_EQ(Free(ctl_.get(), client_, device_, big), NV_OK);
  EXPECT_EQ(HeapFreeKiB(), free0 - (2 * kMiB >> 10)) << "and frees nothing";
  size = 0;
  EXPECT_EQ(AllocVidmem(ctl_.get(), client_, device_, &too_big, &size), NV_ERR_INVALID_ARGUMENT);
  uint32_t dup = small;
  size = 2 * kMiB;
  EXPECT_EQ(AllocVidmem(ctl_.get(), client_, device_, &dup, &size), NV_ERR_INSERT_DUPLICATE_NAME);
}

TEST_F(NvsimTest, FbInfoV2AndV1) {
  uint64_t size = 10 * kMiB;
  uint32_t mem = 0;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &mem, &size), NV_OK);
  nv2080_fb_get_info_v2_params p{};
  const uint32_t idx[] = {0x08, 0x09, 0x10, 0x16, 0x20};
  p.fbInfoListSize = 5;
  for (int i = 0; i < 5; ++i) p.fbInfoList[i].index = idx[i];
  ASSERT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
            NV_OK);
  EXPECT_EQ(p.fbInfoList[0].data, (kHeap + kReserved) >> 10);
  EXPECT_EQ(p.fbInfoList[1].data, kHeap >> 10);
  EXPECT_EQ(p.fbInfoList[2].data, 0u);
  EXPECT_EQ(p.fbInfoList[3].data, (kHeap - 10 * kMiB) >> 10);
  EXPECT_EQ(p.fbInfoList[4].data, (kHeap + kReserved) >> 10);
  EXPECT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, 1024),
            NV_ERR_INVALID_ARGUMENT)
      << "paramsSize must match exactly (T7)";
  p.fbInfoListSize = 129;
  EXPECT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
            NV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Control(ctl_.get(), client_, device_, NV2080_CTRL_CMD_FB_GET_INFO_V2, &p, sizeof(p)),
            NV_ERR_NOT_SUPPORTED)
      << "a 2080 control on the device object";
  EXPECT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO_V2,
                    reinterpret_cast<void*>(8), sizeof(p)),
            NV_ERR_INVALID_POINTER)
      << "nested pointer fault is a status, not an errno";

  nv2080_fb_info list[2] = {{0x16, 0}, {0x09, 0}};
  nv2080_fb_get_info_params v1{2, 0, Ptr(list)};
  ASSERT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO, &v1, sizeof(v1)),
            NV_OK);
  EXPECT_EQ(list[0].data, (kHeap - 10 * kMiB) >> 10);
  EXPECT_EQ(list[1].data, kHeap >> 10);
  v1.fbInfoList = 24;
  EXPECT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FB_GET_INFO, &v1, sizeof(v1)),
            NV_ERR_INVALID_POINTER);

  nvos32 vh{};
  vh.hRoot = client_;
  vh.hObjectParent = device_;
  vh.function = NVOS32_FUNCTION_INFO;
  ASSERT_EQ(RawIoctl(ctl_.get(), NV_ESC_RM_VID_HEAP_CONTROL, &vh, sizeof(vh)).ret, 0);
  EXPECT_EQ(vh.status, 0u);
  EXPECT_EQ(vh.total, kHeap);
  EXPECT_EQ(vh.free, kHeap - 10 * kMiB);
}

TEST_F(NvsimTest, FreeCascadesToDescendants) {
  uint64_t size = 50 * kMiB;
  uint32_t mem = 0;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &mem, &size), NV_OK);
  uint32_t tsg = NewTsg(1000, 2);
  const uint32_t free_before = HeapFreeKiB();
  EXPECT_EQ(free_before, (kHeap - 50 * kMiB) >> 10);
  EXPECT_EQ(Free(ctl_.get(), client_, client_, device_), NV_OK);
  nvsim_tsg_runtime_params rt{};
  EXPECT_EQ(Control(ctl_.get(), client_, tsg, NVSIM_CTRL_CMD_TSG_GET_RUNTIME, &rt, sizeof(rt)),
            NV_ERR_OBJECT_NOT_FOUND);
  EXPECT_EQ(Free(ctl_.get(), client_, device_, mem), NV_OK) << "gone already: nothing to free";
  // The memory came back: a fresh device sees the whole heap free.
  nv0080_alloc_params dp{};
  uint32_t d2 = 0, s2 = 0, sid = 0;
  ASSERT_EQ(Alloc(ctl_.get(), client_, client_, &d2, NV01_DEVICE_0, &dp), NV_OK);
  ASSERT_EQ(Alloc(ctl_.get(), client_, d2, &s2, NV20_SUBDEVICE_0, &sid), NV_OK);
  EXPECT_EQ(FbInfo(ctl_.get(), client_, s2, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE), kHeap >> 10);
  // Freeing the client frees the rest; its handle is then unknown.
  EXPECT_EQ(Free(ctl_.get(), client_, client_, client_), NV_OK);
  EXPECT_EQ(Free(ctl_.get(), client_, client_, d2), NV_ERR_INVALID_CLIENT);
}

TEST_F(NvsimTest, PidsAndPerPidVidmem) {
  uint64_t size = 30 * kMiB;
  uint32_t mem = 0;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &mem, &size), NV_OK);
  nv2080_gpu_get_pids_params pids{};
  ASSERT_EQ(
      Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_GPU_GET_PIDS, &pids, sizeof(pids)),
      NV_OK);
  bool found = false;
  for (uint32_t i = 0; i < pids.pidTblCount; ++i) found |= pids.pidTbl[i] == uint32_t(getpid());
  EXPECT_TRUE(found);
  nv2080_gpu_get_pid_info_params info{};
  info.pidInfoListCount = 2;
  info.pidInfoList[0].pid = getpid();
  info.pidInfoList[1].pid = 999999;
  ASSERT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_GPU_GET_PID_INFO, &info,
                    sizeof(info)),
            NV_OK);
  EXPECT_EQ(info.pidInfoList[0].result, 0u);
  EXPECT_EQ(info.pidInfoList[0].memPrivate, 30 * kMiB);
  EXPECT_NE(info.pidInfoList[1].result, 0u);
}

// §9.3-§9.4: the wrapper fd is looked up by number (major 195, same GPU), one context per file,
// and mmap needs the context, offset 0 and the exact size.
TEST_F(NvsimTest, MapMemoryContextsAndMmap) {
  uint64_t size = 2 * kMiB;
  uint32_t mem = 0;
  ASSERT_EQ(AllocVidmem(ctl_.get(), client_, device_, &mem, &size), NV_OK);
  auto map = [&](int fd, uint64_t length) {
    nvos33_with_fd m{};
    m.hClient = client_;
    m.hDevice = device_;
    m.hMemory = mem;
    m.length = length;
    m.fd = fd;
    EXPECT_EQ(RawIoctl(ctl_.get(), NV_ESC_RM_MAP_MEMORY, &m, sizeof(m)).ret, 0);
    return m.status;
  };
  Fd null("/dev/null");
  Fd dev1("/dev/nvidia1");
  EXPECT_EQ(map(null.get(), 65536), unsigned{NV_ERR_INVALID_ARGUMENT}) << "not major 195";
  EXPECT_EQ(map(dev1.get(), 65536), unsigned{NV_ERR_INVALID_ARGUMENT}) << "other GPU";
  EXPECT_EQ(map(12345, 65536), unsigned{NV_ERR_INVALID_ARGUMENT}) << "closed fd";

  int fresh = open("/dev/nvidia0", O_RDWR);
  ASSERT_GE(fresh, 0);
  EXPECT_EQ(mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fresh, 0), MAP_FAILED)
      << "no context yet";
  ASSERT_EQ(map(fresh, 65536), unsigned{NV_OK});
  EXPECT_EQ(map(fresh, 65536), unsigned{NV_ERR_STATE_IN_USE}) << "one context per file";
  EXPECT_EQ(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fresh, 0), MAP_FAILED);
  EXPECT_EQ(mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fresh, 4096), MAP_FAILED);
  auto* p = static_cast<volatile uint32_t*>(
      mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fresh, 0));
  ASSERT_NE(p, MAP_FAILED);
  close(fresh);  // libcuda closes at once; the VMA keeps the file (§9.4)
  p[0] = 0x1234;
  p[16383] = 0x5678;
  EXPECT_EQ(p[0], 0x1234u);
  EXPECT_EQ(p[16383], 0x5678u);
  EXPECT_EQ(p[100], 0u);
  EXPECT_EQ(munmap(const_cast<uint32_t*>(p), 65536), 0);
}

TEST_F(NvsimTest, GpuTimeFollowsTimeslices) {
  const uint32_t a = NewTsg(1000, 1), b = NewTsg(3000, 2), idle = NewTsg(1000, 1);
  Schedule(a, true);
  Schedule(b, true);
  const auto a0 = Runtime(a), b0 = Runtime(b), i0 = Runtime(idle);
  EXPECT_EQ(Runtime(idle).runnable, 0u) << "not scheduled";
  usleep(400 * 1000);
  const auto a1 = Runtime(a), b1 = Runtime(b), i1 = Runtime(idle);
  const double da = a1.consumedNs - a0.consumedNs, db = b1.consumedNs - b0.consumedNs;
  ASSERT_GT(da + db, 0);
  EXPECT_NEAR(da / (da + db), 0.25, 0.05) << "share follows timeslice 1000:3000";
  EXPECT_EQ(i1.consumedNs, i0.consumedNs) << "an unscheduled TSG gets no GPU time";

  // Disabling B's channels takes it off the runlist: A gets everything.
  nv2080_fifo_disable_channels_params dc{};
  dc.bDisable = 1;
  dc.numChannels = 2;
  for (int i = 0; i < 2; ++i) {
    dc.hClientList[i] = client_;
    dc.hChannelList[i] = channels_[1 + i];
  }
  ASSERT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &dc,
                    sizeof(dc)),
            NV_OK);
  EXPECT_EQ(Runtime(b).runnable, 0u);
  const auto a2 = Runtime(a), b2 = Runtime(b);
  usleep(100 * 1000);
  const auto a3 = Runtime(a), b3 = Runtime(b);
  EXPECT_EQ(b3.consumedNs, b2.consumedNs);
  EXPECT_GT(a3.consumedNs - a2.consumedNs, 50ull * 1000 * 1000);
  dc.pRunlistPreemptEvent = 0x1000;
  EXPECT_EQ(Control(ctl_.get(), client_, subdevice_, NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, &dc,
                    sizeof(dc)),
            NV_ERR_INVALID_ARGUMENT);

  // Preempting the only runnable TSG counts and hands the GPU straight back to it.
  nva06c_preempt_params pp{1, 0, {}, 1000};
  ASSERT_EQ(Control(ctl_.get(), client_, a, NVA06C_CTRL_CMD_PREEMPT, &pp, sizeof(pp)), NV_OK);
  EXPECT_EQ(Runtime(a).preemptions, 1u);
  nva06c_timeslice_params ts{};
  ASSERT_EQ(Control(ctl_.get(), client_, a, NVA06C_CTRL_CMD_GET_TIMESLICE, &ts, sizeof(ts)), NV_OK);
  EXPECT_EQ(ts.timesliceUs, 1000u);
  ts.timesliceUs = 0;
  EXPECT_EQ(Control(ctl_.get(), client_, a, NVA06C_CTRL_CMD_SET_TIMESLICE, &ts, sizeof(ts)),
            NV_ERR_INVALID_ARGUMENT);
  // The debugfs view lists the TSGs.
  FILE* f = fopen("/sys/kernel/debug/nvsim/gpu0", "r");
  ASSERT_NE(f, nullptr);
  char line[256];
  int lines = 0;
  while (fgets(line, sizeof(line), f)) ++lines;
  fclose(f);
  EXPECT_GE(lines, 3 + 3);
}

// §6.3: a kernel caller of nvidia_get_rm_ops() acts on a user client's TSG without owning it.
TEST_F(NvsimTest, KernelEntryPointActsOnUserTsg) {
  const uint32_t tsg = NewTsg(1000, 1);
  char cmd[160];
  snprintf(cmd, sizeof(cmd), "insmod ./mod/nvsim_kclient.ko hclient=%u htsg=%u timeslice_us=4000",
           client_, tsg);
  ASSERT_EQ(system(cmd), 0) << cmd;
  ASSERT_EQ(system("rmmod nvsim_kclient"), 0);
  nva06c_timeslice_params ts{};
  ASSERT_EQ(Control(ctl_.get(), client_, tsg, NVA06C_CTRL_CMD_GET_TIMESLICE, &ts, sizeof(ts)),
            NV_OK);
  EXPECT_EQ(ts.timesliceUs, 4000u);
  snprintf(cmd, sizeof(cmd), "insmod ./mod/nvsim_kclient.ko hclient=%u htsg=%u 2>/dev/null",
           client_ + 1, tsg);
  EXPECT_NE(system(cmd), 0) << "an unknown client is still refused in the kernel path";
}

// §7/§9.3.2: UVM_REGISTER_GPU arrives on /dev/nvidia-uvm but needs a GPU file in the fd table.
TEST(NvsimUvm, RegisterGpuNeedsGpuFileInFdTable) {
  Fd uvm("/dev/nvidia-uvm");
  ASSERT_GE(uvm.get(), 0) << strerror(errno);
  uvm_initialize_params init{};
  ASSERT_EQ(ioctl(uvm.get(), UVM_INITIALIZE, &init), 0);
  EXPECT_EQ(init.rmStatus, 0u);
  uvm_register_gpu_params p{};
  memcpy(p.gpu_uuid, NVSIM_GPU_UUID_PREFIX, sizeof(NVSIM_GPU_UUID_PREFIX) - 1);
  p.gpu_uuid[15] = 1;
  ASSERT_EQ(ioctl(uvm.get(), UVM_REGISTER_GPU, &p), 0);
  EXPECT_EQ(p.rmStatus, unsigned{NV_ERR_INSUFFICIENT_PERMISSIONS});
  {
    Fd dev1("/dev/nvidia1");
    ASSERT_EQ(ioctl(uvm.get(), UVM_REGISTER_GPU, &p), 0);
    EXPECT_EQ(p.rmStatus, unsigned{NV_OK});
  }
  p.gpu_uuid[15] = 9;
  ASSERT_EQ(ioctl(uvm.get(), UVM_REGISTER_GPU, &p), 0);
  EXPECT_EQ(p.rmStatus, unsigned{NV_ERR_INVALID_DEVICE});
  EXPECT_EQ(ioctl(uvm.get(), UVM_REGISTER_GPU, reinterpret_cast<void*>(8)), -1);
  EXPECT_EQ(errno, EFAULT);
  EXPECT_EQ(ioctl(uvm.get(), 72, &p), -1);
  EXPECT_EQ(errno, EINVAL);
}

// Hostile input: random escapes, sizes and contents on every node must never oops; the
// harness fails the run on any kernel splat.
TEST(NvsimHostile, RandomIoctlsNeverCrash) {
  std::mt19937 rng(12345);
  Fd ctl("/dev/nvidiactl");
  Fd dev("/dev/nvidia0");
  std::vector<uint32_t> buf(4096 + 16);
  uint32_t client = 0;
  ASSERT_EQ(AllocClient(ctl.get(), &client), NV_OK);
  const unsigned nrs[] = {0x27, 0x29, 0x2a, 0x2b, 0x4a, 0x4e, 0x4f, 0xc8, 0xc9,
                          0xce, 0xd1, 0xd2, 0xd3, 0xd6, 0xd7, 0xda, 0x00, 0xff};
  for (int i = 0; i < 20000; ++i) {
    unsigned nr = nrs[rng() % (sizeof(nrs) / sizeof(nrs[0]))];
    size_t size = rng() % 8 == 0 ? rng() % 16384 : (rng() % 8) * 8;
    if (size > buf.size() * 4) size = buf.size() * 4;
    // Only the bytes the call can read are randomized (TCG makes userspace work expensive).
    for (size_t w = 0; w < size / 4 + 1; ++w)
      buf[w] = rng() % 4 == 0 ? client : rng() % 3 == 0 ? rng() % 256 : rng();
    int fd = rng() % 2 ? ctl.get() : dev.get();
    int r = ioctl(fd, NV_IOCTL(nr, size), buf.data());
    ASSERT_TRUE(r == 0 || errno == EINVAL || errno == EFAULT || errno == ENOMEM)
        << "nr " << nr << " size " << size << " errno " << errno;
  }
}

TEST(NvsimHostile, ConcurrentCallsAndCloses) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&stop] {
      while (!stop) {
        Fd ctl("/dev/nvidiactl");
        Fd dev("/dev/nvidia0");
        uint32_t c = 0, d = 0, m = 0;
        if (AllocClient(ctl.get(), &c) != NV_OK) continue;
        nv0080_alloc_params dp{};
        if (Alloc(ctl.get(), c, c, &d, NV01_DEVICE_0, &dp) != NV_OK) continue;
        uint64_t size = 4 * kMiB;
        AllocVidmem(ctl.get(), c, d, &m, &size);
        // Another thread's params rewritten mid-call cannot hurt: the module copies once.
        Free(ctl.get(), c, c, d);
      }
    });
  }
  // One thread keeps rewriting a shared params block while another issues it.
  nvos64 shared{};
  threads.emplace_back([&] {
    std::mt19937 rng(7);
    volatile nvos64* w = &shared;
    while (!stop) {
      w->hClass = rng() % 2 ? NV01_ROOT_CLIENT : rng();
      w->hRoot = rng();
      w->pAllocParms = rng() % 2 ? 0 : rng();
    }
  });
  Fd ctl("/dev/nvidiactl");
  for (int i = 0; i < 2000; ++i) ioctl(ctl.get(), NV_IOCTL(NV_ESC_RM_ALLOC, 48), &shared);
  stop = true;
  for (auto& t : threads) t.join();
}

}  // namespace

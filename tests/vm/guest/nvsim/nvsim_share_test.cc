// nvsim's model of objects shared between clients (tests/vm/nvsim/nvsim_share.c, after the 580
// driver): RM_DUP_OBJECT under the share policies, RM_SHARE, and export fds
// (NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD / GET_EXPORT_OBJECT_INFO /
// IMPORT_OBJECTS_FROM_FD). The point the quota depends on: an allocation's video memory stays
// in use while any dup, export or import of it lives, whoever freed the original. And UVM's
// page tables for external mappings (tests/vm/nvsim/nvsim_uvm_ext.c) against the H200's figures.
// guest.sh loads nvsim with num_gpus=2 vidmem_mib=1024 reserved_mib=64.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <memory>

#include "nvsim_rm.h"

using namespace nvsim_test;

namespace {

// One process's view: ctl + dev0 files, a client with device and subdevice of GPU 0.
struct Session {
  int ctl = -1, dev = -1;
  uint32_t client = 0, device = 0, subdevice = 0;
  bool Open() {
    ctl = open("/dev/nvidiactl", O_RDWR);
    dev = open("/dev/nvidia0", O_RDWR);
    nv0080_alloc_params dp{};
    uint32_t sub_id = 0;
    return ctl >= 0 && dev >= 0 && AllocClient(ctl, &client) == NV_OK &&
           Alloc(ctl, client, client, &device, NV01_DEVICE_0, &dp) == NV_OK &&
           Alloc(ctl, client, device, &subdevice, NV20_SUBDEVICE_0, &sub_id) == NV_OK;
  }
  ~Session() {
    if (ctl >= 0) close(ctl);
    if (dev >= 0) close(dev);
  }
  uint64_t HeapFree() {
    return uint64_t{FbInfo(ctl, client, subdevice, NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE)} << 10;
  }
};

int64_t Dup(int ctl, uint32_t client, uint32_t parent, uint32_t* handle, uint32_t src_client,
            uint32_t src_object) {
  nvos55 p{client, parent, *handle, src_client, src_object, 0, 0};
  Rc rc = RawIoctl(ctl, NV_ESC_RM_DUP_OBJECT, &p, sizeof(p));
  if (rc.ret) return -rc.err;
  *handle = p.hObject;
  return p.status;
}

int64_t Share(int ctl, uint32_t client, uint32_t object, uint16_t type, uint32_t target,
              uint8_t action = 0) {
  nvos57 p{};
  p.hClient = client;
  p.hObject = object;
  p.sharePolicy.type = type;
  p.sharePolicy.target = target;
  p.sharePolicy.accessMask = 1;
  p.sharePolicy.action = action;
  Rc rc = RawIoctl(ctl, NV_ESC_RM_SHARE, &p, sizeof(p));
  return rc.ret ? -rc.err : p.status;
}

// EXPORT_OBJECTS_TO_FD of one object of a's client into export fd @efd (maxObjects 1 when
// the fd is new); the params (2 KiB) stay for the caller to reuse.
std::unique_ptr<nv0000_export_objects_to_fd_params> ExportParams(const Session& a, int efd,
                                                                 uint32_t mem) {
  auto ex = std::make_unique<nv0000_export_objects_to_fd_params>();
  ex->fd = efd;
  ex->hDevice = a.device;
  ex->maxObjects = 1;
  ex->metadata[0] = 4;
  ex->objects[0] = mem;
  ex->numObjects = 1;
  return ex;
}
int64_t Export(const Session& a, nv0000_export_objects_to_fd_params* ex) {
  return Control(a.ctl, a.client, a.client, NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD, ex,
                 sizeof(*ex));
}

TEST(NvsimShare, ADupKeepsTheMemoryUntilTheLastReferenceGoes) {
  Session a, b;
  ASSERT_TRUE(a.Open());
  ASSERT_TRUE(b.Open());
  const uint64_t free0 = a.HeapFree();
  uint32_t mem = 0, dup = 0x5c001000;
  uint64_t size = 64 * kMiB;
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  // Same process: the default policy (RS_SHARE_TYPE_PID) lets b dup a's memory.
  ASSERT_EQ(Dup(b.ctl, b.client, b.device, &dup, a.client, mem), NV_OK);
  EXPECT_EQ(dup, 0x5c001000u) << "the requested handle";
  EXPECT_EQ(a.HeapFree(), free0 - size) << "a dup allocates nothing";
  ASSERT_EQ(Free(a.ctl, a.client, a.device, mem), NV_OK);
  EXPECT_EQ(a.HeapFree(), free0 - size) << "the dup still holds the memory";
  ASSERT_EQ(Free(b.ctl, b.client, b.device, dup), NV_OK);
  EXPECT_EQ(a.HeapFree(), free0) << "the last reference returned it";
  // Refusals: no such source object, a parent that is not under a GPU.
  uint32_t h = 0;
  EXPECT_EQ(Dup(b.ctl, b.client, b.device, &h, a.client, mem), NV_ERR_OBJECT_NOT_FOUND);
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  EXPECT_EQ(Dup(b.ctl, b.client, b.client, &h, a.client, mem), NV_ERR_INVALID_OBJECT_PARENT);
  EXPECT_EQ(Dup(b.ctl, b.client, b.device, &h, a.client, a.device), NV_ERR_NOT_SUPPORTED)
      << "only Memory objects are duped";
}

// Another process may dup only what RM_SHARE opened to it.
TEST(NvsimShare, AnotherProcessNeedsASharePolicy) {
  Session a;
  ASSERT_TRUE(a.Open());
  uint32_t mem = 0;
  uint64_t size = 2 * kMiB;
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  auto child_dups = [&]() -> int64_t {
    int pipefd[2];
    if (pipe(pipefd)) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      Session b;
      int64_t st = -2;
      uint32_t h = 0;
      if (b.Open()) st = Dup(b.ctl, b.client, b.device, &h, a.client, mem);
      (void)!write(pipefd[1], &st, sizeof(st));
      _exit(0);
    }
    int64_t st = -3;
    (void)!read(pipefd[0], &st, sizeof(st));
    waitpid(pid, nullptr, 0);
    close(pipefd[0]);
    close(pipefd[1]);
    return st;
  };
  EXPECT_EQ(child_dups(), NV_ERR_INSUFFICIENT_PERMISSIONS);
  ASSERT_EQ(Share(a.ctl, a.client, mem, RS_SHARE_TYPE_ALL, 0), NV_OK);
  EXPECT_EQ(child_dups(), NV_OK);
  ASSERT_EQ(Share(a.ctl, a.client, mem, RS_SHARE_TYPE_ALL, 0, RS_SHARE_ACTION_FLAG_REVOKE), NV_OK);
  EXPECT_EQ(child_dups(), NV_ERR_INSUFFICIENT_PERMISSIONS);
  EXPECT_EQ(Share(a.ctl, a.client, 0xdead, RS_SHARE_TYPE_ALL, 0), NV_ERR_OBJECT_NOT_FOUND);
}

TEST(NvsimShare, AnExportFdHoldsTheMemoryUntilItCloses) {
  Session a, b;
  ASSERT_TRUE(a.Open());
  ASSERT_TRUE(b.Open());
  const uint64_t free0 = a.HeapFree();
  uint32_t mem = 0;
  uint64_t size = 32 * kMiB;
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  int efd = open("/dev/nvidiactl", O_RDWR);
  ASSERT_GE(efd, 0);
  auto ex = ExportParams(a, efd, mem);
  ASSERT_EQ(Export(a, ex.get()), NV_OK);
  ex->index = 1;  // past maxObjects
  EXPECT_EQ(Export(a, ex.get()), NV_ERR_OUT_OF_RANGE);
  nv0000_get_export_object_info_params info{};
  info.fd = efd;
  ASSERT_EQ(Control(b.ctl, b.client, b.client, NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
                    &info, sizeof(info)),
            NV_OK);
  EXPECT_EQ(info.maxObjects, 1);
  EXPECT_EQ(info.deviceInstance, 0u);
  EXPECT_EQ(info.metadata[0], 4);
  // The owner frees its handle: the export object keeps the memory.
  ASSERT_EQ(Free(a.ctl, a.client, a.device, mem), NV_OK);
  EXPECT_EQ(a.HeapFree(), free0 - size);
  nv0000_import_objects_from_fd_params im{};
  im.fd = efd;
  im.hParent = b.device;
  im.objects[0] = 0x5c002000;
  im.numObjects = 1;
  ASSERT_EQ(Control(b.ctl, b.client, b.client, NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD, &im,
                    sizeof(im)),
            NV_OK);
  EXPECT_EQ(im.objectTypes[0], NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM);
  close(efd);
  EXPECT_EQ(a.HeapFree(), free0 - size) << "the import still holds it";
  ASSERT_EQ(Free(b.ctl, b.client, b.device, 0x5c002000), NV_OK);
  EXPECT_EQ(a.HeapFree(), free0);
  // A ctl file that was never an export fd, and no file at all.
  int plain = open("/dev/nvidiactl", O_RDWR);
  info.fd = plain;
  EXPECT_EQ(Control(b.ctl, b.client, b.client, NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
                    &info, sizeof(info)),
            NV_ERR_INVALID_PARAMETER);
  close(plain);
  info.fd = -1;
  EXPECT_EQ(Control(b.ctl, b.client, b.client, NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
                    &info, sizeof(info)),
            NV_ERR_INVALID_PARAMETER);
}

// Closing the export fd first: the memory goes with the last user handle.
TEST(NvsimShare, ClosingTheExportFdDropsItsReference) {
  Session a;
  ASSERT_TRUE(a.Open());
  const uint64_t free0 = a.HeapFree();
  uint32_t mem = 0;
  uint64_t size = 16 * kMiB;
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  int efd = open("/dev/nvidiactl", O_RDWR);
  ASSERT_GE(efd, 0);
  ASSERT_EQ(Export(a, ExportParams(a, efd, mem).get()), NV_OK);
  close(efd);
  EXPECT_EQ(a.HeapFree(), free0 - size);
  ASSERT_EQ(Free(a.ctl, a.client, a.device, mem), NV_OK);
  EXPECT_EQ(a.HeapFree(), free0);
}

// UVM's page tables for external mappings (tests/vm/nvsim/nvsim_uvm_ext.c, after the 580
// driver's uvm_mmu.c and Hopper's format) against what the H200 showed
// (docs/results/rm-internal-memory-h200.md): one 2 MiB allocation mapped 2 MiB apart shares its
// tables (0 more per mapping), 1 GiB apart takes 4 KiB each (a PDE0), 512 GiB apart 8 KiB (a
// PDE1 and a PDE0); a 4 KiB-aligned mapping adds its 4 KiB PTE table; every byte returns with the
// mappings.
uint64_t UvmPtableBytes() { return NvsimParam("uvm_ptable_bytes"); }

TEST(NvsimUvm, PageTablesOfExternalMappingsFollowTheH200) {
  Session a;
  ASSERT_TRUE(a.Open());
  const int uvm = open("/dev/nvidia-uvm", O_RDWR);
  ASSERT_GE(uvm, 0);
  uint32_t mem = 0;
  uint64_t size = 2 * kMiB;
  ASSERT_EQ(AllocVidmem(a.ctl, a.client, a.device, &mem, &size), NV_OK);
  const uint64_t free0 = a.HeapFree(), pt0 = UvmPtableBytes();
  ASSERT_NE(pt0, ~0ull) << "nvsim has no uvm_ptable_bytes";
  struct Case {
    const char* what;
    uint64_t va0, stride, per_map;  // per_map: page tables each mapping after the first adds
  } cases[] = {
      {"2 MiB apart", 0x100000000000ull, 2 * kMiB, 0},
      {"1 GiB apart", 0x200000000000ull, 1ull << 30, 4096},
      {"512 GiB apart", 0x400000000000ull, 512ull << 30, 8192},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(UvmCreateRange(uvm, c.va0, 2 * kMiB), NV_OK) << c.what;
    ASSERT_EQ(UvmMapOnGpu0(uvm, c.va0, 2 * kMiB, a.client, mem), NV_OK) << c.what;
    const uint64_t first = UvmPtableBytes();
    for (uint64_t i = 1; i <= 8; ++i) {
      ASSERT_EQ(UvmCreateRange(uvm, c.va0 + i * c.stride, 2 * kMiB), NV_OK) << c.what << " " << i;
      ASSERT_EQ(UvmMapOnGpu0(uvm, c.va0 + i * c.stride, 2 * kMiB, a.client, mem), NV_OK);
    }
    EXPECT_EQ(UvmPtableBytes() - first, 8 * c.per_map) << c.what;
  }
  // 4 KiB pages (a 4 KiB-aligned base): the PTE table as well, 4 KiB.
  const uint64_t before = UvmPtableBytes(), va4k = 0x100000000000ull + 64 * kMiB + 4096;
  ASSERT_EQ(UvmCreateRange(uvm, va4k - 4096, 2 * kMiB), NV_OK);
  ASSERT_EQ(UvmMapOnGpu0(uvm, va4k, 64 * 1024, a.client, mem), NV_OK);
  EXPECT_EQ(UvmPtableBytes() - before, 4096u) << "in an existing PDE0: one PTE table";
  EXPECT_EQ(a.HeapFree(), free0 - (UvmPtableBytes() - pt0)) << "the page tables are video memory";
  close(uvm);
  EXPECT_EQ(UvmPtableBytes(), pt0) << "every table returns with the file";
  EXPECT_EQ(a.HeapFree(), free0);
}

}  // namespace

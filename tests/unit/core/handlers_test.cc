// The remaining handlers, one by one: what each lists, translates, charges or refuses.
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

struct Bufs {
  std::vector<vcore_buf_info> list;
};

// Runs pre only and collects the buffers the call lists (what a recorder would save).
Bufs PreBuffers(vcore_file* f, uint32_t req, uint64_t arg, SimMemory* mem) {
  vcore_call_ctx ctx{mem, 100, 100};
  vcore_call* call = nullptr;
  Bufs b;
  vcore_pre(f, req, arg, &ctx, &call);
  for (unsigned i = 0; i < vcore_call_buffer_count(call); ++i) {
    vcore_buf_info info;
    EXPECT_EQ(vcore_call_buffer(call, i, &info), 0);
    b.list.push_back(info);
  }
  vcore_buf_info none;
  EXPECT_EQ(vcore_call_buffer(call, 99, &none), -VCORE_ENOENT);
  vcore_post(call, 0);
  return b;
}

TEST_F(CoreTest, BufferListNamesEveryNestedPointer) {
  MakeSlot(0);
  // XFER(RM_CONTROL): header, payload (parent 0 @8), params (parent 1 @16).
  NVOS54_PARAMETERS c{1, 2, NV2080_CTRL_CMD_GR_GET_INFO, 0, kParams, 24, 0};
  Put(kList, Bytes(c));
  Put(kParams, std::vector<uint8_t>(24));
  nv_ioctl_xfer_t x{NV_ESC_RM_CONTROL, 32, kList};
  Put(kArg, Bytes(x));
  Bufs b = PreBuffers(ctl_, Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg, &mem_);
  ASSERT_EQ(b.list.size(), 3u);
  EXPECT_EQ(b.list[0].parent, -1);
  EXPECT_EQ(b.list[0].len, 16u);
  EXPECT_EQ(b.list[1].parent, 0);
  EXPECT_EQ(b.list[1].ptr_off, 8u);
  EXPECT_EQ(b.list[1].uaddr, kList);
  EXPECT_EQ(b.list[2].parent, 1);
  EXPECT_EQ(b.list[2].ptr_off, 16u);
  EXPECT_EQ(b.list[2].uaddr, kParams);
  EXPECT_EQ(b.list[2].len, 24u);
  // RM_GET_EVENT_DATA: the 16-byte event at pEvent.
  NVOS41_PARAMETERS e{kParams, 0, 0};
  Put(kArg, Bytes(e));
  b = PreBuffers(ctl_, Req(NV_ESC_RM_GET_EVENT_DATA, 16), kArg, &mem_);
  ASSERT_EQ(b.list.size(), 2u);
  EXPECT_EQ(b.list[1].len, 16u);
  EXPECT_EQ(b.list[1].uaddr, kParams);
  // RM_IDLE_CHANNELS: three handle arrays of numChannels.
  NVOS30_PARAMETERS ic{};
  ic.numChannels = 3;
  ic.phClients = kParams;
  ic.phDevices = kParams + 0x100;
  ic.phChannels = kList;
  Put(kArg, Bytes(ic));
  b = PreBuffers(ctl_, Req(NV_ESC_RM_IDLE_CHANNELS, 56), kArg, &mem_);
  ASSERT_EQ(b.list.size(), 4u);
  EXPECT_EQ(b.list[3].len, 12u);
  ic.numChannels = 100000;
  Put(kArg, Bytes(ic));
  EXPECT_EQ(Call(Req(NV_ESC_RM_IDLE_CHANNELS, 56), kArg).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 48), NV_ERR_INVALID_ARGUMENT);
}

TEST_F(CoreTest, AllocObjectCannotCreateUncountedVidmemUnderAQuota) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NVOS05_PARAMETERS p{c, d, 0x5c000300, NV01_MEMORY_LOCAL_USER, 0};
  Put(kArg, Bytes(p));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC_OBJECT, 20), kArg).verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 16), NV_ERR_NOT_SUPPORTED);
  p.hClass = GF100_ZBC_CLEAR;  // a plain object: forwarded
  Put(kArg, Bytes(p));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC_OBJECT, 20), kArg).verdict, VCORE_FORWARD);
}

TEST_F(CoreTest, MoreFdCarryingControls) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  std::vector<uint8_t> imp(20);
  int32_t fd = 21;
  memcpy(imp.data(), &fd, 4);
  Outcome o = Control(c, c, NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_FROM_FD, imp);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kParams);
  EXPECT_EQ(o.fds[0].value, 21);

  std::vector<uint8_t> cr(76);
  fd = 22;
  memcpy(cr.data() + 72, &fd, 4);
  o = Control(c, c, NV0000_CTRL_CMD_OS_UNIX_CREATE_EXPORT_OBJECT_FD, cr);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kParams + 72);

  std::vector<uint8_t> em(1048);
  fd = 23;
  memcpy(em.data() + 1040, &fd, 4);
  o = Control(c, 0x5c0000e0, NV00E0_CTRL_CMD_EXPORT_MEM, em);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kParams + 1040);
  EXPECT_EQ(o.fds[0].kind, VCORE_FD_NV_DEV);
  // The same control with params the core cannot read: a defined refusal.
  o = Control(c, 0x5c0000e0, NV00E0_CTRL_CMD_EXPORT_MEM, {}, 1048);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
}

TEST_F(CoreTest, VidHeapTiledAndRangeAllocsAreCharged) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  rm_.alloc_status = NV_OK;
  NVOS32_PARAMETERS v{};
  v.hRoot = c;
  v.hObjectParent = d;
  v.function = NVOS32_FUNCTION_ALLOC_SIZE_RANGE;
  uint64_t sz = 6 * kMiB;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_SIZERANGE_SIZE_OFF, &sz, 8);
  uint32_t h = 0x5c000400;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_HMEMORY_OFF, &h, 4);
  Put(kArg, Bytes(v));
  Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
  EXPECT_EQ(Charged(), 6 * kMiB);
  // PCI location: system memory, not charged; VIRTUAL: address space.
  v.function = NVOS32_FUNCTION_ALLOC_TILED_PITCH_HEIGHT;
  uint32_t attr = NVOS32_ATTR_LOCATION_PCI << 25;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_ATTR_OFF, &attr, 4);
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_TILEDPITCH_SIZE_OFF, &sz, 8);
  h = 0x5c000401;
  memcpy(reinterpret_cast<uint8_t*>(&v) + NVOS32_ALLOCSIZE_HMEMORY_OFF, &h, 4);
  Put(kArg, Bytes(v));
  Call(Req(NV_ESC_RM_VID_HEAP_CONTROL, 184), kArg);
  EXPECT_EQ(Charged(), 6 * kMiB);
  Free(c, 0, c);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, PageSizeAttrSetsTheRounding) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  rm_.round = 1;  // a driver that reports the size unrounded
  AllocVidmem(c, d, 0x5c000500, 100 * 1024, 0, NVOS32_ATTR_PAGE_SIZE_BIG << 23);
  EXPECT_EQ(Charged(), 128u * 1024) << "64 KiB pages";
  AllocVidmem(c, d, 0x5c000501, 1, 0, NVOS32_ATTR_PAGE_SIZE_HUGE << 23);
  EXPECT_EQ(Charged(), 128u * 1024 + 2 * kMiB) << "2 MiB pages";
  AllocVidmem(c, d, 0x5c000502, 1, 0, 0);
  EXPECT_EQ(Charged(), 128u * 1024 + 2 * kMiB + 4096) << "default: at least 4 KiB";
}

}  // namespace
}  // namespace vgpu::core_test

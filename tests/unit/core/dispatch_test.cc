// Dispatch: (nr, size) decoding, XFER unwrapping, malformed input, unknowns and the policy, fd
// fields for the kernel host, driver versions, UVM, allocation failure (nvidia-rm-abi.md §1-3).
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

TEST_F(CoreTest, MatchesOnNrAndSizeNotOnTypeOrDirection) {
  MakeSlot(0);
  NVOS00_PARAMETERS p{1, 2, 3, 0};
  Put(kArg, Bytes(p));
  // magic 'X' and _IOC_NONE: the driver ignores both (nvidia-rm-abi.md §1.3, [M] T1).
  uint32_t req = (0u << 30) | (16u << 16) | ('X' << 8) | NV_ESC_RM_FREE;
  EXPECT_EQ(Call(req, kArg).verdict, VCORE_FORWARD);
}

TEST_F(CoreTest, WrongSizesAreRefusedWithEinval) {
  MakeSlot(0);
  Put(kArg, std::vector<uint8_t>(64));
  for (auto [nr, size] : std::vector<std::pair<uint32_t, uint32_t>>{
           {NV_ESC_RM_CONTROL, 31},
           {NV_ESC_RM_ALLOC, 40},
           {NV_ESC_RM_FREE, 8},
           {NV_ESC_CARD_INFO, 73},
           {NV_ESC_RM_MAP_MEMORY_DMA, 56} /* pre-580 NVOS46 */,
           {NV_ESC_REGISTER_FD, 0}}) {
    Outcome o = Call(Req(nr, size), kArg);
    EXPECT_EQ(o.verdict, VCORE_REFUSE_ERRNO) << std::hex << nr;
    EXPECT_EQ(o.ret, -VCORE_EINVAL) << std::hex << nr;
  }
  EXPECT_EQ(Stats().malformed, 6u);
  // CARD_INFO takes any whole number of 72-byte entries (libcuda: 32).
  Put(kArg, std::vector<uint8_t>(72 * 32));
  EXPECT_EQ(Call(Req(NV_ESC_CARD_INFO, 72 * 32), kArg).verdict, VCORE_FORWARD);
}

TEST_F(CoreTest, ShortAndUnmappedArgumentsFault) {
  MakeSlot(0);
  Put(kArg, std::vector<uint8_t>(20));  // 20 bytes where RM_CONTROL needs 32
  Outcome o = Call(Req(NV_ESC_RM_CONTROL, 32), kArg);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_ERRNO);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
  o = Call(Req(NV_ESC_RM_ALLOC, 48), 0xdead0000);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
}

TEST_F(CoreTest, NestedPointersOutOfRangeFault) {
  MakeSlot(64 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NVOS64_PARAMETERS p{};
  p.hRoot = c;
  p.hObjectParent = d;
  p.hObjectNew = 0x5c000010;
  p.hClass = NV01_MEMORY_LOCAL_USER;
  p.pAllocParms = 0xbad00000;  // unmapped
  Put(kArg, Bytes(p));
  Outcome o = Call(Req(NV_ESC_RM_ALLOC, 48), kArg);
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
  // Params that run off the end of their mapping.
  Put(kParams, std::vector<uint8_t>(100));  // 128 needed
  p.pAllocParms = kParams;
  Put(kArg, Bytes(p));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC, 48), kArg).ret, -VCORE_EFAULT);
  // A pointer so high that pointer + size wraps.
  p.pAllocParms = ~0ull - 8;
  Put(kArg, Bytes(p));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ALLOC, 48), kArg).ret, -VCORE_EFAULT);
  // A control whose params the core must read, unmapped.
  NVOS54_PARAMETERS ctl{c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, 0, 0xbad00000, 1028, 0};
  Put(kArg, Bytes(ctl));
  EXPECT_EQ(Call(Req(NV_ESC_RM_CONTROL, 32), kArg).ret, -VCORE_EFAULT);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(CoreTest, XferIsUnwrappedBeforeDispatch) {
  MakeSlot(8 * kMiB);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  NV_MEMORY_ALLOCATION_PARAMS m{};
  m.size = 4 * kMiB;
  NVOS64_PARAMETERS p{};
  p.hRoot = c;
  p.hObjectParent = d;
  p.hObjectNew = 0x5c000010;
  p.hClass = NV01_MEMORY_LOCAL_USER;
  p.pAllocParms = kParams;
  Put(kList, Bytes(p));  // the payload
  Put(kParams, Bytes(m));
  nv_ioctl_xfer_t x{NV_ESC_RM_ALLOC, 48, kList};
  Put(kArg, Bytes(x));
  Outcome o = Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg);
  EXPECT_EQ(o.verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), 4 * kMiB) << "a wrapped alloc is charged like a plain one";
  // Over quota inside XFER: the status lands in the payload.
  m.size = 8 * kMiB;
  Put(kParams, Bytes(m));
  p.hObjectNew = 0x5c000011;
  Put(kList, Bytes(p));
  o = Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kList + 40), NV_ERR_NO_MEMORY);
}

TEST_F(CoreTest, MalformedXferIsRefused) {
  MakeSlot(0);
  // XFER inside XFER.
  nv_ioctl_xfer_t inner{NV_ESC_RM_FREE, 16, kParams};
  Put(kList, Bytes(inner));
  nv_ioctl_xfer_t x{NV_ESC_IOCTL_XFER_CMD, 16, kList};
  Put(kArg, Bytes(x));
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg).ret, -VCORE_EINVAL);
  // Outer size not 16.
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 24), kArg).ret, -VCORE_EINVAL);
  // Payload larger than NV_ABSOLUTE_MAX_IOCTL_SIZE.
  x = {NV_ESC_RM_FREE, 16385, kList};
  Put(kArg, Bytes(x));
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg).ret, -VCORE_EINVAL);
  // A full ioctl word instead of an nr.
  x = {Req(NV_ESC_RM_FREE, 16), 16, kList};
  Put(kArg, Bytes(x));
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg).ret, -VCORE_EINVAL);
  // Inner size wrong for the inner escape.
  x = {NV_ESC_RM_FREE, 12, kList};
  Put(kArg, Bytes(x));
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg).ret, -VCORE_EINVAL);
  // Payload unmapped; header unmapped.
  x = {NV_ESC_RM_FREE, 16, 0xbad00000};
  Put(kArg, Bytes(x));
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg).ret, -VCORE_EFAULT);
  EXPECT_EQ(Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), 0xbad00000).ret, -VCORE_EFAULT);
  EXPECT_EQ(Stats().denied, 7u);
}

// An XFER whose payload pointer is NULL is refused before anything reads there, as the driver's
// copy-in from 0 fails (-EFAULT): the core never decides on a payload at address 0, which a task
// with CAP_SYS_RAWIO could map (mmap_min_addr), and which the seal would not seal (seal.c).
TEST_F(CoreTest, XferWithANullPayloadIsRefusedUnread) {
  MakeSlot(0);
  Put(0, Bytes(NVOS00_PARAMETERS{}));  // readable in this host's memory
  nv_ioctl_xfer_t x{NV_ESC_RM_FREE, sizeof(NVOS00_PARAMETERS), 0};
  Put(kArg, Bytes(x));
  const Outcome o = Call(Req(NV_ESC_IOCTL_XFER_CMD, 16), kArg);
  EXPECT_FALSE(o.forwarded) << "the driver never saw it";
  EXPECT_EQ(o.ret, -VCORE_EFAULT);
}

TEST_F(CoreTest, UnknownsFollowThePolicyAndAreCountedByNumber) {
  MakeSlot(0, VCORE_UNKNOWN_STRICT);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  Put(kArg, std::vector<uint8_t>(32));
  EXPECT_EQ(Call(Req(0x60, 32), kArg).ret, -VCORE_EINVAL);  // unknown escape
  Outcome o = Control(c, s, 0x20807f01, std::vector<uint8_t>(8));
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 28), NV_ERR_NOT_SUPPORTED);
  o = Alloc(c, d, 0x5c000060, 0xbeef, std::vector<uint8_t>(8));
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 40), NV_ERR_INVALID_CLASS);
  Control(c, s, 0x20807f01, std::vector<uint8_t>(8));
  vcore_stats st = Stats();
  ASSERT_EQ(st.unknown_escapes.n, 1u);
  EXPECT_EQ(st.unknown_escapes.number[0], 0x60u);
  ASSERT_EQ(st.unknown_controls.n, 1u);
  EXPECT_EQ(st.unknown_controls.number[0], 0x20807f01u);
  EXPECT_EQ(st.unknown_controls.count[0], 2u);
  ASSERT_EQ(st.unknown_classes.n, 1u);
  EXPECT_EQ(st.unknown_classes.number[0], 0xbeefu);
  // Legacy-GSS controls (0x8000) are forwarded as opaque bytes, as gVisor does.
  EXPECT_EQ(Control(c, s, 0x20809009, std::vector<uint8_t>(16)).verdict, VCORE_FORWARD);

  MakeSlot(0, VCORE_UNKNOWN_PERMISSIVE);
  Session(&c, &d, &s);
  Put(kArg, std::vector<uint8_t>(32));
  EXPECT_EQ(Call(Req(0x60, 32), kArg).verdict, VCORE_FORWARD);
  EXPECT_EQ(Control(c, s, 0x20807f01, std::vector<uint8_t>(8)).verdict, VCORE_FORWARD);
  EXPECT_EQ(Alloc(c, d, 0x5c000060, 0xbeef, std::vector<uint8_t>(8)).verdict, VCORE_FORWARD);
  Free(c, d, 0x5c000060);
  st = Stats();
  EXPECT_EQ(st.unknown_escapes.n + st.unknown_controls.n + st.unknown_classes.n, 3u);
  EXPECT_EQ(st.denied, 0u);
}

TEST_F(CoreTest, UnknownCountersAreBounded) {
  MakeSlot(0, VCORE_UNKNOWN_PERMISSIVE);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  for (uint32_t i = 0; i < VCORE_UNKNOWN_SLOTS + 5; ++i) {
    Control(c, s, 0x20820000 + i, std::vector<uint8_t>(4));
  }
  vcore_stats st = Stats();
  EXPECT_EQ(st.unknown_controls.n, static_cast<uint32_t>(VCORE_UNKNOWN_SLOTS));
  EXPECT_EQ(st.unknown_controls.dropped, 5u);
}

TEST_F(CoreTest, ControlParamsSizeMustMatch) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  // [M] T7: FB_GET_INFO_V2 with 1024 instead of 1028 -> 0x1F.
  Outcome o = Control(c, s, NV2080_CTRL_CMD_FB_GET_INFO_V2, std::vector<uint8_t>(1024));
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 28), NV_ERR_INVALID_ARGUMENT);
  o = Control(c, s, NV2080_CTRL_CMD_GR_GET_INFO, std::vector<uint8_t>(4), 2u << 20);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 28), NV_ERR_INVALID_ARGUMENT) << "over 1 MiB";
}

TEST_F(CoreTest, ReportsFdFieldsTheKernelHostMustTranslate) {
  MakeSlot(0);
  nv_ioctl_register_fd_t r{5};
  Put(kArg, Bytes(r));
  vcore_file* dev = vcore_file_open(slot_, VCORE_FILE_DEV, nullptr);
  Outcome o = Call(Req(NV_ESC_REGISTER_FD, 4), kArg, dev);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kArg);
  EXPECT_EQ(o.fds[0].value, 5);
  EXPECT_EQ(o.fds[0].kind, VCORE_FD_NV_CTL);

  nv_ioctl_nvos33_parameters_with_fd map{};
  map.fd = 9;
  Put(kArg, Bytes(map));
  o = Call(Req(NV_ESC_RM_MAP_MEMORY, 56), kArg);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kArg + 48);
  EXPECT_EQ(o.fds[0].value, 9);

  uint32_t c, d, s;
  Session(&c, &d, &s);
  std::vector<uint8_t> exp(24);
  int32_t fd = 11;
  memcpy(exp.data() + 16, &fd, 4);
  o = Control(c, c, NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD, exp);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kParams + 16);
  EXPECT_EQ(o.fds[0].value, 11);
  EXPECT_EQ(o.fds[0].kind, VCORE_FD_EXPORT);

  std::vector<uint8_t> att(16);
  fd = 12;
  memcpy(att.data() + 8, &fd, 4);
  o = Control(c, 0x5c0000fd, NV00FD_CTRL_CMD_ATTACH_GPU, att);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].uaddr, kParams + 8);
  EXPECT_EQ(o.fds[0].kind, VCORE_FD_NV_DEV);

  nv_ioctl_nvos02_parameters_with_fd am{};
  am.params.hRoot = c;
  am.params.hObjectParent = d;
  am.params.hObjectNew = 0x5c000070;
  am.params.hClass = NV01_MEMORY_SYSTEM_OS_DESCRIPTOR;
  am.fd = -1;
  Put(kArg, Bytes(am));
  o = Call(Req(NV_ESC_RM_ALLOC_MEMORY, 56), kArg, dev);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].value, -1) << "-1 means no fd: the host leaves it alone";

  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  UVM_MM_INITIALIZE_PARAMS mm{13, 0};
  Put(kArg, Bytes(mm));
  o = Call(UVM_MM_INITIALIZE, kArg, uvm);
  ASSERT_EQ(o.fds.size(), 1u);
  EXPECT_EQ(o.fds[0].kind, VCORE_FD_UVM);
  EXPECT_EQ(o.fds[0].value, 13);
}

TEST_F(CoreTest, UvmIoctlsArePlainNumbers) {
  MakeSlot(0);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  EXPECT_EQ(Call(UVM_INITIALIZE, kArg, uvm).verdict, VCORE_FORWARD);
  EXPECT_EQ(Call(UVM_MAP_EXTERNAL_ALLOCATION, kArg, uvm).verdict, VCORE_FORWARD);
  EXPECT_EQ(Call(4000, kArg, uvm).ret, -VCORE_EINVAL) << "unknown UVM command, strict";
}

TEST_F(CoreTest, PrivilegedAndHandlerlessEscapesAreRefused) {
  MakeSlot(0);
  Put(kArg, std::vector<uint8_t>(72));
  EXPECT_EQ(Call(Req(NV_ESC_RM_ACCESS_REGISTRY, 72), kArg).ret, -VCORE_EPERM);
  EXPECT_EQ(Call(Req(NV_ESC_SET_NUMA_STATUS, 4), kArg).ret, -VCORE_EPERM);
  EXPECT_EQ(Call(Req(NV_ESC_RM_CONFIG_GET, 0), kArg).ret, -VCORE_EINVAL);
}

TEST(CoreVersion, OnlyTheKnownBranchUnlessAllowed) {
  char msg[200];
  EXPECT_EQ(vcore_driver_version_supported("580.159.04", msg, sizeof msg), 1);
  EXPECT_EQ(vcore_driver_version_supported("580.159.03", msg, sizeof msg), 1);
  EXPECT_EQ(vcore_driver_version_supported("595.45.04", msg, sizeof msg), 0);
  EXPECT_NE(std::string(msg).find("595.45.04"), std::string::npos) << msg;
  EXPECT_EQ(vcore_driver_version_supported("", msg, sizeof msg), 0);
  EXPECT_EQ(vcore_driver_version_supported("580", msg, sizeof msg), 0);

  SimHost host;
  vcore_slot_config cfg{};
  snprintf(cfg.driver_version, sizeof cfg.driver_version, "595.45.04");
  int err = 0;
  EXPECT_EQ(vcore_slot_create(&SimHost::kOps, &host, &cfg, nullptr, &err), nullptr);
  EXPECT_EQ(err, -VCORE_EOPNOTSUPP);
  ASSERT_FALSE(host.log().empty());
  EXPECT_NE(host.log().back().find("595.45.04"), std::string::npos);
  cfg.allow_unknown_driver_version = true;
  vcore_slot* s = vcore_slot_create(&SimHost::kOps, &host, &cfg, nullptr, &err);
  EXPECT_NE(s, nullptr);
  vcore_slot_destroy(s);
  cfg.unknown_policy = static_cast<vcore_unknown_policy>(9);
  EXPECT_EQ(vcore_slot_create(&SimHost::kOps, &host, &cfg, nullptr, &err), nullptr);
  EXPECT_EQ(err, -VCORE_EINVAL);
  EXPECT_EQ(host.live_allocs(), 0);
}

TEST_F(CoreTest, AllocationFailureInTheHostIsADefinedResult) {
  MakeSlot(0);
  uint32_t c, d, s;
  Session(&c, &d, &s);
  for (long n = 0; n < 4; ++n) {
    host_.FailAllocAfter(n);
    Outcome o = AllocVidmem(c, d, 0x5c000080 + static_cast<uint32_t>(n), 2 * kMiB);
    host_.FailAllocAfter(-1);
    if (o.verdict != VCORE_FORWARD) {
      EXPECT_EQ(o.ret, -VCORE_ENOMEM) << n;
    }
  }
  Free(c, 0, c);
  EXPECT_EQ(Charged(), 0u);
}

}  // namespace
}  // namespace vgpu::core_test

// F11.3 (docs/security/kernel-call-path.md): a slot is one GPU of the node. nvsim runs two GPUs
// in this suite (guest.sh) and names them as the 580 driver does (tests/vm/nvsim/nvsim_gpuid.c).
// A tenant of a slot on GPU 0 must see only GPU 0 in the driver's GPU lists (NV_ESC_CARD_INFO,
// NV0000 GET_PROBED_IDS / GET_ATTACHED_IDS), and must not describe, attach or open GPU 1 (NV0000
// GET_ID_INFO_V2 / GET_PCI_INFO / ATTACH_IDS, NV_ESC_ATTACH_GPUS_TO_FD, NV01_DEVICE_0 of it):
// attached, another tenant's GPU stays initialised and "in use" (no reset, no MIG change).
// Linked into vgpu_gtest (guest.cmake).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "vgpu_rm.h"

namespace vgpu_test {
namespace {

constexpr uint32_t kGetAttachedIds = 0x201, kGetIdInfoV2 = 0x205, kGetProbedIds = 0x214,
                   kAttachIds = 0x215, kGetPciInfo = 0x21b;  // ctrl0000gpu.h
constexpr uint32_t kInvalidId = 0xffffffff;                  // NV0000_CTRL_GPU_INVALID_ID

// A per-GPU array parameter of nvsim ("1,0,..."), GPU `gpu`'s entry; ~0u if unreadable.
unsigned NvsimGpuParam(const std::string& name, unsigned gpu) {
  std::ifstream f("/sys/module/nvsim/parameters/" + name);
  std::string item;
  for (unsigned i = 0; std::getline(f, item, ','); ++i)
    if (i == gpu) return static_cast<unsigned>(std::stoul(item));
  return ~0u;
}

// The ids a gpuIds[] list names, up to NV0000_CTRL_GPU_INVALID_ID.
std::vector<uint32_t> IdList(const uint32_t* ids, size_t n) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < n && ids[i] != kInvalidId; ++i) out.push_back(ids[i]);
  return out;
}

// CARD_INFO on `ctl`: the gpu ids of the valid entries, by minor number (-1: none listed).
std::vector<int64_t> CardIds(int ctl) {
  nv_ioctl_card_info ci[32]{};
  std::vector<int64_t> by_minor(32, -1);
  if (RawIoctl(ctl, NV_ESC_CARD_INFO, ci, sizeof(ci)).ret) return {};
  for (const auto& c : ci)
    if (c.valid && c.minor_number < 32) by_minor[c.minor_number] = c.gpu_id;
  return by_minor;
}

// The driver's own names for the node's GPUs 0 (the slots') and 1: "" or what is missing.
std::string NodeGpus(uint32_t* mine, uint32_t* other) {
  const int real = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
  if (real < 0) return "no /dev/nvidiactl";
  const std::vector<int64_t> node = CardIds(real);
  close(real);
  if (node.size() != 32u || node[0] < 0 || node[1] < 0)
    return "the suite needs nvsim with num_gpus >= 2";
  *mine = static_cast<uint32_t>(node[0]);
  *other = static_cast<uint32_t>(node[1]);
  return "";
}

TEST(CallPath, OtherGpusAreNeitherListedNorAttachable) {
  uint32_t mine = 0, other = 0;
  ASSERT_EQ(NodeGpus(&mine, &other), "");

  ScopedSlot slot(0, "gpus");
  ASSERT_TRUE(slot.ok());
  Session s;
  ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
  int leaks = 0;

  const std::vector<int64_t> seen = CardIds(s.ctl);
  ASSERT_EQ(seen.size(), 32u);
  const int card_entries = static_cast<int>(32 - std::count(seen.begin(), seen.end(), -1));
  EXPECT_EQ(seen[0], static_cast<int64_t>(mine)) << "CARD_INFO lost the slot's own GPU";
  EXPECT_EQ(card_entries, 1) << "CARD_INFO lists other GPUs of the node";
  leaks += card_entries - 1;

  uint32_t probed[96];
  std::fill(std::begin(probed), std::end(probed), 0u);
  EXPECT_EQ(Control(s.ctl, s.client, s.client, kGetProbedIds, probed, sizeof(probed)), NV_OK);
  const auto probed_ids = IdList(probed, 32), excluded = IdList(probed + 32, 32);
  EXPECT_EQ(probed_ids, std::vector<uint32_t>{mine}) << "GET_PROBED_IDS";
  EXPECT_TRUE(excluded.empty()) << "GET_PROBED_IDS excluded list";
  leaks += static_cast<int>(probed_ids.size() + excluded.size()) - 1;

  uint32_t attached[32]{};
  EXPECT_EQ(Control(s.ctl, s.client, s.client, kGetAttachedIds, attached, sizeof(attached)), NV_OK);
  const auto attached_ids = IdList(attached, 32);
  EXPECT_EQ(attached_ids, std::vector<uint32_t>{mine}) << "GET_ATTACHED_IDS";
  leaks += static_cast<int>(attached_ids.size()) - 1;

  // Describing a GPU: the slot's own answers, the other one does not exist for the tenant.
  uint32_t info[8] = {mine};
  EXPECT_EQ(Control(s.ctl, s.client, s.client, kGetIdInfoV2, info, sizeof(info)), NV_OK);
  uint32_t pci[3] = {mine};
  EXPECT_EQ(Control(s.ctl, s.client, s.client, kGetPciInfo, pci, sizeof(pci)), NV_OK);
  uint32_t other_info[8] = {other};
  const int64_t info_st =
      Control(s.ctl, s.client, s.client, kGetIdInfoV2, other_info, sizeof(other_info));
  EXPECT_NE(info_st, NV_OK) << "GET_ID_INFO_V2 of another GPU";
  uint32_t other_pci[3] = {other};
  const int64_t pci_st =
      Control(s.ctl, s.client, s.client, kGetPciInfo, other_pci, sizeof(other_pci));
  EXPECT_NE(pci_st, NV_OK) << "GET_PCI_INFO of another GPU";
  leaks += (info_st == NV_OK) + (pci_st == NV_OK);

  // Attaching: RM attach of the other GPU must not reach the driver; the slot's own still does.
  const unsigned rm_before = NvsimGpuParam("gpu_attach_ids", 1);
  uint32_t attach_other[33] = {other, kInvalidId};
  const int64_t attach_st =
      Control(s.ctl, s.client, s.client, kAttachIds, attach_other, sizeof(attach_other));
  const unsigned rm_attaches = NvsimGpuParam("gpu_attach_ids", 1) - rm_before;
  EXPECT_NE(attach_st, NV_OK) << "GPU_ATTACH_IDS of another GPU";
  EXPECT_EQ(rm_attaches, 0u) << "the driver attached GPU 1 for the tenant";
  uint32_t attach_mine[33] = {mine, kInvalidId};
  EXPECT_EQ(Control(s.ctl, s.client, s.client, kAttachIds, attach_mine, sizeof(attach_mine)),
            NV_OK);
  uint32_t attach_all[33] = {0x0000ffff, kInvalidId};  // NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS
  const unsigned all_before = NvsimGpuParam("gpu_attach_ids", 1);
  Control(s.ctl, s.client, s.client, kAttachIds, attach_all, sizeof(attach_all));
  const unsigned all_attaches = NvsimGpuParam("gpu_attach_ids", 1) - all_before;
  EXPECT_EQ(all_attaches, 0u) << "ATTACH_ALL_PROBED_IDS attached GPU 1";
  leaks += static_cast<int>(rm_attaches + all_attaches);

  // The same attach of the slot's own GPU while a sibling thread rewrites the id after the core's
  // check (nvsim's rewrite_ctrl hook stores GPU 1's low byte just before the driver reads the
  // params; the ids differ only there): the driver must attach what the core checked.
  unsigned raced = 0;
  if ((mine ^ other) <= 0xff) {
    const unsigned race_before = NvsimGpuParam("gpu_attach_ids", 1);
    const std::string hook = "/sys/module/nvsim/parameters/rewrite_ctrl_";
    std::ofstream(hook + "offset") << 0;
    std::ofstream(hook + "value") << (other & 0xff);
    std::ofstream(hook + "tgid") << getpid();
    uint32_t attach_raced[33] = {mine, kInvalidId};
    Control(s.ctl, s.client, s.client, kAttachIds, attach_raced, sizeof(attach_raced));
    std::ofstream(hook + "tgid") << 0;
    raced = NvsimGpuParam("gpu_attach_ids", 1) - race_before;
    EXPECT_EQ(raced, 0u) << "a sibling's store made the driver attach GPU 1";
  }
  leaks += static_cast<int>(raced);

  // A ctl file holding the other GPU open (nvidia_dev_get) until it closes.
  unsigned fd_refs = 0;
  {
    const int ctl = open(slot.ctl().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(ctl, 0);
    uint32_t ids[32] = {other};
    const Rc rc = RawIoctl(ctl, NV_ESC_ATTACH_GPUS_TO_FD, ids, sizeof(ids));
    fd_refs = NvsimGpuParam("gpu_fd_refs", 1);
    EXPECT_EQ(rc.ret, -1) << "ATTACH_GPUS_TO_FD of another GPU";
    EXPECT_EQ(rc.err, ENODEV);
    EXPECT_EQ(fd_refs, 0u) << "the driver holds GPU 1 open for the tenant's file";
    close(ctl);
    const int own = open(slot.ctl().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(own, 0);
    uint32_t own_ids[32] = {mine};
    EXPECT_EQ(RawIoctl(own, NV_ESC_ATTACH_GPUS_TO_FD, own_ids, sizeof(own_ids)).ret, 0);
    close(own);
  }
  leaks += static_cast<int>(fd_refs);

  // A device of GPU 1: the driver itself refuses it (no file of GPU 1 in the caller's fd table,
  // docs/nvidia-rm-abi.md §9.3.2), and so must the slot.
  nv0080_alloc_params dp{};
  dp.deviceId = 1;
  uint32_t dev1 = 0xd0000011;
  const int64_t dev_st = Alloc(s.ctl, s.client, s.client, &dev1, NV01_DEVICE_0, &dp);
  EXPECT_NE(dev_st, NV_OK) << "NV01_DEVICE_0 of GPU 1";
  leaks += dev_st == NV_OK;

  std::printf(
      "F11.3: slot on GPU 0 of 2: CARD_INFO entries %d, probed %zu (+%zu excluded), "
      "attached %zu, other GPU described %d/2, RM attaches of GPU 1 %u (+%u all, +%u raced), "
      "fd refs on GPU 1 %u, device of GPU 1 %s; leaks %d\n",
      card_entries, probed_ids.size(), excluded.size(), attached_ids.size(),
      (info_st == NV_OK) + (pci_st == NV_OK), rm_attaches, all_attaches, raced, fd_refs,
      dev_st == NV_OK ? "granted" : "refused", leaks);
}

// F11.3's residue, refused by policy (docs/security.md): NV_ESC_ATTACH_GPUS_TO_FD is an escape,
// and nvidia.ko copies its array from user memory itself (nv.c nvidia_ioctl), after the core
// checked its own copy; no memory of the caller's process is out of its siblings' reach, so a
// sibling's store can make the driver attach GPU 1 to the tenant's real ctl file. What that gives
// (nv.c, NV_ESC_ATTACH_GPUS_TO_FD): nvidia_dev_get opens GPU 1 for the file until it closes
// (initialised, "in use"); nothing else: the driver's device allocation wants a file of that GPU
// in the caller's fd table (nv_is_gpu_accessible, which matches a file's GPU, never a ctl file's
// attached list), and every RM path naming GPU 1 is refused by the core. nvsim's rewrite_attach
// hook lands the sibling's store every time (tests/vm/nvsim/nvsim_hook.c); each round asserts the
// attach happened (the residue, shown) and that nothing of GPU 1 is usable through that file, and
// that the hold ends with the file.
TEST(CallPath, AForeignGpuAttachedByARaceServesNothing) {
  uint32_t mine = 0, other = 0;
  ASSERT_EQ(NodeGpus(&mine, &other), "");
  ScopedSlot slot(64 * kMiB, "attachrace");
  ASSERT_TRUE(slot.ok());
  const uint64_t done = ReadNvsimParam("rewrite_attach_done");
  ASSERT_NE(done, ~0ull) << "nvsim has no rewrite_attach_* test hook";
  const unsigned refs_before = NvsimGpuParam("gpu_fd_refs", 1);
  constexpr int kRounds = 8;
  int won = 0, usable = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    ASSERT_TRUE(WriteNvsimParam("rewrite_attach_offset", 0) &&
                WriteNvsimParam("rewrite_attach_value", other) &&
                WriteNvsimParam("rewrite_attach_tgid", static_cast<uint64_t>(getpid())));
    uint32_t ids[32] = {mine};
    const Rc rc = RawIoctl(s.ctl, NV_ESC_ATTACH_GPUS_TO_FD, ids, sizeof(ids));
    WriteNvsimParam("rewrite_attach_tgid", 0);
    EXPECT_EQ(rc.ret, 0);
    const bool attached = NvsimGpuParam("gpu_fd_refs", 1) == refs_before + 1;
    won += attached;
    // Everything the file could do with GPU 1, through the proxy.
    nv0080_alloc_params dp{};
    dp.deviceId = 1;
    uint32_t dev1 = 0xd0000011;
    const bool device = Alloc(s.ctl, s.client, s.client, &dev1, NV01_DEVICE_0, &dp) == NV_OK;
    uint32_t info[8] = {other};
    const bool described =
        Control(s.ctl, s.client, s.client, kGetIdInfoV2, info, sizeof(info)) == NV_OK;
    uint32_t pci[3] = {other};
    const bool pci_read =
        Control(s.ctl, s.client, s.client, kGetPciInfo, pci, sizeof(pci)) == NV_OK;
    const unsigned rm_before = NvsimGpuParam("gpu_attach_ids", 1);
    uint32_t attach_other[33] = {other, kInvalidId};
    Control(s.ctl, s.client, s.client, kAttachIds, attach_other, sizeof(attach_other));
    const bool rm_attached = NvsimGpuParam("gpu_attach_ids", 1) != rm_before;
    uint32_t listed[32]{};
    Control(s.ctl, s.client, s.client, kGetAttachedIds, listed, sizeof(listed));
    const bool in_list = IdList(listed, 32) != std::vector<uint32_t>{mine};
    const std::vector<int64_t> cards = CardIds(s.ctl);
    const bool in_cards =
        cards.size() != 32u || std::count(cards.begin(), cards.end(), -1) != 31 || cards[0] != mine;
    EXPECT_FALSE(device) << "NV01_DEVICE_0 of GPU 1";
    EXPECT_FALSE(described) << "GET_ID_INFO_V2 of GPU 1";
    EXPECT_FALSE(pci_read) << "GET_PCI_INFO of GPU 1";
    EXPECT_FALSE(rm_attached) << "GPU_ATTACH_IDS of GPU 1 reached the driver";
    EXPECT_FALSE(in_list) << "GET_ATTACHED_IDS names GPU 1";
    EXPECT_FALSE(in_cards) << "CARD_INFO names GPU 1";
    usable += device + described + pci_read + rm_attached + in_list + in_cards;
  }
  EXPECT_EQ(ReadNvsimParam("rewrite_attach_done"), done + kRounds) << "nvsim made every rewrite";
  // The sessions are closed: the driver's hold on GPU 1 went with the files.
  const unsigned refs_after = NvsimGpuParam("gpu_fd_refs", 1);
  EXPECT_EQ(refs_after, refs_before) << "GPU 1 held open after the tenant's files closed";
  std::printf(
      "F11.3 residue: ATTACH_GPUS_TO_FD of the slot's GPU rewritten to GPU 1 in %d of %d rounds "
      "(the driver holds GPU 1 open for the file); ways GPU 1 was usable through that file: %d; "
      "fd refs on GPU 1 after the files closed: %u\n",
      won, kRounds, usable, refs_after - refs_before);
  EXPECT_EQ(won, kRounds) << "the residue is shown: the driver attached what the sibling wrote";
}

// The same race from a true sibling (nvsim's sibling_rm hook: another task on the caller's mm
// stores GPU 1's id into the array just before the driver copies it in). The module runs the
// escape from a sealed copy of its array (kmod/seal.c): the store never lands, GPU 1 is never
// attached (issue 17, F11.3's residue). The caller-side hook above still lands (the calling task
// may store into its own sealed copy; no user-space store is one) and is answered as shown there.
TEST(CallPath, SiblingCannotAttachAForeignGpu) {
  uint32_t mine = 0, other = 0;
  ASSERT_EQ(NodeGpus(&mine, &other), "");
  ScopedSlot slot(64 * kMiB, "attachsibling");
  ASSERT_TRUE(slot.ok());
  const uint64_t landed = ReadNvsimParam("sibling_rm_done");
  ASSERT_NE(landed, ~0ull) << "nvsim has no sibling_rm_* hook";
  const unsigned refs_before = NvsimGpuParam("gpu_fd_refs", 1);
  constexpr int kRounds = 8;
  int attached = 0;
  for (int round = 0; round < kRounds; ++round) {
    Session s;
    ASSERT_EQ(s.Open(slot.ctl(), slot.dev()), "");
    ASSERT_TRUE(ArmRmSibling(NV_ESC_ATTACH_GPUS_TO_FD, false, "0", std::to_string(other), false));
    uint32_t ids[32] = {mine};
    const Rc rc = RawIoctl(s.ctl, NV_ESC_ATTACH_GPUS_TO_FD, ids, sizeof(ids));
    WriteNvsimParam("sibling_rm_tgid", 0);
    EXPECT_EQ(rc.ret, 0);
    EXPECT_EQ(ids[0], mine) << "the caller's array comes back as it gave it";
    attached += NvsimGpuParam("gpu_fd_refs", 1) != refs_before;
  }
  const uint64_t stores = ReadNvsimParam("sibling_rm_done") - landed;
  std::printf(
      "F11.3 sibling: ATTACH_GPUS_TO_FD of the slot's GPU with a sibling storing GPU 1's id: %llu "
      "of %d stores landed, GPU 1 attached in %d rounds\n",
      static_cast<unsigned long long>(stores), kRounds, attached);
  EXPECT_EQ(stores, 0u) << "a task other than the caller stored into the array the driver reads";
  EXPECT_EQ(attached, 0) << "GPU 1 attached to the tenant's real ctl file";
  EXPECT_EQ(NvsimGpuParam("gpu_fd_refs", 1), refs_before);
}

}  // namespace
}  // namespace vgpu_test

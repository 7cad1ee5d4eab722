// Memory shared between two processes of ONE slot under the shim (issue 16 item 4): each process
// runs its own core, the slot's processes share the ledger (shim/preload/ledger.h). CUDA IPC with
// legacy handles and torch.multiprocessing make the importer RM_DUP_OBJECT the exporter's memory
// from the exporter's client, which the importer's core never saw: the shared ledger knows it is
// a client of the slot. The memory is charged once, to its owner, until its last reference goes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "shim/preload/ledger.h"
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

using shim::SharedLedger;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint32_t kOwnerPid = 4101, kImporterPid = 4102;

std::optional<uint64_t> FakeStart(pid_t pid) {
  if (pid == static_cast<pid_t>(kOwnerPid) || pid == static_cast<pid_t>(kImporterPid)) {
    return 1;
  }
  return std::nullopt;
}

// The shim's ledger ops (shim/preload/host.cc), over one SharedLedger per "process".
const vcore_ledger_ops kOps = {
    [](void* l, vcore_u64 b, vcore_u64 q) -> int {
      return static_cast<SharedLedger*>(l)->TryCharge(b, q) == 0 ? 0 : -VCORE_ENOSPC;
    },
    [](void* l, vcore_u64 b) { static_cast<SharedLedger*>(l)->ForceCharge(b); },
    [](void* l, vcore_u64 b) { static_cast<SharedLedger*>(l)->Uncharge(b); },
    [](void* l) -> vcore_u64 { return static_cast<SharedLedger*>(l)->Charged(); },
    [](void* l, vcore_u32 c, vcore_bool live) {
      static_cast<SharedLedger*>(l)->RecordClient(c, live != 0);
    },
    [](void* l, vcore_u32 c) -> vcore_bool {
      return static_cast<SharedLedger*>(l)->ClientOfOtherMember(c);
    },
    [](void* l, vcore_u32 c, vcore_u32 o, vcore_bool live) {
      static_cast<SharedLedger*>(l)->RecordDup(c, o, live != 0);
    },
    [](void* l, vcore_u32 c, vcore_u32 o, vcore_u64 b) -> vcore_bool {
      return static_cast<SharedLedger*>(l)->PassCharge(c, o, b);
    },
};

class SharedDupTest : public CoreTest {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/vcore-shared-dup.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    std::string err;
    owner_ledger_ = SharedLedger::Open(dir_ + "/ledger", &err, FakeStart);
    importer_ledger_ = SharedLedger::Open(dir_ + "/ledger", &err, FakeStart);
    ASSERT_TRUE(owner_ledger_ && importer_ledger_) << err;
    ASSERT_TRUE(owner_ledger_->Attach(kOwnerPid));
    ASSERT_TRUE(importer_ledger_->Attach(kImporterPid));
    owner_ = {&kOps, owner_ledger_.get()};
    importer_ = {&kOps, importer_ledger_.get()};
    // The owner's process: the fixture's slot. The importer's: a second core on the same ledger.
    MakeSlot(kQuota, VCORE_UNKNOWN_STRICT, &SimHost::kOps, &owner_);
    vcore_slot_config cfg{};
    cfg.id = 7;
    cfg.mem_quota_bytes = kQuota;
    snprintf(cfg.driver_version, sizeof cfg.driver_version, "580.159.04");
    int e = 0;
    other_ = vcore_slot_create(&SimHost::kOps, &host_, &cfg, &importer_, &e);
    ASSERT_NE(other_, nullptr) << e;
    other_ctl_ = vcore_file_open(other_, VCORE_FILE_CTL, nullptr);
  }
  void TearDown() override {
    vcore_slot_destroy(other_);
    CoreTest::TearDown();
    unlink((dir_ + "/ledger").c_str());
    rmdir(dir_.c_str());
  }
  // The importer's RM_DUP_OBJECT of (src_client, src_object) into its device.
  Outcome Dup(uint32_t client, uint32_t device, uint32_t h_new, uint32_t src_client,
              uint32_t src_object) {
    NVOS55_PARAMETERS p{client, device, h_new, src_client, src_object, 0, 0};
    Put(kArg, Bytes(p));
    return Call(Req(NV_ESC_RM_DUP_OBJECT, sizeof p), kArg, other_ctl_, kImporterPid);
  }
  Outcome FreeIn(vcore_file* f, uint32_t pid, uint32_t c, uint32_t parent, uint32_t obj) {
    NVOS00_PARAMETERS p{c, parent, obj, 0};
    Put(kArg, Bytes(p));
    return Call(Req(NV_ESC_RM_FREE, sizeof p), kArg, f, pid);
  }
  // The importer's client and device.
  void ImporterSession(uint32_t* client, uint32_t* device) {
    *client = AllocClient(other_ctl_);
    *device = 0x5c000001;
    ASSERT_EQ(Alloc(*client, *client, *device, NV01_DEVICE_0,
                    std::vector<uint8_t>(NV0080_ALLOC_PARAMETERS_SIZE), other_ctl_)
                  .verdict,
              VCORE_FORWARD);
  }

  static constexpr uint64_t kQuota = 64 * kMiB;
  std::string dir_;
  std::unique_ptr<SharedLedger> owner_ledger_, importer_ledger_;
  vcore_ledger owner_{}, importer_{};
  vcore_slot* other_ = nullptr;
  vcore_file* other_ctl_ = nullptr;
};

TEST_F(SharedDupTest, ADupOfAnotherProcessOfTheSlotIsLegalAndChargedOnceToItsOwner) {
  uint32_t c, d, s, ic, id;
  Session(&c, &d, &s);
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 8 * kMiB).verdict, VCORE_FORWARD);
  ImporterSession(&ic, &id);
  Outcome o = Dup(ic, id, 0x5c000099, c, 0x5c000010);
  EXPECT_EQ(o.verdict, VCORE_FORWARD) << "both processes are in the slot";
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 24), NV_OK);
  EXPECT_EQ(owner_ledger_->Charged(), 8 * kMiB) << "the dup is not a second charge";
  EXPECT_EQ(owner_ledger_->ChargedBy(kOwnerPid), 8 * kMiB) << "charged to its owner";
  EXPECT_EQ(owner_ledger_->ChargedBy(kImporterPid), 0u);

  // The owner lets go first: RM keeps the memory for the dup, so the charge stays in the slot.
  FreeIn(ctl_, kPid, c, d, 0x5c000010);
  EXPECT_EQ(owner_ledger_->Charged(), 8 * kMiB) << "the dup keeps the memory alive in RM";
  EXPECT_EQ(owner_ledger_->ChargedBy(kImporterPid), 8 * kMiB) << "it follows the last reference";
  // The last reference goes: so does the charge.
  FreeIn(other_ctl_, kImporterPid, ic, id, 0x5c000099);
  EXPECT_EQ(owner_ledger_->Charged(), 0u);
}

TEST_F(SharedDupTest, TheOwnersChargeEndsWithItsOwnFreeOnceTheDupIsGone) {
  uint32_t c, d, s, ic, id;
  Session(&c, &d, &s);
  ASSERT_EQ(AllocVidmem(c, d, 0x5c000010, 8 * kMiB).verdict, VCORE_FORWARD);
  ImporterSession(&ic, &id);
  ASSERT_EQ(Dup(ic, id, 0x5c000099, c, 0x5c000010).verdict, VCORE_FORWARD);
  vcore_file_close(other_ctl_);  // the importer exits: the driver drops its dup
  other_ctl_ = nullptr;
  EXPECT_EQ(owner_ledger_->Charged(), 8 * kMiB);
  FreeIn(ctl_, kPid, c, d, 0x5c000010);
  EXPECT_EQ(owner_ledger_->Charged(), 0u) << "no holder left: the owner's free refunds";
}

TEST_F(SharedDupTest, ADupFromAClientOfNoProcessOfTheSlotStaysRefused) {
  uint32_t c, d, s, ic, id;
  Session(&c, &d, &s);
  ImporterSession(&ic, &id);
  Outcome o = Dup(ic, id, 0x5c000099, 0xc1d0ffff, 0x5c000010);  // another slot's client
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(Get<uint32_t>(mem_, kArg + 24), NV_ERR_INSUFFICIENT_PERMISSIONS);
  // A client the owner freed is no longer the slot's.
  FreeIn(ctl_, kPid, c, 0, c);
  o = Dup(ic, id, 0x5c000098, c, 0x5c000010);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS) << "a freed client's handle may be reused by anyone";
}

}  // namespace
}  // namespace vgpu::core_test

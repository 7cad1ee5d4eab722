// The core's client ops (kmod/core/vcore.h, struct vcore_client_ops;
// docs/results/kmod-issue4-tamper.md): client records confirmed by the driver, objects only under
// such a client of the caller's file, frees that drop a record only when the driver no longer has
// the object, and a tampered file closed to calls. The kernel host answers through the driver's
// in-kernel entry and a node-wide handle registry (kmod/driver_query.c); here a fake driver record
// stands in for both, and the "sibling thread" is a store into the simulated user memory between
// vcore_pre and the driver's read, or between the driver's reply and vcore_post (as in
// trusted_test.cc). The guest suite runs the same races against nvsim
// (tests/vm/guest/vgpu/parts/vgpu_tamper.cc).
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

// What the driver holds, node-wide: clients (any tenant's), objects, and vgpu.ko's claims.
struct FakeDriver {
  std::set<uint32_t> clients;
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> objects;  // (client, object) -> vidmem bytes
  std::set<uint32_t> claims;
  uint32_t next_pick = 0xcb000001;
  std::vector<uint32_t> freed_clients;  // tampering frees; 0 = kill only
  int object_frees = 0;
};
FakeDriver* g_drv = nullptr;

int Claim(void*, vcore_u32* h) {
  uint32_t want = *h ? *h : g_drv->next_pick++;
  if (g_drv->claims.count(want) || g_drv->clients.count(want)) return -VCORE_EEXIST;
  g_drv->claims.insert(want);
  *h = want;
  return 0;
}
void Release(void*, vcore_u32 h) { g_drv->claims.erase(h); }
int Has(void*, vcore_u32 c, vcore_u32 o) {
  if (c == o) return g_drv->clients.count(c) ? 0 : -VCORE_ENOENT;
  return g_drv->objects.count({c, o}) ? 0 : -VCORE_ENOENT;
}
int DriverMemory(void*, vcore_u32 c, vcore_u32, vcore_u32 o, vcore_driver_mem* bytes) {
  if (!bytes && c == o) {
    g_drv->freed_clients.push_back(c);
    if (!c) return 0;
    g_drv->clients.erase(c);
    for (auto it = g_drv->objects.begin(); it != g_drv->objects.end();)
      it = it->first.first == c ? g_drv->objects.erase(it) : std::next(it);
    return 0;
  }
  if (!bytes) {
    ++g_drv->object_frees;
    return g_drv->objects.erase({c, o}) ? 0 : -5;
  }
  auto it = g_drv->objects.find({c, o});
  if (it == g_drv->objects.end()) return -VCORE_ENOENT;
  *bytes = {it->second, 0, 0, 0};
  return 0;
}

vcore_host_ops OpsWithDriver() {
  vcore_host_ops ops = SimHost::kOps;
  ops.driver_memory = DriverMemory;
  return ops;
}
const vcore_host_ops kOps = OpsWithDriver();
const vcore_client_ops kClientOps = {Claim, Release, Has};

class ClientOpsTest : public CoreTest {
 protected:
  void SetUp() override {
    g_drv = &drv_;
    MakeSlot(64 * kMiB, VCORE_UNKNOWN_STRICT, &kOps);
    vcore_slot_set_client_ops(slot_, &kClientOps);
  }
  void TearDown() override {
    CoreTest::TearDown();
    EXPECT_TRUE(drv_.claims.empty()) << "a claim outlived the slot";
    g_drv = nullptr;
  }

  // One RM_ALLOC (NVOS64) through pre, the driver and post. @between runs after vcore_pre, before
  // the driver reads the struct; @after after the driver's reply, before vcore_post. The driver
  // makes what it reads: a client (honouring a handle, else picking one), or an object under the
  // client it reads (16 MiB of vidmem for class 0x40).
  vcore_verdict RawAlloc(uint32_t h_root, uint32_t h_new, uint32_t cls,
                         const std::function<void()>& between = {},
                         const std::function<void()>& after = {}, vcore_file* file = nullptr) {
    NV_MEMORY_ALLOCATION_PARAMS m{};
    m.owner = h_root;
    m.flags = 0x1c101;
    m.alignment = 2 * kMiB;
    m.size = 16 * kMiB;
    NVOS64_PARAMETERS p{};
    p.hRoot = h_root;
    p.hObjectParent = h_root;
    p.hObjectNew = h_new;
    p.hClass = cls;
    p.pAllocParms = kParams;
    Put(kArg, Bytes(p));
    Put(kParams, Bytes(m));
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = nullptr;
    vcore_verdict v = vcore_pre(file ? file : ctl_, Req(NV_ESC_RM_ALLOC, 48), kArg, &ctx, &call);
    if (v == VCORE_FORWARD) {
      if (between) between();
      auto d = Get<NVOS64_PARAMETERS>(mem_, kArg);
      uint32_t st = NV_OK;
      if (d.hClass == NV01_ROOT_CLIENT) {
        if (d.hObjectNew && drv_.clients.count(d.hObjectNew)) {
          st = 0x19;
        } else {
          if (!d.hObjectNew) d.hObjectNew = 0xc1d00100 + static_cast<uint32_t>(drv_.clients.size());
          drv_.clients.insert(d.hObjectNew);
        }
      } else if (!drv_.clients.count(d.hRoot) || drv_.objects.count({d.hRoot, d.hObjectNew})) {
        st = 0x23;
      } else {
        drv_.objects[{d.hRoot, d.hObjectNew}] = d.hClass == NV01_MEMORY_LOCAL_USER ? 16 * kMiB : 0;
      }
      d.status = st;
      mem_.Write(kArg, &d, sizeof d);
      if (after) after();
    }
    EXPECT_EQ(vcore_post(call, 0), 0);
    return v;
  }
  uint32_t Status() { return Get<uint32_t>(mem_, kArg + 40); }
  uint32_t NewHandle() { return Get<uint32_t>(mem_, kArg + 8); }
  void Write32(uint64_t addr, uint32_t v) { mem_.Write(addr, &v, 4); }

  FakeDriver drv_;
};

TEST_F(ClientOpsTest, ADriverChosenClientHandleIsTheHostsAndConfirmed) {
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  EXPECT_EQ(Status(), NV_OK);
  const uint32_t c = NewHandle();
  EXPECT_EQ(c, 0xcb000001u) << "the host picked the handle and wrote it before the driver read";
  EXPECT_TRUE(drv_.clients.count(c));
  EXPECT_TRUE(drv_.claims.count(c)) << "the record holds the claim";
  // An object under it is accepted and charged the driver's size.
  ASSERT_EQ(RawAlloc(c, 0x100, NV01_MEMORY_LOCAL_USER), VCORE_FORWARD);
  EXPECT_EQ(Charged(), 16 * kMiB);
  EXPECT_TRUE(drv_.freed_clients.empty());
}

TEST_F(ClientOpsTest, AnotherTenantsClientHandleIsRefusedAsADuplicate) {
  drv_.clients.insert(0xc1d00042);  // another tenant's client
  EXPECT_EQ(RawAlloc(0, 0xc1d00042, NV01_ROOT_CLIENT), VCORE_REFUSE_STATUS);
  EXPECT_EQ(Status(), 0x19u) << "NV_ERR_INSERT_DUPLICATE_NAME, as the driver says";
  EXPECT_EQ(Stats().clients, 0u);
  EXPECT_TRUE(drv_.claims.empty()) << "the refused call's claim was released";
}

TEST_F(ClientOpsTest, ObjectUnderAnotherTenantsClientIsTampering) {
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  const uint32_t mine = NewHandle();
  drv_.clients.insert(0xc1d00042);        // another tenant's client...
  drv_.objects[{0xc1d00042, 0x700}] = 0;  // ...holding a VA range under 0x700
  // The private copy names the other client; the driver reads the tenant's own.
  ASSERT_EQ(RawAlloc(0xc1d00042, 0x700, NV01_MEMORY_LOCAL_USER, [&] { Write32(kArg, mine); }),
            VCORE_FORWARD);
  EXPECT_EQ(drv_.freed_clients, std::vector<uint32_t>{mine}) << "only the tenant's own client";
  EXPECT_TRUE(drv_.objects.count({0xc1d00042, 0x700})) << "the other tenant's object is intact";
  EXPECT_FALSE(drv_.objects.count({mine, 0x700})) << "what the driver made went with the client";
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 0u);
  EXPECT_EQ(Stats().overquota_events, 1u);
  EXPECT_TRUE(vcore_file_tampered(ctl_));
}

TEST_F(ClientOpsTest, AClientUnderAnotherHandleThanClaimedIsTamperingAndClosesTheFile) {
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  // A second client: the sibling turns the claimed handle into 0 before the driver reads it.
  ASSERT_EQ(RawAlloc(0, 0x5eed0001, NV01_ROOT_CLIENT, [&] { Write32(kArg + 8, 0); }),
            VCORE_FORWARD);
  EXPECT_EQ(Status(), NV_OK);
  EXPECT_EQ(Stats().clients, 0u) << "neither the claimed handle nor the driver's is recorded";
  EXPECT_EQ(drv_.freed_clients.size(), 1u) << "the file's confirmed client was freed";
  EXPECT_TRUE(vcore_file_tampered(ctl_));
  // Every later call through the file is refused, whatever it is.
  Outcome o = Control(0, 0, 0x0, {});
  EXPECT_EQ(o.verdict, VCORE_REFUSE_ERRNO);
  EXPECT_EQ(o.ret, -VCORE_ENODEV);
  EXPECT_FALSE(o.forwarded);
}

TEST_F(ClientOpsTest, AFailedStatusDoesNotHideAnObjectUnderTheFilesOtherClient) {
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  const uint32_t c1 = NewHandle();
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  const uint32_t c2 = NewHandle();
  // hRoot c1 -> c2 before the driver reads it, the status NV_OK -> NO_MEMORY after.
  ASSERT_EQ(RawAlloc(
                c1, 0x2300, NV01_MEMORY_LOCAL_USER, [&] { Write32(kArg, c2); },
                [&] { Write32(kArg + 40, NV_ERR_NO_MEMORY); }),
            VCORE_FORWARD);
  EXPECT_EQ(Stats().overquota_events, 1u) << "found under the other client: tampering";
  EXPECT_FALSE(drv_.objects.count({c2, 0x2300})) << "freed with the file's clients";
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(ClientOpsTest, AFreeDropsTheRecordOnlyWhenTheDriverNoLongerHasTheObject) {
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  const uint32_t c = NewHandle();
  ASSERT_EQ(RawAlloc(c, 0x100, NV01_MEMORY_LOCAL_USER), VCORE_FORWARD);
  ASSERT_EQ(Charged(), 16 * kMiB);
  // The fake RM answers every free NV_OK and frees nothing (a sibling pointed hObjectOld at a
  // handle the client does not have): the driver still holds the 16 MiB, so does the charge.
  Free(c, c, 0x100);
  EXPECT_EQ(Charged(), 16 * kMiB);
  EXPECT_EQ(Stats().objects, 2u);
  // The driver freed it, whatever the status says: the record goes, refunded.
  drv_.objects.erase({c, 0x100});
  Free(c, c, 0x100);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Stats().objects, 1u);
  // A client free releases the node-wide claim with the record.
  drv_.clients.erase(c);
  Free(c, c, c);
  EXPECT_EQ(Stats().clients, 0u);
  EXPECT_TRUE(drv_.claims.empty());
}

TEST_F(ClientOpsTest, WithoutTheDriversWordTheClientIsRecordedUnverified) {
  // A host whose claim cannot be answered (the in-kernel entry is not bound): as before.
  static const vcore_client_ops kCannotSay = {[](void*, vcore_u32*) { return -5; }, Release,
                                              [](void*, vcore_u32, vcore_u32) { return -5; }};
  vcore_slot_set_client_ops(slot_, &kCannotSay);
  ASSERT_EQ(RawAlloc(0, 0, NV01_ROOT_CLIENT), VCORE_FORWARD);
  const uint32_t c = NewHandle();
  EXPECT_EQ(Stats().clients, 1u);
  EXPECT_TRUE(drv_.claims.empty());
  ASSERT_EQ(RawAlloc(c, 0x100, NV01_MEMORY_LOCAL_USER), VCORE_FORWARD);
  EXPECT_EQ(Charged(), 16 * kMiB) << "an unverified client of this file is still its own";
  EXPECT_FALSE(vcore_file_tampered(ctl_));
}

}  // namespace
}  // namespace vgpu::core_test

// UVM's page tables per external mapping are charged to the slot (issue 17 F11.1,
// kmod/core/tables_580.c vcore_uvm_map_ptables, kmod/core/uvm_external.c): the worst case
// Hopper's tree can need for the span, reserved in pre (refused past the quota), refunded when
// the mapping's record goes; and a slot opens at most VCORE_SLOT_MAX_UVM_FILES UVM files.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "tests/unit/core/uvm_fixture.h"

extern "C" {
#include "kmod/core/vcore_internal.h"
}

namespace vgpu::core_test {
namespace {

constexpr uint64_t kKiB = 1024, kPage = 4 * kKiB;

// Figures by hand from Hopper's levels (a depth-1..4 directory covers 2^56, 2^47, 2^38 = 256 GiB
// and 2^29 = 512 MiB; a PTE table 2 MiB; each a 4 KiB page).
TEST(UvmPtables, TheEstimateCountsEveryLevelTheSpanTouches) {
  // 2 MiB inside one 2 MiB piece: one directory per depth and one PTE table.
  EXPECT_EQ(vcore_uvm_map_ptables(1ull << 40, 2 * kMiB), 5 * kPage);
  // 8 KiB across a 2 MiB edge: two PTE tables.
  EXPECT_EQ(vcore_uvm_map_ptables((1ull << 40) + 2 * kMiB - kPage, 2 * kPage), 6 * kPage);
  // ... across a 512 MiB edge: two depth-4 directories too.
  EXPECT_EQ(vcore_uvm_map_ptables((1ull << 40) + 512 * kMiB - kPage, 2 * kPage), 7 * kPage);
  // ... across a 256 GiB edge: two depth-3 directories too.
  EXPECT_EQ(vcore_uvm_map_ptables((1ull << 40) + 256 * kGiB - kPage, 2 * kPage), 8 * kPage);
  // ... across 2^56: two at every depth.
  EXPECT_EQ(vcore_uvm_map_ptables((1ull << 56) - kPage, 2 * kPage), 10 * kPage);
  // 1 GiB at a 1 GiB boundary: two depth-4 directories and 512 PTE tables.
  EXPECT_EQ(vcore_uvm_map_ptables(1ull << 40, kGiB), (3 + 2 + 512) * kPage);
  EXPECT_EQ(vcore_uvm_map_ptables(1ull << 40, 0), 0u);
  // The upper half of a canonical address space indexes the same tree: the same counts.
  EXPECT_EQ(vcore_uvm_map_ptables(0xffff800000000000ull, 2 * kMiB), 5 * kPage);
  // Never below what the H200 measured (docs/results/rm-internal-memory-h200.md): 4 KiB for a
  // 2 MiB mapping alone in its 1 GiB, 8 KiB alone in its 512 GiB.
  EXPECT_GE(vcore_uvm_map_ptables(3ull << 30, 2 * kMiB), 4 * kKiB);
  EXPECT_GE(vcore_uvm_map_ptables(3ull * 512 * kGiB, 2 * kMiB), 8 * kKiB);
  // The oracle the other tests use agrees.
  for (uint64_t va : {1ull << 40, (1ull << 47) - 2 * kMiB, 0x7f0000001000ull})
    for (uint64_t size : {kPage, 2 * kMiB, 60 * kMiB, 3 * kGiB})
      EXPECT_EQ(vcore_uvm_map_ptables(va, size), Pt(va, size)) << va << " " << size;
}

// What an honest process pays: libcuda maps every cuMemAlloc once (one external range, one map
// at a 2 MiB-aligned address; 2 MiB pages from 2 MiB up, which the core cannot see, so each is
// charged at 4 KiB pages): 16 KiB of directories plus 4 KiB per 2 MiB, and 4 KiB more for each
// 512 MiB edge crossed. The driver builds far less (directories are shared, 2 MiB pages need no
// PTE table): the charge is an upper bound, not what the GPU loses.
TEST(UvmPtables, WhatLibcudasAllocationsPay) {
  struct Row {
    const char* what;
    uint64_t va, size, count, want;
  } rows[] = {
      {"2 MiB", 0x7f0000000000ull, 2 * kMiB, 1, 20 * kKiB},
      {"64 MiB", 0x7f0000000000ull, 64 * kMiB, 1, (16 + 128) * kKiB},
      {"1 GiB (1 GiB aligned)", 0x7f0000000000ull, kGiB, 1, (20 + 2048) * kKiB},
      {"84 x 2 MiB (the corpus's largest process)", 0x7f0000000000ull, 2 * kMiB, 84,
       84 * 20 * kKiB},
  };
  for (const Row& r : rows) {
    uint64_t total = 0;
    for (uint64_t i = 0; i < r.count; ++i)
      total += vcore_uvm_map_ptables(r.va + i * r.size, r.size);
    std::printf("F11.1 honest cost: %s mapped: %llu KiB of page tables charged (%.3f %%)\n", r.what,
                static_cast<unsigned long long>(total / kKiB),
                100.0 * static_cast<double>(total) / static_cast<double>(r.size * r.count));
    EXPECT_EQ(total, r.want) << r.what;
  }
}

class UvmPageTablesTest : public UvmExternalTest {
 protected:
  static constexpr uint64_t kStride = 512 * kGiB, kBase = 1ull << 40;
  static constexpr uint32_t kFiller = kMem + 1;

  // One 2 MiB allocation created and mapped kStride apart until a map is refused: each granted
  // map is charged 20 KiB before UVM sees it; the refused one is never forwarded and charges
  // nothing. Returns how many were granted; *last is the refused map's outcome.
  uint64_t MapFarApartUntilRefused(UvmOutcome* last) {
    uint64_t granted = 0;
    for (;;) {
      const uint64_t va = kBase + granted * kStride, before = Charged();
      EXPECT_EQ(Create(va, 2 * kMiB).verdict, VCORE_FORWARD);
      const int forwarded = forwarded_;
      *last = Map(va, 2 * kMiB, kMem, {kGpuA});
      if (last->verdict != VCORE_FORWARD) {
        EXPECT_EQ(forwarded_, forwarded) << "UVM never saw it";
        EXPECT_EQ(Charged(), before) << "a refused map charges nothing";
        return granted;
      }
      EXPECT_EQ(Charged(), before + 20 * kKiB) << "map " << granted;
      if (Charged() != before + 20 * kKiB) return granted;
      ++granted;
    }
  }
};

// One 2 MiB allocation mapped 512 GiB apart on a 64 MiB slot that a 48 MiB allocation half fills
// (so the quota, not the page-table cap, is what runs out): each map is charged its page tables
// (20 KiB) before UVM sees it; the map that does not fit is answered NV_ERR_NO_MEMORY and never
// forwarded; UVM_FREE, UNMAP_EXTERNAL and the close refund exactly what each map charged.
TEST_F(UvmPageTablesTest, EachMapIsChargedAndThePastTheQuotaMapIsAnswered) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, 2 * kMiB).ret, 0);
  ASSERT_EQ(AllocVidmem(client_, device_, kFiller, 48 * kMiB).ret, 0);
  UvmOutcome last{};
  const uint64_t granted = MapFarApartUntilRefused(&last);
  EXPECT_EQ(last.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(last.status, NV_ERR_NO_MEMORY);
  EXPECT_EQ(granted, (kQuota - 50 * kMiB) / (20 * kKiB)) << "every byte of the quota used";
  ASSERT_LT(granted * 20 * kKiB, vcore_uvm_ptables_cap(kQuota)) << "the cap never came into it";
  EXPECT_GE(Stats().denied_quota, 1u);
  EXPECT_EQ(Stats().internal_charged_bytes, granted * 20 * kKiB);

  const uint64_t full = Charged();
  UvmFree(kBase, 2 * kMiB, NV_OK);
  EXPECT_EQ(Charged(), full - 20 * kKiB) << "UVM_FREE";
  Unmap(kBase + kStride, 2 * kMiB, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), full - 40 * kKiB) << "UNMAP_EXTERNAL";
  vcore_file_close(uvm_);
  uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  EXPECT_EQ(Charged(), 50 * kMiB) << "the close: the allocations' charges stay with their handles";
  EXPECT_EQ(Stats().internal_charged_bytes, 0u);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  ASSERT_EQ(Free(client_, device_, kFiller).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

// UVM gives a 2 MiB chunk of page tables back only when every table in it went
// (kmod/core/uvm_external.c), so a slot's page tables are capped below its quota: a 32nd of it,
// at least 16 MiB. On the 64 MiB slot the floor holds: 819 maps of 20 KiB fit in 16 MiB, the
// 820th is answered NV_ERR_NO_MEMORY with 46 MiB of the quota still free and is never
// forwarded; a UVM_FREE makes room for exactly one more; the close frees the whole cap.
TEST_F(UvmPageTablesTest, PageTablesPastTheSlotsCapAreAnsweredWithQuotaLeft) {
  EXPECT_EQ(vcore_uvm_ptables_cap(kQuota), 16 * kMiB) << "the floor";
  EXPECT_EQ(vcore_uvm_ptables_cap(4 * kGiB), 128 * kMiB) << "a 32nd";
  EXPECT_EQ(vcore_uvm_ptables_cap(141 * kGiB), 141 * kGiB / 32);

  ASSERT_EQ(AllocVidmem(client_, device_, kMem, 2 * kMiB).ret, 0);
  UvmOutcome last{};
  const uint64_t granted = MapFarApartUntilRefused(&last);
  EXPECT_EQ(granted, 16 * kMiB / (20 * kKiB));
  EXPECT_EQ(last.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(last.status, NV_ERR_NO_MEMORY);
  EXPECT_EQ(Charged(), 2 * kMiB + granted * 20 * kKiB);
  EXPECT_GT(kQuota - Charged(), 45 * kMiB) << "the cap, not the quota, answered";
  EXPECT_GE(Stats().denied_quota, 1u);

  UvmFree(kBase, 2 * kMiB, NV_OK);
  const uint64_t va = kBase + granted * kStride;
  EXPECT_EQ(Map(va, 2 * kMiB, kMem, {kGpuA}).verdict, VCORE_FORWARD) << "the free made room";
  EXPECT_EQ(Create(va + kStride, 2 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Map(va + kStride, 2 * kMiB, kMem, {kGpuA}).status, NV_ERR_NO_MEMORY) << "for one";

  vcore_file_close(uvm_);
  uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  EXPECT_EQ(Charged(), 2 * kMiB);
  ASSERT_EQ(Create(kBase, 2 * kMiB).verdict, VCORE_FORWARD);
  EXPECT_EQ(Map(kBase, 2 * kMiB, kMem, {kGpuA}).verdict, VCORE_FORWARD) << "the close freed it";
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
}

// A map repeated on the same span and GPU replaces UVM's mapping (one set of tables): one
// record, one charge. The object's charge passes to the hold when its handle goes, the page
// tables' never do: UVM_FREE refunds them while the handle's memory stays charged.
TEST_F(UvmPageTablesTest, ARepeatedMapIsChargedOnceAndThePageTablesNeverPassOn) {
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kSize).ret, 0);
  ASSERT_EQ(Map(kVa, kSize, kMem, {kGpuA}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Map(kVa, kSize, kMem, {kGpuA}).verdict, VCORE_FORWARD);
  EXPECT_EQ(Charged(), kSize + Pt(kVa, kSize));
  UvmFree(kVa, kSize, NV_OK);
  EXPECT_EQ(Charged(), kSize) << "the handle keeps its memory's charge only";
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

// A UVM file records at most VCORE_MAX_OBJECTS candidate ranges; the next create is refused
// with ENOSPC before UVM sees it, and a UVM_FREE of one makes room.
TEST_F(UvmPageTablesTest, ExternalRangesPerFileAreCapped) {
  for (uint64_t i = 0; i < VCORE_MAX_OBJECTS; ++i)
    ASSERT_EQ(Create(kVa + i * 0x1000, 0x1000).verdict, VCORE_FORWARD) << "range " << i;
  const int forwarded = forwarded_;
  const UvmOutcome o = Create(kVa + VCORE_MAX_OBJECTS * 0x1000ull, 0x1000);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_ERRNO);
  EXPECT_EQ(o.ret, -VCORE_ENOSPC);
  EXPECT_EQ(forwarded_, forwarded) << "UVM never saw it";
  UvmFree(kVa, 0x1000, NV_OK);
  EXPECT_EQ(Create(kVa + VCORE_MAX_OBJECTS * 0x1000ull, 0x1000).verdict, VCORE_FORWARD);
}

// VCORE_SLOT_MAX_UVM_FILES UVM files per slot, then EMFILE; RM files are not counted; a closed
// UVM file makes room.
TEST_F(UvmPageTablesTest, UvmFilesPerSlotAreCapped) {
  std::vector<vcore_file*> files;  // the fixture's uvm_ is the first
  int err = 0;
  for (uint32_t i = 1; i < VCORE_SLOT_MAX_UVM_FILES; ++i) {
    files.push_back(vcore_file_open_err(slot_, VCORE_FILE_UVM, nullptr, &err));
    ASSERT_NE(files.back(), nullptr) << "file " << i;
    EXPECT_EQ(err, 0);
  }
  EXPECT_EQ(vcore_file_open_err(slot_, VCORE_FILE_UVM, nullptr, &err), nullptr);
  EXPECT_EQ(err, -VCORE_EMFILE);
  EXPECT_EQ(vcore_file_open(slot_, VCORE_FILE_UVM, nullptr), nullptr);
  vcore_file* ctl = vcore_file_open_err(slot_, VCORE_FILE_CTL, nullptr, &err);
  EXPECT_NE(ctl, nullptr) << "an RM file is no UVM file";
  vcore_file_close(ctl);
  vcore_file_close(files.back());
  files.pop_back();
  files.push_back(vcore_file_open_err(slot_, VCORE_FILE_UVM, nullptr, &err));
  EXPECT_NE(files.back(), nullptr) << "a closed UVM file makes room";
  for (vcore_file* f : files) vcore_file_close(f);
}

// A caller killed while it waits for its UVM file's lock (the host's lock_file_killable, the
// kernel's mutex_lock_killable) gives up: the call is refused with EINTR before the core reads
// or records anything (the core's end step then unlocks nothing).
int g_killable_calls = 0;
int KilledWhileWaiting(void*) {
  ++g_killable_calls;
  return -VCORE_EINTR;
}

vcore_host_ops KillableOps() {
  vcore_host_ops ops = SimHost::kOps;
  ops.lock_file_killable = KilledWhileWaiting;
  return ops;
}
const vcore_host_ops kKillableOps = KillableOps();  // outlives the fixture's slot

TEST_F(CoreTest, AUvmCallKilledWhileWaitingForTheFilesLockIsRefused) {
  MakeSlot(kQuota, VCORE_UNKNOWN_STRICT, &kKillableOps);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_NE(uvm, nullptr);
  std::vector<uint8_t> cr(UVM_CREATE_EXTERNAL_RANGE_SIZE);
  const uint64_t span[2] = {kVa, kSize};
  std::memcpy(cr.data(), span, sizeof(span));
  Put(kArg, cr);
  g_killable_calls = 0;
  const Outcome o = Call(UVM_CREATE_EXTERNAL_RANGE, kArg, uvm);
  EXPECT_EQ(g_killable_calls, 1);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_ERRNO);
  EXPECT_EQ(o.ret, -VCORE_EINTR);
  EXPECT_FALSE(o.forwarded);
  vcore_file_close(uvm);
}

}  // namespace
}  // namespace vgpu::core_test

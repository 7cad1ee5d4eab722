// UVM external mappings keep their RM memory's charge while UVM holds a dup of it (issue 17 F3,
// kmod/core/uvm_external.c), and the holds go on what UVM guarantees after each call, never on
// the rmStatus read back: a sibling thread can store NV_OK there after UVM wrote a failure. Each
// call here runs pre, then "UVM" writes its status, then (when a test says so) a sibling
// overwrites it, then post: the order of the real race.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "tests/unit/core/uvm_fixture.h"

namespace vgpu::core_test {
namespace {

// The hole: UNMAP_EXTERNAL with a GPU the mapping is not on fails in UVM (NV_ERR_INVALID_DEVICE
// when unregistered; nothing of that GPU to unmap otherwise); a sibling's NV_OK made the core
// drop the hold, and RM_FREE then refunded memory UVM kept mapped.
TEST_F(UvmExternalTest, ForgedOkOnAnUnmapOfAnotherGpuKeepsTheHold) {
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa);
  ASSERT_EQ(Charged(), kSize + Pt(kVa, kSize));
  EXPECT_EQ(Unmap(kVa, kSize, kGpuB, NV_ERR_INVALID_DEVICE, /*forge_ok=*/true).status, NV_OK)
      << "the sibling's store landed";
  EXPECT_EQ(Charged(), kSize + Pt(kVa, kSize)) << "UVM still maps the memory on GPU A";
  EXPECT_EQ(AllocVidmem(client_, device_, kMem + 1, kQuota).verdict, VCORE_REFUSE_STATUS)
      << "and the quota counts it";
  Unmap(kVa, kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), 0u) << "the unmap on its GPU lets go";
}

// UVM_FREE of a span that is not exactly a range changes nothing (uvm_free:
// NV_ERR_INVALID_ADDRESS); a forged NV_OK must not drop the holds inside it.
TEST_F(UvmExternalTest, ForgedOkOnAFreeOfAPartOfARangeKeepsTheHold) {
  ASSERT_EQ(Create(kVa, 2 * kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa);
  UvmFree(kVa, kSize, NV_ERR_INVALID_ADDRESS, /*forge_ok=*/true);
  EXPECT_EQ(Charged(), kSize + Pt(kVa, kSize)) << "the range and its mapping are still there";
  UvmFree(kVa, 2 * kSize, NV_OK);
  EXPECT_EQ(Charged(), 0u) << "the free of the whole range lets go";
}

// libcuda's order: create, map, UVM_FREE, RM_FREE. Refunded at the RM_FREE, whatever status
// the tenant leaves in the UVM_FREE's reply: UVM destroyed the range either way.
TEST_F(UvmExternalTest, LibcudasOrderIsRefundedAtTheFreeWhateverTheStatus) {
  for (uint32_t round = 0; round < 3; ++round) {
    const uint32_t h = kMem + round;
    ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD) << "round " << round;
    ASSERT_EQ(AllocVidmem(client_, device_, h, kSize).ret, 0);
    ASSERT_EQ(Map(kVa, kSize, h, {kGpuA}).verdict, VCORE_FORWARD);
    // round 1: a sibling stores a failure over UVM's NV_OK
    UvmFree(kVa, kSize, round == 1 ? NV_ERR_INVALID_ADDRESS : NV_OK);
    EXPECT_EQ(Charged(), kSize) << "the handle still holds it";
    ASSERT_EQ(Free(client_, device_, h).ret, 0);
    EXPECT_EQ(Charged(), 0u) << "round " << round;
  }
}

// cuMemMap / cuMemUnmap (VMM): one range, mappings made and unmapped in it, the handle freed
// after each unmap; UVM_FREE at the end. Each unmap lets go of its mapping.
TEST_F(UvmExternalTest, VmmOrderIsRefundedAtEachUnmap) {
  ASSERT_EQ(Create(kVa, 4 * kSize).verdict, VCORE_FORWARD);
  for (uint32_t i = 0; i < 6; ++i) {
    const uint64_t va = kVa + (i % 4) * kSize;
    ASSERT_EQ(AllocVidmem(client_, device_, kMem + i, kSize).ret, 0);
    ASSERT_EQ(Map(va, kSize, kMem + i, {kGpuA}).verdict, VCORE_FORWARD);
    Unmap(va, kSize, kGpuA, NV_OK);
    ASSERT_EQ(Free(client_, device_, kMem + i).ret, 0);
    EXPECT_EQ(Charged(), 0u) << "mapping " << i;
  }
  MapAndFreeHandle(kMem + 10, kVa + kSize);
  EXPECT_EQ(Charged(), kSize + Pt(kVa + kSize, kSize));
  UvmFree(kVa, 4 * kSize, NV_OK);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(UvmExternalTest, AnOverlappingCreateIsAnsweredAsUvmAnswersIt) {
  ASSERT_EQ(Create(kVa, 2 * kSize).verdict, VCORE_FORWARD);
  const int before = forwarded_;
  UvmOutcome o = Create(kVa + kSize, 2 * kSize);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(o.ret, 0);
  EXPECT_EQ(o.status, NV_ERR_UVM_ADDRESS_IN_USE);
  EXPECT_EQ(forwarded_, before) << "UVM never saw it";
  EXPECT_EQ(Create(kVa - kSize, kSize).verdict, VCORE_FORWARD) << "adjacent is fine";
  EXPECT_EQ(Create(kVa + 2 * kSize + 1, kSize).verdict, VCORE_FORWARD)
      << "misaligned: UVM answers it, and no range is recorded";
  EXPECT_EQ(Map(kVa + 2 * kSize + 1, kSize, kMem, {kGpuA}).verdict, VCORE_FORWARD)
      << "misaligned map: UVM answers it";
  // After the range's UVM_FREE (whatever it says) its span is free again.
  UvmFree(kVa, 2 * kSize, NV_ERR_GENERIC);
  EXPECT_EQ(Create(kVa + kSize, 2 * kSize).verdict, VCORE_FORWARD);
}

// A map outside every range fails in UVM (NV_ERR_INVALID_ADDRESS): the core answers it and
// holds nothing, so RM_FREE refunds.
TEST_F(UvmExternalTest, AMapOutsideAnyRangeIsAnsweredAndHoldsNothing) {
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kSize).ret, 0);
  UvmOutcome o = Map(kVa, kSize, kMem, {kGpuA});
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(o.status, NV_ERR_INVALID_ADDRESS);
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  EXPECT_EQ(Map(kVa + kSize / 2, kSize, kMem, {kGpuA}).verdict, VCORE_REFUSE_STATUS)
      << "past the range's end";
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), 0u);
}

// A mapping across the unmap's start (here one with 2 MiB pages across a 4 KiB edge) stops
// UVM's walk before it destroys anything (uvm_ext_gpu_map_split fails): the mappings inside the
// span stay, and so must their holds, whatever the status says.
TEST_F(UvmExternalTest, AMappingAcrossTheUnmapsStartKeepsTheHoldsInside) {
  ASSERT_EQ(Create(kVa, 4 * kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa + kSize);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem + 1, 2 * kMiB).ret, 0);
  ASSERT_EQ(Map(kVa, kSize + 2 * kMiB, kMem + 1, {kGpuA}).verdict, VCORE_FORWARD);
  const uint64_t both = kSize + 2 * kMiB + Pt(kVa + kSize, kSize) + Pt(kVa, kSize + 2 * kMiB);
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuA, NV_ERR_INVALID_ADDRESS, /*forge_ok=*/true);
  EXPECT_EQ(Charged(), both);
  ASSERT_EQ(Free(client_, device_, kMem + 1).ret, 0);
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuB, NV_OK);
  EXPECT_EQ(Charged(), both) << "another GPU's unmap leaves GPU A's mappings";
  Unmap(kVa, 2 * kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), 0u) << "an unmap that covers both lets go";
}

// Without a quota a sparse map (no memory) and a map of an object the slot did not record are
// recorded (a sparse one across an unmap's start keeps the holds inside, as above). Under a
// quota a sparse map is answered NV_ERR_NOT_SUPPORTED, never forwarded; a map of an object this
// core did not record still goes (in shim mode an object imported from another process's export
// fd is recorded only in the exporter's core, and libcuda maps it).
TEST_F(UvmExternalTest, UnchargedMapsAreRecordedAndSparseOnesAnsweredUnderAQuota) {
  vcore_file_close(uvm_);
  MakeSlot(0);
  Session(&client_, &device_, &subdevice_);
  uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_EQ(Create(kVa, 4 * kSize).verdict, VCORE_FORWARD);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kSize).ret, 0);
  ASSERT_EQ(Map(kVa + kSize, kSize, kMem, {kGpuA}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Sparse(kVa, kSize + 0x100000, kGpuA).verdict, VCORE_FORWARD);
  ASSERT_EQ(Map(kVa + 3 * kSize, kSize, 0xdead0001, {kGpuA}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  // Each mapping is charged its page tables, the unrecorded one too (its memory is another
  // core's, its page tables this slot's).
  const uint64_t unrecorded = Pt(kVa + 3 * kSize, kSize);
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize + Pt(kVa + kSize, kSize) + Pt(kVa, kSize + 0x100000) + unrecorded)
      << "the sparse map across the start keeps the hold";
  Unmap(kVa, 2 * kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), unrecorded);

  vcore_file_close(uvm_);
  MakeSlot(kQuota);
  Session(&client_, &device_, &subdevice_);
  uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  ASSERT_EQ(Create(kVa, 4 * kSize).verdict, VCORE_FORWARD);
  const int before = forwarded_;
  UvmOutcome o = Sparse(kVa, kSize, kGpuA);
  EXPECT_EQ(o.verdict, VCORE_REFUSE_STATUS);
  EXPECT_EQ(o.status, NV_ERR_NOT_SUPPORTED);
  EXPECT_EQ(forwarded_, before) << "UVM never saw it";
  EXPECT_EQ(Map(kVa, kSize, 0xdead0001, {kGpuA}).verdict, VCORE_FORWARD)
      << "an object another process's core records (an import) maps";
  EXPECT_EQ(Charged(), Pt(kVa, kSize)) << "its page tables only";
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kSize).ret, 0);
  EXPECT_EQ(Map(kVa + kSize, kSize, kMem, {kGpuA}).verdict, VCORE_FORWARD)
      << "a recorded object maps";
}

// A map on several GPUs: the core keeps no per-GPU account, so only the range's UVM_FREE (or
// the file's close) lets go; a map repeated on another GPU is its own mapping.
TEST_F(UvmExternalTest, MapsOnSeveralGpusGoWithTheirRange) {
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem, kSize).ret, 0);
  ASSERT_EQ(Map(kVa, kSize, kMem, {kGpuA, kGpuB}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Free(client_, device_, kMem).ret, 0);
  EXPECT_EQ(Charged(), kSize + 2 * Pt(kVa, kSize)) << "page tables on each GPU";
  Unmap(kVa, kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize + 2 * Pt(kVa, kSize)) << "it may still be mapped on GPU B";
  UvmFree(kVa, kSize, NV_ERR_GENERIC);
  EXPECT_EQ(Charged(), 0u);

  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem + 1, kSize).ret, 0);
  ASSERT_EQ(Map(kVa, kSize, kMem + 1, {kGpuA}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Map(kVa, kSize, kMem + 1, {kGpuB}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Free(client_, device_, kMem + 1).ret, 0);
  Unmap(kVa, kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize + Pt(kVa, kSize)) << "still mapped on GPU B";
  Unmap(kVa, kSize, kGpuB, NV_OK);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(UvmExternalTest, TheFilesCloseLetsGoOfEverything) {
  ASSERT_EQ(Create(kVa, 2 * kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa);
  MapAndFreeHandle(kMem + 1, kVa + kSize);
  EXPECT_EQ(Charged(), 2 * kSize + Pt(kVa, kSize) + Pt(kVa + kSize, kSize));
  vcore_file_close(uvm_);
  uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  EXPECT_EQ(Charged(), 0u);
  EXPECT_EQ(Create(kVa, 2 * kSize).verdict, VCORE_FORWARD) << "a new file has no ranges";
}

// The file's external-range calls run one at a time from pre to post: a create cannot slip in
// between a UVM_FREE's driver call and its post (which would let the free's post drop what a
// newer range got, or the create be answered on a range already gone).
TEST_F(UvmExternalTest, CallsOfOneFileRunOneAtATime) {
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  Put(kArg, Span(24, kVa, kSize));
  vcore_call_ctx ctx{&mem_, kPid, kPid};
  vcore_call* free_call = nullptr;
  ASSERT_EQ(vcore_pre(uvm_, UVM_FREE, kArg, &ctx, &free_call), VCORE_FORWARD);
  SimMemory other;
  other.Map(kParams, Span(24, kVa, kSize));
  std::atomic<bool> done{false};
  vcore_verdict create_verdict = VCORE_REFUSE_ERRNO;
  std::thread sibling([&] {
    vcore_call_ctx c{&other, kPid, kPid + 1};
    vcore_call* call = nullptr;
    create_verdict = vcore_pre(uvm_, UVM_CREATE_EXTERNAL_RANGE, kParams, &c, &call);
    vcore_post(call, 0);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done) << "the create waits for the free's post";
  vcore_post(free_call, 0);
  sibling.join();
  EXPECT_EQ(create_verdict, VCORE_FORWARD) << "after the free the span is free";
}

}  // namespace
}  // namespace vgpu::core_test

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

#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

constexpr uint64_t kQuota = 64 * kMiB, kSize = 16 * kMiB;
constexpr uint64_t kVa = 0x7f0000000000ull;  // libcuda's VA arena lies up there
constexpr uint32_t kMem = 0xe3000001;
constexpr uint8_t kGpuA = 0xa0, kGpuB = 0xb0;  // last byte of two GPUs' uuids

using Uuid = std::array<uint8_t, VCORE_UVM_UUID_SIZE>;
Uuid Gpu(uint8_t last) {
  Uuid u{};
  u.fill(0x47);
  u[15] = last;
  return u;
}

struct UvmOutcome {
  vcore_verdict verdict;
  int ret;
  uint32_t status;  // the rmStatus the tenant reads afterwards
};

class UvmExternalTest : public CoreTest {
 protected:
  void SetUp() override {
    MakeSlot(kQuota);
    Session(&client_, &device_, &subdevice_);
    uvm_ = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
    ASSERT_NE(uvm_, nullptr);
  }
  void TearDown() override {
    vcore_file_close(uvm_);
    CoreTest::TearDown();
  }

  // One UVM call on params @p: UVM answers @uvm_status when the core forwards it, and a sibling
  // stores NV_OK over it afterwards when @forge_ok.
  UvmOutcome Uvm(uint32_t req, std::vector<uint8_t> p, uint32_t status_off, uint32_t uvm_status,
                 bool forge_ok = false) {
    Put(kArg, std::move(p));
    vcore_call_ctx ctx{&mem_, kPid, kPid};
    vcore_call* call = nullptr;
    UvmOutcome o{};
    o.verdict = vcore_pre(uvm_, req, kArg, &ctx, &call);
    if (o.verdict == VCORE_FORWARD) {
      ++forwarded_;
      mem_.Write(kArg + status_off, &uvm_status, sizeof uvm_status);
      if (forge_ok) {
        const uint32_t ok = NV_OK;
        mem_.Write(kArg + status_off, &ok, sizeof ok);
      }
    }
    o.ret = vcore_post(call, 0);
    o.status = Get<uint32_t>(mem_, kArg + status_off);
    return o;
  }
  static std::vector<uint8_t> Span(size_t size, uint64_t base, uint64_t length) {
    std::vector<uint8_t> p(size);
    memcpy(p.data(), &base, 8);
    memcpy(p.data() + 8, &length, 8);
    return p;
  }
  UvmOutcome Create(uint64_t base, uint64_t length, uint32_t uvm_status = NV_OK) {
    return Uvm(UVM_CREATE_EXTERNAL_RANGE, Span(24, base, length),
               UVM_CREATE_EXTERNAL_RANGE_RMSTATUS_OFF, uvm_status);
  }
  UvmOutcome Map(uint64_t base, uint64_t length, uint32_t h_memory, std::vector<uint8_t> gpus,
                 uint32_t uvm_status = NV_OK) {
    std::vector<uint8_t> p = Span(UVM_MAP_EXTERNAL_ALLOCATION_SIZE, base, length);
    for (size_t i = 0; i < gpus.size(); ++i) {
      const Uuid u = Gpu(gpus[i]);
      memcpy(
          p.data() + UVM_MAP_EXTERNAL_ALLOCATION_GPU_UUID_OFF + i * UVM_GPU_MAPPING_ATTRIBUTES_SIZE,
          u.data(), u.size());
    }
    const uint64_t count = gpus.size();
    memcpy(p.data() + UVM_MAP_EXTERNAL_ALLOCATION_COUNT_OFF, &count, 8);
    const int32_t no_fd = -1;
    memcpy(p.data() + UVM_MAP_EXTERNAL_ALLOCATION_COUNT_OFF + 8, &no_fd, 4);
    const uint32_t h[2] = {client_, h_memory};
    memcpy(p.data() + UVM_MAP_EXTERNAL_ALLOCATION_HCLIENT_OFF, h, 8);
    return Uvm(UVM_MAP_EXTERNAL_ALLOCATION, p, UVM_MAP_EXTERNAL_ALLOCATION_RMSTATUS_OFF,
               uvm_status);
  }
  UvmOutcome Sparse(uint64_t base, uint64_t length, uint8_t gpu) {
    std::vector<uint8_t> p = Span(40, base, length);
    const Uuid u = Gpu(gpu);
    memcpy(p.data() + UVM_UNMAP_EXTERNAL_GPU_UUID_OFF, u.data(), u.size());
    return Uvm(UVM_MAP_EXTERNAL_SPARSE, p, UVM_MAP_EXTERNAL_SPARSE_RMSTATUS_OFF, NV_OK);
  }
  UvmOutcome UvmFree(uint64_t base, uint64_t length, uint32_t uvm_status, bool forge_ok = false) {
    return Uvm(UVM_FREE, Span(24, base, length), UVM_FREE_RMSTATUS_OFF, uvm_status, forge_ok);
  }
  UvmOutcome Unmap(uint64_t base, uint64_t length, uint8_t gpu, uint32_t uvm_status,
                   bool forge_ok = false) {
    std::vector<uint8_t> p = Span(40, base, length);
    const Uuid u = Gpu(gpu);
    memcpy(p.data() + UVM_UNMAP_EXTERNAL_GPU_UUID_OFF, u.data(), u.size());
    return Uvm(UVM_UNMAP_EXTERNAL, p, UVM_UNMAP_EXTERNAL_RMSTATUS_OFF, uvm_status, forge_ok);
  }
  // An allocation mapped at [va, va + kSize) on GPU A, its handle then freed (the charge must
  // stay: UVM's dup holds the memory).
  void MapAndFreeHandle(uint32_t h, uint64_t va) {
    ASSERT_EQ(AllocVidmem(client_, device_, h, kSize).ret, 0);
    ASSERT_EQ(Map(va, kSize, h, {kGpuA}).verdict, VCORE_FORWARD);
    ASSERT_EQ(Free(client_, device_, h).ret, 0);
  }

  uint32_t client_ = 0, device_ = 0, subdevice_ = 0;
  vcore_file* uvm_ = nullptr;
  int forwarded_ = 0;
};

// The hole: UNMAP_EXTERNAL with a GPU the mapping is not on fails in UVM (NV_ERR_INVALID_DEVICE
// when unregistered; nothing of that GPU to unmap otherwise); a sibling's NV_OK made the core
// drop the hold, and RM_FREE then refunded memory UVM kept mapped.
TEST_F(UvmExternalTest, ForgedOkOnAnUnmapOfAnotherGpuKeepsTheHold) {
  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa);
  ASSERT_EQ(Charged(), kSize);
  EXPECT_EQ(Unmap(kVa, kSize, kGpuB, NV_ERR_INVALID_DEVICE, /*forge_ok=*/true).status, NV_OK)
      << "the sibling's store landed";
  EXPECT_EQ(Charged(), kSize) << "UVM still maps the memory on GPU A";
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
  EXPECT_EQ(Charged(), kSize) << "the range and its mapping are still there";
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
  EXPECT_EQ(Charged(), kSize);
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
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuA, NV_ERR_INVALID_ADDRESS, /*forge_ok=*/true);
  EXPECT_EQ(Charged(), kSize + 2 * kMiB);
  ASSERT_EQ(Free(client_, device_, kMem + 1).ret, 0);
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuB, NV_OK);
  EXPECT_EQ(Charged(), kSize + 2 * kMiB) << "another GPU's unmap leaves GPU A's mappings";
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
  Unmap(kVa + kSize - 0x1000, kSize + 0x1000, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize) << "the sparse map across the start keeps the hold";
  Unmap(kVa, 2 * kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), 0u);

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
  EXPECT_EQ(Charged(), 0u);
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
  Unmap(kVa, kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize) << "it may still be mapped on GPU B";
  UvmFree(kVa, kSize, NV_ERR_GENERIC);
  EXPECT_EQ(Charged(), 0u);

  ASSERT_EQ(Create(kVa, kSize).verdict, VCORE_FORWARD);
  ASSERT_EQ(AllocVidmem(client_, device_, kMem + 1, kSize).ret, 0);
  ASSERT_EQ(Map(kVa, kSize, kMem + 1, {kGpuA}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Map(kVa, kSize, kMem + 1, {kGpuB}).verdict, VCORE_FORWARD);
  ASSERT_EQ(Free(client_, device_, kMem + 1).ret, 0);
  Unmap(kVa, kSize, kGpuA, NV_OK);
  EXPECT_EQ(Charged(), kSize) << "still mapped on GPU B";
  Unmap(kVa, kSize, kGpuB, NV_OK);
  EXPECT_EQ(Charged(), 0u);
}

TEST_F(UvmExternalTest, TheFilesCloseLetsGoOfEverything) {
  ASSERT_EQ(Create(kVa, 2 * kSize).verdict, VCORE_FORWARD);
  MapAndFreeHandle(kMem, kVa);
  MapAndFreeHandle(kMem + 1, kVa + kSize);
  EXPECT_EQ(Charged(), 2 * kSize);
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

// The fixture of the UVM external-mapping tests (uvm_external_test.cc, uvm_ptables_test.cc):
// each call runs pre, then "UVM" writes its status, then (when a test says so) a sibling
// overwrites it, then post: the order of the real race.
#ifndef VGPU_TESTS_UNIT_CORE_UVM_FIXTURE_H_
#define VGPU_TESTS_UNIT_CORE_UVM_FIXTURE_H_

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {

inline constexpr uint64_t kQuota = 64 * kMiB, kSize = 16 * kMiB;

// The oracle of a mapping's page-table charge on one GPU (F11.1, kmod/core/tables_580.c
// vcore_uvm_map_ptables, whose figures uvm_ptables_test.cc checks by hand): a 4 KiB page per
// directory of Hopper's depths 1-4 and per 2 MiB PTE table that [va, va + size) touches.
inline uint64_t Pt(uint64_t va, uint64_t size) {
  const uint64_t last = va + size - 1;
  uint64_t pages = 0;
  for (unsigned shift : {56u, 47u, 38u, 29u, 21u}) pages += (last >> shift) - (va >> shift) + 1;
  return pages * 4096;
}
inline constexpr uint64_t kVa = 0x7f0000000000ull;  // libcuda's VA arena lies up there
inline constexpr uint32_t kMem = 0xe3000001;
inline constexpr uint8_t kGpuA = 0xa0, kGpuB = 0xb0;  // last byte of two GPUs' uuids

using Uuid = std::array<uint8_t, VCORE_UVM_UUID_SIZE>;
inline Uuid Gpu(uint8_t last) {
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

}  // namespace vgpu::core_test

#endif  // VGPU_TESTS_UNIT_CORE_UVM_FIXTURE_H_

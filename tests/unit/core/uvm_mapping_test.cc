// Managed memory: mappings of /dev/nvidia-uvm are charged their size under a quota (each bounds
// the managed range nvidia-uvm makes, vcore_uvm_map) and refunded as they go, libcuda's context
// mappings included (docs/nvidia-rm-abi.md §7; issue 17, F6).
#include "tests/unit/core/core_fixture.h"

namespace vgpu::core_test {
namespace {

constexpr uint64_t kCtx = VCORE_UVM_CONTEXT_MAPPING_BYTES;

TEST_F(CoreTest, UvmMappingsFollowTheManagedPolicy) {
  MakeSlot(0);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  uint64_t charged = 1;
  EXPECT_EQ(vcore_uvm_map(uvm, 64 * kMiB, &charged), 0) << "no quota: allowed, uncounted";
  EXPECT_EQ(charged, 0u);
  EXPECT_EQ(Charged(), 0u);
  vcore_file_close(uvm);

  MakeSlot(1 * kGiB);
  vcore_slot_config cfg{};
  cfg.mem_quota_bytes = 1 * kGiB;
  cfg.managed_policy = VCORE_MANAGED_ALLOW_UNCOUNTED;
  ASSERT_EQ(vcore_slot_update_config(slot_, &cfg), 0);
  uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  EXPECT_EQ(vcore_uvm_map(uvm, 64 * kMiB, &charged), 0) << "allow-uncounted";
  EXPECT_EQ(charged, 0u);
  EXPECT_EQ(Charged(), 0u);
  vcore_file* ctl = vcore_file_open(slot_, VCORE_FILE_CTL, nullptr);
  EXPECT_EQ(vcore_uvm_map(ctl, kCtx, &charged), -VCORE_EINVAL) << "not a UVM file";
  EXPECT_EQ(vcore_uvm_map(nullptr, kCtx, &charged), -VCORE_EINVAL);
  vcore_file_close(ctl);
  vcore_file_close(uvm);
}

// Every context maps 2 MiB: charged, not refused (before, the policy allowed one mapping per
// process and refused managed memory after it, so a second CUDA context failed).
TEST_F(CoreTest, SecondContextMappingIsChargedToTheQuota) {
  MakeSlot(8 * kMiB);  // quota: the managed policy defaults to "refuse"
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  uint64_t first = 0, second = 0, third = 0, fourth = 0;
  EXPECT_EQ(vcore_uvm_map(uvm, kCtx, &first), 0) << "the primary context's mapping";
  EXPECT_EQ(first, kCtx) << "is charged like any";
  EXPECT_EQ(vcore_uvm_map(uvm, kCtx, &second), 0) << "a second context's";
  EXPECT_EQ(second, kCtx);
  EXPECT_EQ(Charged(), 2 * kCtx);
  EXPECT_EQ(vcore_uvm_map(uvm, 2 * kMiB, &third), 0) << "managed memory, any size that fits";
  EXPECT_EQ(Charged(), 6 * kMiB);
  EXPECT_EQ(vcore_uvm_map(uvm, 4 * kMiB, &fourth), -VCORE_ENOMEM) << "over the quota";
  EXPECT_EQ(fourth, 0u);
  EXPECT_EQ(Charged(), 6 * kMiB) << "a refusal charges nothing";
  EXPECT_EQ(Stats().denied_quota, 1u);
  // The host reports a mapping's end, in pieces when it is unmapped in pieces.
  vcore_uvm_unmap(uvm, 1 * kMiB);
  EXPECT_EQ(Charged(), 5 * kMiB);
  vcore_uvm_unmap(uvm, 3 * kMiB);
  EXPECT_EQ(Charged(), 2 * kMiB);
  EXPECT_EQ(vcore_uvm_map(uvm, 4 * kMiB, &fourth), 0) << "fits again";
  EXPECT_EQ(Charged(), 6 * kMiB);
  EXPECT_EQ(Stats().charged_peak_bytes, 6 * kMiB);
  EXPECT_EQ(Stats().uvm_mmap_refused, 0u) << "nothing refused by the policy itself";
  // Closing the file refunds what its mappings still hold, and nothing more.
  vcore_file* other = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  uint64_t kept = 0;
  EXPECT_EQ(vcore_uvm_map(other, 1 * kMiB, &kept), 0);
  EXPECT_EQ(Charged(), 7 * kMiB);
  vcore_file_close(uvm);
  EXPECT_EQ(Charged(), 1 * kMiB) << "the other file's mapping stays charged";
  vcore_uvm_unmap(other, 4 * kMiB);
  EXPECT_EQ(Charged(), 0u) << "an end reported larger than the charge refunds only the charge";
  vcore_file_close(other);
}

// What has no size to charge is still refused under the policy: UVM migration and populate.
TEST_F(CoreTest, UvmMigrationIsRefusedWhereMappingsAreCharged) {
  MakeSlot(8 * kMiB);
  vcore_file* uvm = vcore_file_open(slot_, VCORE_FILE_UVM, nullptr);
  Put(kArg, std::vector<uint8_t>(256));
  EXPECT_EQ(Call(UVM_MIGRATE, kArg, uvm).ret, -VCORE_EPERM);
  EXPECT_EQ(Stats().uvm_mmap_refused, 1u);
  vcore_file_close(uvm);
}

}  // namespace
}  // namespace vgpu::core_test

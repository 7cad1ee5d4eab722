// The ABI tables: every escape of nvidia-rm-abi.md §2 with its size, and the parent + delta
// lookup a later driver branch uses (STYLE.md §2).
#include <gtest/gtest.h>

// Delta rows name only the fields they set, as the C tables do.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

extern "C" {
#include "kmod/core/abi/classes.h"
#include "kmod/core/abi/ctrl.h"
#include "kmod/core/abi/nv_escape.h"
#include "kmod/core/vcore_internal.h"
}

namespace {

TEST(Tables580, EveryEscapeOfTheBranchWithItsSize) {
  struct {
    uint32_t nr, size;
  } want[] = {{0x27, 56},  {0x28, 20}, {0x29, 16},   {0x2a, 32}, {0x2b, 48}, {0x34, 28}, {0x35, 24},
              {0x39, 32},  {0x41, 56}, {0x4a, 184},  {0x4d, 72}, {0x4e, 56}, {0x4f, 32}, {0x52, 16},
              {0x54, 56},  {0x57, 64}, {0x58, 48},   {0x59, 16}, {0x5e, 40}, {0xc8, 72}, {0xc9, 4},
              {0xce, 16},  {0xcf, 16}, {0xd1, 12},   {0xd2, 72}, {0xd4, 4},  {0xd5, 8},  {0xd6, 8},
              {0xd7, 560}, {0xd8, 4},  {0xd9, 2608}, {0xda, 8}};
  for (auto w : want) {
    const vcore_esc_row* row = vcore_abi_esc(&vcore_abi_580, w.nr);
    ASSERT_NE(row, nullptr) << std::hex << w.nr;
    EXPECT_EQ(row->size, w.size) << row->name;
  }
  EXPECT_EQ(vcore_abi_esc(&vcore_abi_580, NV_ESC_RM_ALLOC)->alt_size, 32u) << "NVOS21";
  EXPECT_EQ(vcore_abi_esc(&vcore_abi_580, 0x60), nullptr);
  EXPECT_EQ(vcore_abi_class(&vcore_abi_580, NV01_MEMORY_LOCAL_USER)->kind, VCORE_CLS_VIDMEM);
  EXPECT_EQ(vcore_abi_class(&vcore_abi_580, NV50_MEMORY_VIRTUAL)->kind, VCORE_CLS_VA_RANGE);
  EXPECT_EQ(vcore_abi_ctrl(&vcore_abi_580, NV2080_CTRL_CMD_FB_GET_INFO_V2)->size, 1028u);
}

// A made-up next branch: drops an escape, changes a control's size, adds a class.
const vcore_esc_row kEscDelta[] = {
    {.nr = NV_ESC_RM_CONFIG_GET, .flags = VCORE_ESC_REMOVED, .name = "removed in 595"},
};
const vcore_ctrl_row kCtrlDelta[] = {
    {.cmd = NV2080_CTRL_CMD_GPU_GET_PIDS, .size = 4000, .name = "bigger"},
    {.cmd = NV2080_CTRL_CMD_GR_GET_INFO, .flags = VCORE_CTRL_REMOVED, .name = "gone"},
};
const vcore_class_row kClsDelta[] = {
    {0xd06f, NV_CHANNEL_ALLOC_PARAMS_SIZE, VCORE_CLS_CHANNEL, "NEXT_CHANNEL_GPFIFO_A"},
};
const vcore_abi kNext = {.name = "next",
                         .parent = &vcore_abi_580,
                         .esc = kEscDelta,
                         .n_esc = 1,
                         .ctrl = kCtrlDelta,
                         .n_ctrl = 2,
                         .cls = kClsDelta,
                         .n_cls = 1};

TEST(TablesDelta, AChildOverridesRemovesAndInherits) {
  EXPECT_EQ(vcore_abi_esc(&kNext, NV_ESC_RM_CONFIG_GET), nullptr);
  EXPECT_NE(vcore_abi_esc(&vcore_abi_580, NV_ESC_RM_CONFIG_GET), nullptr);
  EXPECT_EQ(vcore_abi_esc(&kNext, NV_ESC_RM_ALLOC), vcore_abi_esc(&vcore_abi_580, NV_ESC_RM_ALLOC));
  EXPECT_EQ(vcore_abi_ctrl(&kNext, NV2080_CTRL_CMD_GPU_GET_PIDS)->size, 4000u);
  EXPECT_EQ(vcore_abi_ctrl(&kNext, NV2080_CTRL_CMD_GR_GET_INFO), nullptr);
  EXPECT_NE(vcore_abi_ctrl(&kNext, NV2080_CTRL_CMD_FB_GET_INFO_V2), nullptr);
  EXPECT_EQ(vcore_abi_class(&kNext, 0xd06f)->kind, VCORE_CLS_CHANNEL);
  EXPECT_EQ(vcore_abi_class(&vcore_abi_580, 0xd06f), nullptr);
  EXPECT_EQ(vcore_abi_for_version("580.173.02"), &vcore_abi_580);
  EXPECT_EQ(vcore_abi_for_version("590.44.01"), nullptr);
}

}  // namespace

// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * NOT A DRIVER BRANCH: a made-up branch for tests only (delta_branch.h). Its
 * rows are written exactly as a real branch's delta file would be: only what
 * changed against the parent, numbers from the branch's headers (here
 * delta_branch.h), sizes from the params structs.
 */
#include "delta_branch.h"
#include "abi/classes.h"
#include "abi/ctrl.h"
#include "vcore_internal.h"

/* GET_PIDS as the made-up branch lays it out: 8 bytes appended. */
typedef struct DELTA_TEST_GET_PIDS_PARAMS {
  NV2080_CTRL_GPU_GET_PIDS_PARAMS v580;
  vcore_u8 appended[DELTA_TEST_GET_PIDS_EXTRA];
} DELTA_TEST_GET_PIDS_PARAMS;

static const struct vcore_ctrl_row ctrl_delta_test[] = {
    {.cmd = NV2080_CTRL_CMD_FB_GET_INFO_V2,
     .flags = VCORE_CTRL_REMOVED,
     .name = "NV2080_CTRL_CMD_FB_GET_INFO_V2 (renumbered)"},
    {.cmd = DELTA_TEST_CTRL_FB_GET_INFO_V2,
     .size = sizeof(NV2080_CTRL_FB_GET_INFO_V2_PARAMS),
     .flags = VCORE_CTRL_VIEW(VCORE_VIEW_FB_INFO_V2),
     .name = "DELTA_TEST_CTRL_FB_GET_INFO_V2",
     .params = "NV2080_CTRL_FB_GET_INFO_V2_PARAMS"},
    {.cmd = NV2080_CTRL_CMD_GPU_GET_PIDS,
     .size = sizeof(DELTA_TEST_GET_PIDS_PARAMS),
     .pre = vcore_ctrl_get_pids,
     .name = "NV2080_CTRL_CMD_GPU_GET_PIDS",
     .params = "DELTA_TEST_GET_PIDS_PARAMS"},
};

static const struct vcore_class_row cls_delta_test[] = {
    {DELTA_TEST_CLASS_TSG, sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS), VCORE_CLS_TSG,
     "DELTA_TEST_CLASS_TSG", "NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", DELTA_TEST_TSG_INTERNAL},
    {DELTA_TEST_CLASS_CHANNEL, sizeof(NV_CHANNEL_ALLOC_PARAMS), VCORE_CLS_CHANNEL,
     "DELTA_TEST_CLASS_CHANNEL", "NV_CHANNEL_ALLOC_PARAMS", DELTA_TEST_CHANNEL_INTERNAL},
};

static const struct vcore_abi vcore_abi_delta_test = {
    .name = "999 (test delta, not a driver branch)",
    .parent = &vcore_abi_580,
    .ctrl = ctrl_delta_test,
    .n_ctrl = VCORE_ARRAY_SIZE(ctrl_delta_test),
    .cls = cls_delta_test,
    .n_cls = VCORE_ARRAY_SIZE(cls_delta_test),
};

/* Linked in: the branch answers driver versions 999.x. */
__attribute__((constructor)) static void delta_test_register(void) {
  vcore_abi_add_branch(DELTA_TEST_MAJOR, &vcore_abi_delta_test);
}

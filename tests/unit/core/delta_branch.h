/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * NOT A DRIVER BRANCH: made-up numbers for tests only. No NVIDIA driver has
 * them.
 *
 * delta_branch.c defines a driver branch "999" as a delta over the 580 tables,
 * the way a real next branch is added (kmod/core/tables_580.c, top comment;
 * docs/nvidia-rm-abi.md, "Adding a driver branch"): FB_GET_INFO_V2 under a new
 * control number (the old one removed), GET_PIDS with a larger params struct,
 * and a TSG class and a GPFIFO channel class under new numbers. Tests run the
 * core's hosts, unchanged, over it (tests/unit/core/delta_branch_test.cc, the
 * shim's in tests/unit/shim/shim_preload_test.cc): what the hosts do follows
 * the tables alone. Linking delta_branch.c registers the branch
 * (vcore_abi_add_branch) for driver versions 999.x.
 */
#ifndef VGPU_TESTS_DELTA_BRANCH_H
#define VGPU_TESTS_DELTA_BRANCH_H

#define DELTA_TEST_MAJOR 999
#define DELTA_TEST_VERSION "999.0.1-test"

/* NV2080_CTRL_CMD_FB_GET_INFO_V2's params under another number. */
#define DELTA_TEST_CTRL_FB_GET_INFO_V2 0x20801393u
/* NV2080_CTRL_CMD_GPU_GET_PIDS with 8 bytes more params. */
#define DELTA_TEST_GET_PIDS_EXTRA 8u
/* KEPLER_CHANNEL_GROUP_A's and a GPFIFO channel's rows under new numbers. */
#define DELTA_TEST_CLASS_TSG 0x0000d06cu
#define DELTA_TEST_CLASS_CHANNEL 0x0000d06fu
/* Their RM-internal memory estimates (a branch's own, unlike the 580 ones). */
#define DELTA_TEST_TSG_INTERNAL (3u << 20)
#define DELTA_TEST_CHANNEL_INTERNAL (128u << 10)

#endif /* VGPU_TESTS_DELTA_BRANCH_H */

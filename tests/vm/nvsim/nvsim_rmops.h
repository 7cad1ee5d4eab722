/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-kernel RM entry point of nvsim, shaped like nvidia.ko's nvidia_get_rm_ops()
 * (docs/nvidia-rm-abi.md §6.3: EXPORT_SYMBOL_GPL, the caller's version string must equal
 * NV_VERSION_STRING exactly, .op runs RM calls on kernel buffers with kernel privilege, so the
 * strict client-ownership check is skipped). vgpu.ko's in-kernel control path (e.g. SET_TIMESLICE
 * or GPFIFO_SCHEDULE on a tenant's TSG from its own thread) can be tested against nvsim with it.
 *
 * Differences from the real header (nv-modeset-interface.h, not vendored here): members nvsim
 * does not provide are untyped placeholders kept for position, and nvidia_kernel_rmapi_ops_t.op
 * holds the escape number of the call (NV_ESC_RM_FREE / _ALLOC / _CONTROL).
 */
#ifndef NVSIM_RMOPS_H
#define NVSIM_RMOPS_H

#include "nvsim_abi.h"

typedef struct nvidia_stack_s nvidia_stack_t;

typedef struct {
	__u32 op; /* NV_ESC_RM_FREE, NV_ESC_RM_ALLOC (NVOS64 form) or NV_ESC_RM_CONTROL */
	union {
		struct nvos00 free;
		struct nvos64 alloc;
		struct nvos54 control; /* .params is a kernel pointer */
	} params;
} nvidia_kernel_rmapi_ops_t;

typedef struct {
	const char *version_string;
	void *system_info;
	int (*alloc_stack)(nvidia_stack_t **sp);
	void (*free_stack)(nvidia_stack_t *sp);
	void *enumerate_gpus;
	void *open_gpu;
	void *close_gpu;
	void (*op)(nvidia_stack_t *sp, nvidia_kernel_rmapi_ops_t *ops);
	void *set_callbacks;
} nvidia_modeset_rm_ops_t;

/* Returns NV_OK and fills *rm_ops, or NV_ERR_GENERIC with version_string set to nvsim's. */
int nvidia_get_rm_ops(nvidia_modeset_rm_ops_t *rm_ops);

#endif /* NVSIM_RMOPS_H */

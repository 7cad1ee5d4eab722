/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-kernel RM entry point of nvsim, shaped like nvidia.ko's nvidia_get_rm_ops()
 * (docs/nvidia-rm-abi.md §6.3: EXPORT_SYMBOL_GPL, the caller's version string must equal
 * NV_VERSION_STRING exactly, .op runs RM calls on kernel buffers with kernel privilege, so the
 * strict client-ownership check is skipped). vgpu.ko's in-kernel control path (e.g. SET_TIMESLICE
 * or GPFIFO_SCHEDULE on a tenant's TSG from its own thread) can be tested against nvsim with it.
 *
 * As the real headers (nv-modeset-interface.h, nv-kernel-rmapi-ops.h; not vendored here) have
 * them: nvidia_kernel_rmapi_ops_t.op holds the RM function number (NV01_FREE, NV04_ALLOC with
 * NVOS64 params, NV04_CONTROL; nvos.h), not the ioctl escape, so vgpu.ko's in-kernel client
 * issues exactly what it issues to nvidia.ko. Differences: members nvsim does not provide are
 * untyped placeholders kept for position, and the params union carries only the three members
 * nvsim serves plus room for the real union's larger ones.
 */
#ifndef NVSIM_RMOPS_H
#define NVSIM_RMOPS_H

#include "nvsim_abi.h"

typedef struct nvidia_stack_s nvidia_stack_t;

typedef struct {
	__u32 op; /* NV01_FREE, NV04_ALLOC (NVOS64 form) or NV04_CONTROL */
	union {
		struct nvos00 free;
		struct nvos64 alloc;
		struct nvos54 control; /* .params is a kernel pointer */
		__u8 room[256];
	} params;
} nvidia_kernel_rmapi_ops_t;

typedef struct {
	const char *version_string;
	struct {
		__u8 allow_write_combining; /* NvBool */
	} system_info;
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

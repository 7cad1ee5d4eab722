/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel host's answer to the core's driver_memory op (kmod/core/vcore.h):
 * what the driver itself says a tenant's new memory object holds, and freeing
 * it when that is past the quota. trusted.c.
 */
#ifndef VGPU_KMOD_TRUSTED_H
#define VGPU_KMOD_TRUSTED_H

#include "core/vcore_types.h"

int vgpu_trusted_driver_memory(void *priv, vcore_u32 h_client,
			       vcore_u32 h_parent, vcore_u32 h_object,
			       vcore_u64 *bytes);

#endif /* VGPU_KMOD_TRUSTED_H */

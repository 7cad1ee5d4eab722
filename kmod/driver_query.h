/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel host's answer to the core's driver_memory op (kmod/core/vcore.h):
 * what the driver itself says a tenant's new memory object holds (video and
 * system memory), and freeing it when that is past the quota or the system
 * memory budget. driver_query.c.
 */
#ifndef VGPU_KMOD_DRIVER_QUERY_H
#define VGPU_KMOD_DRIVER_QUERY_H

#include "core/vcore_types.h"

struct vcore_driver_mem;

int vgpu_trusted_driver_memory(void *priv, vcore_u32 h_client,
			       vcore_u32 h_parent, vcore_u32 h_object,
			       struct vcore_driver_mem *bytes);
/* The core's driver_class op (vcore.h): the class the driver made any object
 * as (issue 17, F11.1). */
int vgpu_trusted_driver_class(void *priv, vcore_u32 h_client,
			      vcore_u32 h_object, vcore_u32 *cls);
/* The core's client ops (vcore.h): node-wide client handle claims and the
 * driver's word on an object's existence. */
int vgpu_trusted_client_claim(void *priv, vcore_u32 *h_client);
void vgpu_trusted_client_release(void *priv, vcore_u32 h_client);
int vgpu_trusted_driver_has(void *priv, vcore_u32 h_client, vcore_u32 h_object);
int vgpu_trusted_control_copy(void *priv, vcore_u32 h_client,
			      vcore_u32 h_object, vcore_u32 cmd, void *params,
			      vcore_u32 size, vcore_u32 *status);
void vgpu_trusted_exit(void);

#endif /* VGPU_KMOD_DRIVER_QUERY_H */

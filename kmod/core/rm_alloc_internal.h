/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * rm_alloc_internal.h - what the allocation escapes' three files share:
 * rm_alloc.c (pre steps, reservation), rm_alloc_post.c (settle and record)
 * and rm_alloc_verify.c (the driver's word). The escape handlers and post
 * steps that the tables and vcore_post call are in vcore_tables.h.
 */
#ifndef VCORE_RM_ALLOC_INTERNAL_H
#define VCORE_RM_ALLOC_INTERNAL_H

#include "vcore_internal.h"
#include "abi/classes.h"

static inline vcore_u64 round_up(vcore_u64 v, vcore_u64 align)
{
	vcore_u64 r = (v + align - 1) & ~(align - 1);

	return r < v ? ~(align - 1) : r; /* saturate on overflow */
}

static inline vcore_bool is_root_class(vcore_u32 cls)
{
	return cls == NV01_ROOT || cls == NV01_ROOT_NON_PRIV ||
	       cls == NV01_ROOT_CLIENT;
}

/* The handle the caller chose for a new object (0: the driver chooses). */
static inline vcore_u32 private_handle(const struct vcore_call *call)
{
	return vcore_rd32(call->argbuf, call->reply_handle_from_buf
						? NVOS32_ALLOCSIZE_HMEMORY_OFF
						: 8);
}

/* rm_alloc_verify.c: the driver's word (docs/results/kmod-issue4-tamper.md) */
vcore_bool vcore_own_client(struct vcore_call *call, vcore_u32 h_client);
vcore_u32 vcore_created_despite_status(struct vcore_call *call,
				       vcore_u32 h_client,
				       struct vcore_driver_mem *bytes);
int vcore_deny_after_alloc(struct vcore_call *call, vcore_u32 h_client,
			   vcore_u32 h_object, vcore_u64 bytes);
void vcore_tampered(struct vcore_call *call, vcore_u32 h_client,
		    vcore_u32 h_object, const char *why);
int vcore_confirm_client(struct vcore_call *call, vcore_bool status_ok,
			 vcore_bool *confirmed);
vcore_bool vcore_made_under_another_client(struct vcore_call *call,
					   vcore_u32 h_client, vcore_u32 h);
int vcore_verify_alloc(struct vcore_call *call, vcore_u32 h_root,
		       vcore_u32 h_new, struct vcore_driver_mem *trusted,
		       vcore_bool *have_trusted);

#endif /* VCORE_RM_ALLOC_INTERNAL_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vgpu.ko's in-kernel RM client: RM calls issued by the kernel itself, through
 * the real driver's nvidia_get_rm_ops() entry point (the one nvidia-modeset.ko
 * uses; docs/nvidia-rm-abi.md §6.3, §9.5).
 *
 * Why: the driver runs such calls on kernel buffers with kernel privilege
 * (RS_PRIV_LEVEL_KERNEL, no client-ownership or pid check), so vgpu.ko can
 * act on a tenant's objects without touching the tenant's memory or files:
 * query what the driver really allocated (the TOCTOU fix in driver_query.c),
 * free an object past the quota, or drive a tenant's TSGs from a kernel thread.
 *
 * Binding: nvidia.ko is resolved at run time (__symbol_get), so vgpu.ko loads
 * without it. The first call binds: it asks the driver for its version string
 * and hands that exact string back (the driver refuses any other, §6.3), and
 * checks the version is one whose ABI this file knows (580.x). Once bound,
 * vgpu.ko holds a reference on nvidia.ko until vgpu.ko unloads (unload vgpu.ko
 * first, as for nvidia-modeset.ko). A failed bind is retried by a later call.
 *
 * Context: any task context that may sleep (ioctl paths, kernel threads,
 * workqueues). Never from atomic context, never with a spinlock held. Each
 * call takes its own nvidia_stack_t, so calls may run concurrently.
 *
 * Return values: 0 when the driver ran the call, with the RM status (NV_OK = 0,
 * NV_ERR_* otherwise) in *status; a negative errno when the call could not be
 * issued at all (-ENODEV: no driver, -EPROTO: unknown driver version, -ENOMEM:
 * no stack), and then *status is NV_ERR_GENERIC.
 */
#ifndef VGPU_KMOD_RMOPS_H
#define VGPU_KMOD_RMOPS_H

#include <linux/types.h>

#include "core/abi/nvstatus.h"

#define VGPU_RM_STATUS_UNSET NV_ERR_GENERIC

/* Binds now if not yet bound. 0 when bound. */
int vgpu_rm_bind(void);
/* Drops the driver reference; module exit only (no call may be running). */
void vgpu_rm_unbind(void);
bool vgpu_rm_bound(void);
/* The bound driver's version string ("" while unbound). */
const char *vgpu_rm_version(void);

/*
 * NV04_CONTROL on (@hclient, @hobject). @params (@size bytes) is a kernel
 * buffer, read and written by the driver; nested pointers inside it are kernel
 * pointers too (the driver copies them as kernel memory for kernel callers).
 */
int vgpu_rm_control(u32 hclient, u32 hobject, u32 cmd, void *params, u32 size,
		    u32 *status);

/* NV01_FREE of @hobject (and its subtree); @hobject == @hclient frees the
 * client. */
int vgpu_rm_free(u32 hclient, u32 hparent, u32 hobject, u32 *status);

/*
 * NV04_ALLOC (NVOS64 form) of class @hclass under @hparent. *@hobject in/out:
 * 0 asks the driver to pick a handle. @params: the class's kernel-side
 * allocation params or NULL. For a new client pass hclient = hparent = 0 and
 * hclass = NV01_ROOT_CLIENT: *@hobject is the client handle.
 */
int vgpu_rm_alloc(u32 hclient, u32 hparent, u32 *hobject, u32 hclass,
		  void *params, u32 *status);

#endif /* VGPU_KMOD_RMOPS_H */

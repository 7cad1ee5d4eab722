/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Calls run from a sealed copy of what the core decides on (seal.c; issue 17
 * F2/F3, docs/security/kernel-call-path.md).
 */
#ifndef VGPU_KMOD_SEAL_H
#define VGPU_KMOD_SEAL_H

#include <linux/compiler_types.h>
#include <linux/types.h>

#include "core/vcore.h"

/*
 * What the core decides on of call @cmd at @uarg (vcore_sealed_size,
 * vcore_sealed_next: the argument and the nested params it reads) copied once
 * into pages mapped into the caller's mm that no other task can store into;
 * the call then runs with vgpu_seal_addr() as its argument. NULL: the call
 * needs no seal; an ERR_PTR: it fails with that error. vgpu_seal_replaced():
 * the mapping went during the call (tampering). vgpu_seal_kaddr(): the
 * kernel's address of @n bytes of the copy at the caller's @uaddr, or NULL
 * (the host stores through it: a store through the user mapping would open
 * the page to siblings); vgpu_seal_put_u32() stores there, or with put_user
 * outside the copy (@seal may be NULL). vgpu_unseal() copies the answer back
 * to the caller's own buffers, unmaps and returns @rc (or -EFAULT).
 */
struct vgpu_seal;
struct vgpu_seal *vgpu_seal(const struct vcore_file *core, unsigned int cmd,
			    unsigned long uarg);
unsigned long vgpu_seal_addr(const struct vgpu_seal *seal);
bool vgpu_seal_replaced(const struct vgpu_seal *seal);
void *vgpu_seal_kaddr(const struct vgpu_seal *seal, unsigned long uaddr,
		      size_t n);
int vgpu_seal_put_u32(const struct vgpu_seal *seal, u32 __user *uaddr, u32 v);
long vgpu_unseal(struct vgpu_seal *seal, long rc);

/*
 * A call run by a kernel thread in the caller's stead (kthread_call.c):
 * vgpu_seal_lend(), called by that thread, lets its stores through as the
 * caller's until vgpu_seal_unlend(). It fails if the mapping was replaced
 * already (-EFAULT) or the caller gave the call up (-EINTR). While lent, a
 * replacement of the mapping and vgpu_seal_abandon() (the caller killed) send
 * the thread SIGKILL, which ends any wait of it on a fault at once; so the
 * thread allows SIGKILL before the lend.
 */
int vgpu_seal_lend(struct vgpu_seal *seal);
void vgpu_seal_unlend(struct vgpu_seal *seal);
void vgpu_seal_abandon(struct vgpu_seal *seal);

#endif /* VGPU_KMOD_SEAL_H */

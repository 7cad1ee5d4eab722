/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One driver call run from one of this module's kernel threads, for a lookup
 * that no decoy can serve: the driver fget()s an fd named in the parameters
 * and requires its own f_op (docs/security/kernel-call-path.md, F4). The real
 * file stands for the call in the kernel threads' fd table, which no tenant
 * task can reach, never in the caller's.
 */
#ifndef VGPU_KMOD_KTHREAD_CALL_H
#define VGPU_KMOD_KTHREAD_CALL_H

#include <linux/compiler_types.h>
#include <linux/fs.h>
#include <linux/types.h>

struct vcore_call;
struct vgpu_seal;

/* A thread per call, one call at a time of each kind (kthread_call.c). */
enum vgpu_kthread {
	/* nvidia-uvm's UVM_MM_INITIALIZE (uvmFd) */
	VGPU_KTHREAD_UVM,
	/* NV00E0 EXPORT_MEM, NV00FD ATTACH_GPU (devDescriptor): may wait on
	 * the fabric manager, so they hold up no MM_INITIALIZE */
	VGPU_KTHREAD_FABRIC,
	VGPU_KTHREAD_COUNT,
};

int vgpu_kthread_call_init(void);
void vgpu_kthread_call_exit(void);

/*
 * @real's unlocked_ioctl(@cmd, @arg), run from a kernel thread of kind @t in
 * the caller's mm and with its credentials, while @file stands on a fd of the
 * kernel threads' table whose number is stored at @fd_uaddr (the field the
 * driver reads) first. Every buffer of @call (the core's list of the user
 * memory the call carries) and @fd_uaddr must lie in @seal, the call's sealed
 * copy, which is lent to the thread for the call (seal.h); else -EFAULT. The
 * caller waits, killably; one call at a time of kind @t. Returns the
 * driver's result, -EINTR if the caller was killed before the call started,
 * -EFAULT if the copy was replaced before it started, or -EMFILE.
 */
long vgpu_kthread_ioctl(enum vgpu_kthread t, struct file *real,
			unsigned int cmd, unsigned long arg, struct file *file,
			u32 __user *fd_uaddr, const struct vcore_call *call,
			struct vgpu_seal *seal);

#endif /* VGPU_KMOD_KTHREAD_CALL_H */

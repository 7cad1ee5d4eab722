/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One driver call run from this module's kernel thread, for a lookup that no
 * decoy can serve: nvidia-uvm's UVM_MM_INITIALIZE fget()s its uvmFd and
 * requires nvidia-uvm's own f_op (docs/security/kernel-call-path.md, F4). The
 * real file stands for the call in the kernel thread's fd table, which no
 * tenant task can reach, never in the caller's.
 */
#ifndef VGPU_KMOD_KTHREAD_CALL_H
#define VGPU_KMOD_KTHREAD_CALL_H

#include <linux/compiler_types.h>
#include <linux/fs.h>
#include <linux/types.h>

int vgpu_kthread_call_init(void);
void vgpu_kthread_call_exit(void);

/*
 * @real's unlocked_ioctl(@cmd, @arg), run from the module's kernel thread in
 * the caller's mm and with its credentials, while @file stands on a fd of
 * that thread's table whose number is stored at @fd_uaddr (the field the
 * driver reads) first. The caller waits; one call at a time. Returns the
 * driver's result, -EFAULT if the number cannot be stored, or -EMFILE.
 */
long vgpu_kthread_ioctl(struct file *real, unsigned int cmd, unsigned long arg,
			struct file *file, u32 __user *fd_uaddr);

#endif /* VGPU_KMOD_KTHREAD_CALL_H */

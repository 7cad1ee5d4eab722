/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The real driver's nodes (real.c): where they are (module parameters) and
 * the control node's binding. Resolved by path in the init namespace, at load
 * time and again on VGPU_CMD_DRIVER_BIND or slot creation, never at open time:
 * an open comes from inside a container whose mount namespace shows only the
 * proxy nodes (docs/nvidia-rm-abi.md §9.6).
 */
#ifndef VGPU_KMOD_REAL_H
#define VGPU_KMOD_REAL_H

#include <linux/compiler.h>
#include <linux/fs.h>
#include <linux/path.h>
#include <linux/static_call.h>
#include <linux/types.h>

/* Checks the parameters; module init, first. */
int vgpu_real_init(void);
/* Drops the control node; module exit, once no slot is left. */
void vgpu_real_exit(void);
/* Resolves the control node if it is not yet. 0 when bound. */
int vgpu_real_bind(void);
bool vgpu_real_bound(void);
const char *vgpu_real_ctl_name(void);
const char *vgpu_real_dev_fmt(void);
/* Each with a path reference (pairs with path_put by the caller). The control
 * node binds first if it is not yet. */
int vgpu_real_ctl_path(struct path *out);
int vgpu_real_dev_path(u32 gpu, struct path *out);
int vgpu_real_uvm_path(struct path *out);

/*
 * The real driver's unlocked_ioctl as a static call: the proxy files forward
 * every RM call to it (ioctl.c), and an indirect call is a retpoline on the
 * Debian kernels ("Spectre V2 : Mitigation: Retpolines"); a static call is a
 * direct call the kernel patches, as Linux does for its own hot calls through
 * a pointer that does not change. It is set once, by the first control or GPU
 * file opened (vgpu_real_ioctl_learn, fops.c), and never changed after, so a
 * call that passed the test below cannot reach another target. A file whose
 * entry is another (a driver reloaded at another address) is called through
 * its f_op as before; the file holds its driver module, so the target it
 * matched is loaded.
 */
long vgpu_real_ioctl_unset(struct file *real, unsigned int cmd,
			   unsigned long arg);
DECLARE_STATIC_CALL(vgpu_real_ioctl_call, vgpu_real_ioctl_unset);
void vgpu_real_ioctl_learn(struct file *real);

static __always_inline long vgpu_real_ioctl(struct file *real, unsigned int cmd,
					    unsigned long arg)
{
	if (likely(real->f_op->unlocked_ioctl ==
		   static_call_query(vgpu_real_ioctl_call)))
		return static_call(vgpu_real_ioctl_call)(real, cmd, arg);
	return real->f_op->unlocked_ioctl(real, cmd, arg);
}

#endif /* VGPU_KMOD_REAL_H */

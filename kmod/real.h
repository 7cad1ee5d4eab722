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

#include <linux/path.h>
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

#endif /* VGPU_KMOD_REAL_H */

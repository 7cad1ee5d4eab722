/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control plane: the generic-netlink control family (uapi/vgpu_genl.h is
 * its manual; genl.c has the family, its policy and the commands, genl_slot.c
 * how a slot's attributes are read and written) and the per-slot sysfs files
 * (sysfs.c). It calls down into the slots, the compute controller, the real
 * driver's binding and the filter core's counters; nothing calls up into it:
 * the parts below report events through event.h, which genl.c connects.
 */
#ifndef VGPU_KMOD_CONTROL_H
#define VGPU_KMOD_CONTROL_H

#include <net/genetlink.h>

#include "slot.h"

/* genl.c: registers the family (last step of module init) and unregisters
 * it (first step of module exit). */
int vgpu_genl_init(void);
void vgpu_genl_exit(void);

/*
 * genl_slot.c. Every slot setting is one row of the schema
 * (uapi/vgpu_slot_fields.h); these walk the rows.
 */
/* Reads the settings present in @info into @cfg; returns the VGPU_CFG() mask.
 */
u32 vgpu_nl_parse_config(struct genl_info *info, struct vgpu_slot_config *cfg);
/* Puts slot @slot as VGPU_CMD_SLOT_GET describes it. */
int vgpu_nl_put_slot(struct sk_buff *skb, struct vgpu_slot *slot);

/* sysfs.c: the files of every slot node (the class's dev_groups). */
extern const struct attribute_group *vgpu_node_groups[];

#endif /* VGPU_KMOD_CONTROL_H */

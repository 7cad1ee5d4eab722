/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control family's parts (uapi/vgpu_genl.h is its manual): genl.c has the
 * family, its policy and the commands; genl_slot.c how a slot's attributes are
 * read and written; genl_event.c the event group.
 */
#ifndef VGPU_KMOD_GENL_H
#define VGPU_KMOD_GENL_H

#include <net/genetlink.h>

#include "vgpu.h"

/* genl.c */
extern struct genl_family vgpu_genl_family;
/* The family is registered: events may be sent. */
bool vgpu_genl_is_live(void);

/*
 * genl_slot.c. Every slot setting is one row of the schema
 * (uapi/vgpu_slot_fields.h); these walk the rows.
 */
/* Reads the settings present in @info into @cfg; returns the VGPU_CFG() mask.
 */
u32 vgpu_nl_parse_config(struct genl_info *info, struct vgpu_slot_config *cfg);
/* Puts slot @slot as VGPU_CMD_SLOT_GET describes it. */
int vgpu_nl_put_slot(struct sk_buff *skb, struct vgpu_slot *slot);

#endif /* VGPU_KMOD_GENL_H */

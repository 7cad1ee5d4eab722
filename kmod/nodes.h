/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The proxy nodes' identity: the module's chrdev region, its class
 * (/sys/class/vgpu) and the minors of each slot. Which file operations the
 * nodes have (the data path's, fops.c) and which sysfs files they show (the
 * control plane's, sysfs.c) are handed in by main.c: this layer knows neither.
 */
#ifndef VGPU_KMOD_NODES_H
#define VGPU_KMOD_NODES_H

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/types.h>

#include "../uapi/vgpu_genl.h"

/* Each slot owns VGPU_MINORS_PER_SLOT minors: id * VGPU_MINORS_PER_SLOT + kind.
 */
enum vgpu_node_kind {
	VGPU_NODE_CTL,
	VGPU_NODE_DEV,
	VGPU_NODE_UVM,
	VGPU_NODE_KINDS
};
#define VGPU_MINORS_PER_SLOT 4
#define VGPU_MINORS	     (VGPU_MAX_SLOTS * VGPU_MINORS_PER_SLOT)

int vgpu_nodes_init(const struct file_operations *fops,
		    const struct attribute_group **groups);
void vgpu_nodes_exit(void);
unsigned int vgpu_nodes_major(void);
/* The node of kind @kind of slot @id; @drvdata is what its sysfs files show. */
struct device *vgpu_node_create(u32 id, enum vgpu_node_kind kind,
				void *drvdata);
void vgpu_node_destroy(struct device *node);
const char *vgpu_node_name_fmt(enum vgpu_node_kind kind);

#endif /* VGPU_KMOD_NODES_H */

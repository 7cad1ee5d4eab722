// SPDX-License-Identifier: GPL-2.0
/*
 * The proxy nodes' identity (nodes.h): one chrdev region for the module,
 * VGPU_MINORS_PER_SLOT minors per slot, and the class their devices belong to.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/module.h>
#include <linux/version.h>

#include "nodes.h"

static dev_t vgpu_devt;
static struct cdev vgpu_cdev;
static struct class *vgpu_class;

static const char *const vgpu_node_fmt[VGPU_NODE_KINDS] = {
	[VGPU_NODE_CTL] = "vgpuctl%u",
	[VGPU_NODE_DEV] = "vgpu%u",
	[VGPU_NODE_UVM] = "vgpu-uvm%u",
};

const char *vgpu_node_name_fmt(enum vgpu_node_kind kind)
{
	return vgpu_node_fmt[kind];
}

unsigned int vgpu_nodes_major(void)
{
	return MAJOR(vgpu_devt);
}

/*
 * Nodes are 0666 like the driver's own: who may open them is decided by which
 * container gets them (the device plugin), not by the mode. Never major 195
 * (§9.3): the chrdev region is dynamic.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static char *vgpu_devnode(const struct device *dev, umode_t *mode)
#else
static char *vgpu_devnode(struct device *dev, umode_t *mode)
#endif
{
	if (mode)
		*mode = 0666;
	return NULL;
}

struct device *vgpu_node_create(u32 id, enum vgpu_node_kind kind, void *drvdata)
{
	dev_t devt = MKDEV(MAJOR(vgpu_devt), id * VGPU_MINORS_PER_SLOT + kind);

	return device_create(vgpu_class, NULL, devt, drvdata,
			     vgpu_node_fmt[kind], id);
}

void vgpu_node_destroy(struct device *node)
{
	device_destroy(vgpu_class, node->devt);
}

int vgpu_nodes_init(const struct file_operations *fops,
		    const struct attribute_group **groups)
{
	int err;

	err = alloc_chrdev_region(&vgpu_devt, 0, VGPU_MINORS, "vgpu");
	if (err)
		return err;
	cdev_init(&vgpu_cdev, fops);
	vgpu_cdev.owner = THIS_MODULE;
	err = cdev_add(&vgpu_cdev, vgpu_devt, VGPU_MINORS);
	if (err)
		goto err_region;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	vgpu_class = class_create("vgpu");
#else
	vgpu_class = class_create(THIS_MODULE, "vgpu");
#endif
	if (IS_ERR(vgpu_class)) {
		err = PTR_ERR(vgpu_class);
		goto err_cdev;
	}
	vgpu_class->devnode = vgpu_devnode;
	vgpu_class->dev_groups = groups;
	return 0;

err_cdev:
	cdev_del(&vgpu_cdev);
err_region:
	unregister_chrdev_region(vgpu_devt, VGPU_MINORS);
	return err;
}

/* Module exit, after every slot's nodes were destroyed (vgpu_slots_exit). */
void vgpu_nodes_exit(void)
{
	class_destroy(vgpu_class);
	cdev_del(&vgpu_cdev);
	unregister_chrdev_region(vgpu_devt, VGPU_MINORS);
}

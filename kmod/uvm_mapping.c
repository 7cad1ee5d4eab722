// SPDX-License-Identifier: GPL-2.0
/*
 * A charged mapping of a UVM file ends when the driver drops it, not when the
 * proxy file closes: the filter core charges each managed-memory mapping its
 * size (vcore_uvm_map) and is told here, piece by piece, when nvidia-uvm's
 * managed range under it goes.
 *
 * vgpu_fops_mmap switches the VMA to the real file before the driver's mmap,
 * so the VMA's callbacks are the driver's (uvm_vm_ops_managed: open splits
 * the managed range with the VMA, close destroys the piece's range,
 * kernel-open/nvidia-uvm/uvm.c). After the driver's mmap, the VMA gets a copy
 * of the driver's ops whose open and close call the driver's first; close
 * then refunds the closed piece's size. nvidia-uvm sets VM_DONTEXPAND, so a
 * piece never grows; a moved (mremap) or forked copy is disabled by the
 * driver's open, which points it at its own ops, so only pieces that hold a
 * range come back here. What the driver disables behind our back stays
 * charged until the file ends (vcore_file_close refunds the rest).
 *
 * The copy lives as long as the proxy file: a VMA that may still point at it
 * holds the real file, and the proxy ends only after the real file's last
 * other reference (file_release.c).
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "core_host.h"
#include "proxy.h"

struct vgpu_uvm_mapping {
	struct vm_operations_struct ops; /* the driver's, open and close ours */
	const struct vm_operations_struct *driver;
	struct vcore_file *core;
	struct list_head node; /* in vgpu_file.uvm_mappings */
};

static const struct vm_operations_struct vgpu_uvm_no_ops;

static struct vgpu_uvm_mapping *vgpu_uvm_mapping_of(struct vm_area_struct *vma)
{
	return container_of(vma->vm_ops, struct vgpu_uvm_mapping, ops);
}

static void vgpu_uvm_vm_open(struct vm_area_struct *vma)
{
	struct vgpu_uvm_mapping *m = vgpu_uvm_mapping_of(vma);

	if (m->driver->open)
		m->driver->open(vma);
}

static void vgpu_uvm_vm_close(struct vm_area_struct *vma)
{
	struct vgpu_uvm_mapping *m = vgpu_uvm_mapping_of(vma);

	/* The driver frees the piece's range first: the charge never drops
	 * below what it holds. */
	if (m->driver->close)
		m->driver->close(vma);
	vcore_uvm_unmap(m->core, vma->vm_end - vma->vm_start);
}

struct vgpu_uvm_mapping *vgpu_uvm_mapping_alloc(void)
{
	return kzalloc(sizeof(struct vgpu_uvm_mapping), GFP_KERNEL);
}

void vgpu_uvm_mapping_attach(struct vgpu_file *vf, struct vm_area_struct *vma,
			     struct vgpu_uvm_mapping *m)
{
	m->driver = vma->vm_ops ? vma->vm_ops : &vgpu_uvm_no_ops;
	m->ops = *m->driver;
	m->ops.open = vgpu_uvm_vm_open;
	m->ops.close = vgpu_uvm_vm_close;
	m->core = vf->core;
	spin_lock(&vf->uvm_lock);
	list_add(&m->node, &vf->uvm_mappings);
	spin_unlock(&vf->uvm_lock);
	vma->vm_ops = &m->ops;
}

void vgpu_uvm_mappings_free(struct vgpu_file *vf)
{
	struct vgpu_uvm_mapping *m, *n;

	list_for_each_entry_safe(m, n, &vf->uvm_mappings, node) kfree(m);
	INIT_LIST_HEAD(&vf->uvm_mappings);
}

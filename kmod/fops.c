// SPDX-License-Identifier: GPL-2.0
/*
 * The proxy nodes' file operations. Every proxy file holds exactly one real
 * file of the node it stands for (docs/nvidia-rm-abi.md §9.2: clients are
 * bound to the real ctl file; §9.4: one mmap context per file), opened with the
 * caller's flags and credentials. Calls are forwarded synchronously in the
 * caller's task (§9.5): RM reads current's mm, fd table and credentials.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "core_host.h"
#include "proxy.h"
#include "real.h"
#include "slot.h"

static int vgpu_fops_open(struct inode *inode, struct file *file)
{
	unsigned int minor = iminor(inode);
	enum vgpu_node_kind kind = minor % VGPU_MINORS_PER_SLOT;
	struct vgpu_slot *slot;
	struct vgpu_file *vf;
	struct path real;
	int err;

	if (kind >= VGPU_NODE_KINDS)
		return -ENODEV;
	vf = kzalloc(sizeof(*vf), GFP_KERNEL);
	if (!vf)
		return -ENOMEM;

	/* Pairs with vgpu_slot_put and vgpu_slot_detach in vgpu_fops_release
	 * (file_release.c), and real with the path_put below, after
	 * dentry_open. */
	slot = vgpu_slot_open(minor / VGPU_MINORS_PER_SLOT, kind,
			      task_tgid_nr(current), &real);
	if (!slot) {
		err = -ENODEV;
		goto out_free;
	}

	vf->slot = slot;
	vf->kind = kind;
	vf->tgid = task_tgid_nr(current);
	spin_lock_init(&vf->uvm_lock);
	INIT_LIST_HEAD(&vf->uvm_mappings);
	/*
	 * §9.6: dentry_open on the path resolved in the init namespace, with
	 * the caller's flags (O_NONBLOCK defers the driver's open) and
	 * credentials.
	 */
	vf->real = dentry_open(&real, file->f_flags, current_cred());
	path_put(&real);
	if (IS_ERR(vf->real)) {
		err = PTR_ERR(vf->real);
		pr_warn_ratelimited(
			"slot %u pid %d (%s): opening the real %s failed: %d\n",
			slot->id, vf->tgid, current->comm,
			kind == VGPU_NODE_CTL	? "control node"
			: kind == VGPU_NODE_DEV ? "GPU node"
						: "UVM node",
			err);
		goto out_detach;
	}
	/* The driver's ioctl entry as a direct call (real.h); UVM files have
	 * another entry, and go through their f_op. */
	if (kind != VGPU_NODE_UVM)
		vgpu_real_ioctl_learn(vf->real);
	vf->core = vgpu_filter_file_open(slot->filter, kind, vf, &err);
	if (!vf->core)
		goto out_fput; /* -ENOMEM, or -EMFILE: the slot's UVM files */
	vgpu_stat_inc(slot, VGPU_STAT_OPENS);
	file->private_data = vf;
	return 0;

out_fput:
	fput(vf->real);
out_detach:
	vgpu_slot_detach(slot, vf->tgid);
	vgpu_slot_put(slot);
out_free:
	kfree(vf);
	return err;
}

/*
 * Frees exactly what the real close frees (§9.1), when the real close happens:
 * the filter forgets this file's objects (refunding their charges), then the
 * last reference to the real file goes, and nvidia_close frees every RM client
 * bound to it. If a registered dev file or a VMA still holds the real file,
 * both wait until it no longer does (file_release.c).
 */
static int vgpu_fops_release(struct inode *inode, struct file *file)
{
	vgpu_file_release(file->private_data);
	return 0;
}

/*
 * §9.4: every nv_vm_ops callback reads vma->vm_file's private data, and
 * revocation reaches only VMAs linked into the real file's mapping, so the VMA
 * must belong to the real file before the real mmap runs. As in dma_buf_mmap():
 * check the range, then vma_set_file() (takes a reference on the real file and
 * drops the one on ours, so no manual fput), keep vm_pgoff and the length, then
 * call the driver. On failure the core mm fputs whatever vma->vm_file is by
 * then.
 */
static int vgpu_fops_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct vgpu_file *vf = file->private_data;
	struct file *real = vf->real;
	struct vgpu_uvm_mapping *m = NULL;
	vcore_u64 charged = 0;
	int err;

	if (vgpu_file_revoked(vf))
		return -ENODEV;
	if (vma->vm_pgoff + vma_pages(vma) < vma->vm_pgoff)
		return -EOVERFLOW;
	/* Policy first: a refusal must not depend on what the driver offers. */
	err = vgpu_filter_mmap(vf, vma, &charged);
	if (err)
		return err;
	/* A charged mapping's end must be seen (uvm_mapping.c): its record
	 * exists before the driver maps anything. */
	if (charged) {
		m = vgpu_uvm_mapping_alloc();
		if (!m) {
			err = -ENOMEM;
			goto out_refund;
		}
	}
	if (!real->f_op->mmap) {
		err = -ENODEV;
		goto out_refund;
	}
	vma_set_file(vma, real);
	err = real->f_op->mmap(real, vma);
	if (err)
		goto out_refund;
	vgpu_stat_inc(vf->slot, VGPU_STAT_MMAPS);
	if (m)
		vgpu_uvm_mapping_attach(vf, vma, m);
	return 0;

out_refund:
	kfree(m);
	if (charged)
		vcore_uvm_unmap(vf->core, charged);
	return err;
}

/* §9.5: forward; never poll the real file for our own purposes (edge-triggered
 * events). */
static __poll_t vgpu_fops_poll(struct file *file, poll_table *wait)
{
	struct vgpu_file *vf = file->private_data;

	if (vgpu_file_revoked(vf))
		return EPOLLERR | EPOLLHUP;
	if (!vf->real->f_op->poll)
		return DEFAULT_POLLMASK;
	return vf->real->f_op->poll(vf->real, wait);
}

const struct file_operations vgpu_fops = {
	.owner = THIS_MODULE,
	.open = vgpu_fops_open,
	.release = vgpu_fops_release,
	/* ioctl.c. nvidia_fops uses one function for both (nv.c:235-245);
	 * so do we. */
	.unlocked_ioctl = vgpu_fops_ioctl,
	.compat_ioctl = vgpu_fops_ioctl,
	.mmap = vgpu_fops_mmap,
	.poll = vgpu_fops_poll,
	.llseek = noop_llseek,
};

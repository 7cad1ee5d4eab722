// SPDX-License-Identifier: GPL-2.0
/*
 * slot_gpu.c - which of the node's GPUs a slot is, in the driver's own name
 * for it: the id the filter core confines the slot's calls to
 * (kmod/core/gpus.c, issue 17 F11.3).
 *
 * A slot forwards to /dev/nvidia<gpu>. The driver's NV_ESC_CARD_INFO lists
 * every GPU with its minor number and its id (kernel-open/nvidia/nv.c
 * nvidia_read_card_info). vgpu.ko issues it itself when the slot is created,
 * on a real ctl file of its own, with the argument in a scratch page of the
 * creating task's mm: slots are created over netlink, in the sendmsg of a
 * CAP_SYS_ADMIN process (the manager), never in a tenant's. Nothing a
 * tenant does can change the answer.
 */
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "slot.h"
#include "core/vcore.h"

int vgpu_slot_find_gpu_id(struct vgpu_slot *slot)
{
	vcore_size_t len;
	const unsigned int req = vcore_card_info_req(&len);
	unsigned long addr;
	struct file *ctl;
	void *reply;
	long rc;

	if (!current->mm)
		return -ESRCH;
	reply = kzalloc(len, GFP_KERNEL);
	if (!reply)
		return -ENOMEM;
	ctl = dentry_open(&slot->real[VGPU_NODE_CTL], O_RDWR, current_cred());
	if (IS_ERR(ctl)) {
		kfree(reply);
		return PTR_ERR(ctl);
	}
	addr = vm_mmap(NULL, 0, PAGE_ALIGN(len), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, 0);
	rc = IS_ERR_VALUE(addr) ? (long)addr : -ENOTTY;
	if (!IS_ERR_VALUE(addr) && ctl->f_op->unlocked_ioctl) {
		rc = ctl->f_op->unlocked_ioctl(ctl, req, addr);
		if (!rc && copy_from_user(reply, (void __user *)addr, len))
			rc = -EFAULT;
	}
	if (!IS_ERR_VALUE(addr))
		vm_munmap(addr, PAGE_ALIGN(len));
	fput(ctl);
	if (!rc) {
		slot->gpu_id = vcore_card_info_gpu_id(reply, len, slot->gpu);
		if (!slot->gpu_id)
			rc = -ENODEV;
	}
	kfree(reply);
	if (rc)
		pr_warn("slot: GPU %u is not in the driver's card list (%ld)\n",
			slot->gpu, rc);
	return rc;
}

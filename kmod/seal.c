// SPDX-License-Identifier: GPL-2.0
/*
 * UVM calls run from a sealed copy of their params (issue 17, F3;
 * docs/security/kernel-lifetime-compute.md). nvidia-uvm copies a call's params
 * in from the user address it is given, once at entry, and the whole struct
 * back at the end (__UVM_ROUTE_CMD_STACK/_ALLOC, uvm_api.h at 580.142); the
 * core read them before (vcore_uvm_sealed_size names the calls). A sibling
 * that changes them in between makes UVM act on other params than the core
 * decided on. So the params are copied once into pages of this module's and
 * the whole call (core pre, driver, core post) runs with the address of those
 * pages, mapped into the caller's mm, as its argument: the core reads exactly
 * what UVM reads.
 *
 * The mapping is of a per-call anonymous-inode file (never in a fd table;
 * i915's GEM mmap ioctl maps from an ioctl with vm_mmap too), and:
 * - no task but the caller stores into it, and the caller only while its call
 *   is in flight (the driver's copy-out). The VMA is shared and writable but
 *   has ->pfn_mkwrite, so vma_wants_writenotify() asks for write-notify and
 *   vma_set_page_prot() leaves the write bit out of vm_page_prot (mm/mmap.c,
 *   mmap_region at 6.1 and 6.12); vmf_insert_pfn() maps with vm_page_prot
 *   (insert_pfn(..., mkwrite=false), mm/memory.c), so the first store to a
 *   page, by anyone, faults into do_wp_page() -> wp_pfn_shared() ->
 *   ->pfn_mkwrite (mm/memory.c), which lets only the caller through. A write
 *   fault on an absent page is first a read-only insert (do_shared_fault ->
 *   ->fault returns VM_FAULT_NOPAGE), then the same write-protect fault. A
 *   refused store from user mode is SIGBUS, from the kernel (a sibling's
 *   read(2) into it, an io_uring worker, a kthread using the mm) -EFAULT
 *   (kernelmode_fixup_or_oops, arch/x86/mm/fault.c).
 * - no other route to the pages: GUP refuses VM_IO | VM_PFNMAP
 *   (check_vma_flags, mm/gup.c) and gup-fast skips special PTEs (pte_special,
 *   which insert_pfn sets), so ptrace, /proc/PID/mem and process_vm_writev
 *   cannot store; fork does not copy the VMA (VM_DONTCOPY); no core dump reads
 *   it (VM_DONTDUMP); mremap can neither grow it (VM_DONTEXPAND, VM_PFNMAP:
 *   vma_to_resize, mm/mremap.c) nor move it (->mremap, called by move_vma
 *   after the move and undoing it on error), and no munmap or mprotect can
 *   split it (->may_split, __split_vma in mm/mmap.c and mm/vma.c); a second
 *   mmap of the file (remap_file_pages re-mmaps the VMA's file through
 *   do_mmap, mm/mmap.c) is refused by ->mmap.
 * - what cannot be prevented is detected: munmap, a MAP_FIXED mapping over
 *   it, an mremap onto it and exit all remove the VMA through remove_vma ->
 *   ->close (mm/mmap.c at 6.1, mm/vma.c at 6.12), which marks the seal
 *   replaced while the call is in flight; the host then tells the core before
 *   its post (vcore_call_params_replaced: tampering, the caller is killed and
 *   the file holds every memory object the caller could have had mapped).
 * The functions named are read in Debian's 6.1 source (linux-source-6.1); on
 * 6.12 (where remove_vma and __split_vma moved to mm/vma.c) the behaviour is
 * what tests/vm/guest/vgpu/parts/vgpu_uvm_sealed.cc shows on both kernels: a
 * store from another task on the caller's mm never lands, a replacement is
 * caught.
 * The pages are freed only at the file's release, after the last VMA that
 * maps them went. Not sealed: the driver's output. Its copy-out makes the
 * PTEs writable, so a sibling may change the reply before the core's post
 * reads it, as for any call; the core does not decide on a UVM status alone
 * (kmod/core/uvm_external.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "proxy.h"

struct vgpu_uvm_seal {
	/* The caller, the one task whose stores pass while in flight;
	 * compared, never dereferenced. */
	const struct task_struct *task;
	void *buf;	    /* the sealed copy, whole pages */
	unsigned long size; /* bytes of params in it */
	unsigned long len;  /* bytes mapped */
	unsigned long addr; /* where, in the caller's mm */
	struct file *file;
	/* Set under the caller's mmap write lock (->mmap, ->close) or by the
	 * host in the calling task; read lock-free by the fault handlers. */
	bool mapping;	/* the host's own vm_mmap is under way */
	bool mapped;	/* it mapped the file: no other mmap of it */
	bool in_flight; /* mapped and the call not yet back */
	bool replaced;	/* the VMA went while in flight */
};

static vm_fault_t vgpu_seal_fault(struct vm_fault *vmf)
{
	struct vgpu_uvm_seal *seal = vmf->vma->vm_private_data;

	if (vmf->pgoff >= seal->len >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	/* Read-only, whatever the access: vm_page_prot lacks the write bit
	 * (write-notify); a store comes back through ->pfn_mkwrite. */
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(virt_to_page(seal->buf)) +
				      vmf->pgoff);
}

static vm_fault_t vgpu_seal_pfn_mkwrite(struct vm_fault *vmf)
{
	const struct vgpu_uvm_seal *seal = vmf->vma->vm_private_data;

	if (current == seal->task && READ_ONCE(seal->in_flight))
		return 0; /* the driver's copy-out, in the calling task */
	return VM_FAULT_SIGBUS;
}

static void vgpu_seal_close(struct vm_area_struct *vma)
{
	struct vgpu_uvm_seal *seal = vma->vm_private_data;

	if (READ_ONCE(seal->in_flight))
		WRITE_ONCE(seal->replaced, true);
}

static int vgpu_seal_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int vgpu_seal_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

static const struct vm_operations_struct vgpu_seal_vm_ops = {
	.fault = vgpu_seal_fault,
	.pfn_mkwrite = vgpu_seal_pfn_mkwrite,
	.close = vgpu_seal_close,
	.may_split = vgpu_seal_may_split,
	.mremap = vgpu_seal_mremap,
};

static int vgpu_seal_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct vgpu_uvm_seal *seal = file->private_data;

	/* Only the host's own vm_mmap, once, whole (the caller's mmap write
	 * lock is held: ->mmap and ->close are serialised). */
	if (!READ_ONCE(seal->mapping) || seal->mapped ||
	    current != seal->task || vma->vm_pgoff ||
	    vma->vm_end - vma->vm_start != seal->len)
		return -EPERM;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP |
				  VM_DONTCOPY);
#else
	vma->vm_flags |=
		VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY;
#endif
	vma->vm_ops = &vgpu_seal_vm_ops;
	vma->vm_private_data = seal;
	seal->mapped = true;
	/* From here every removal of the VMA is a replacement, until the
	 * call is back (vgpu_uvm_unseal). */
	WRITE_ONCE(seal->in_flight, true);
	return 0;
}

static void vgpu_seal_free(struct vgpu_uvm_seal *seal)
{
	free_pages_exact(seal->buf, seal->len);
	kfree(seal);
}

/* The last reference: every VMA that mapped the pages is gone. */
static int vgpu_seal_release(struct inode *inode, struct file *file)
{
	vgpu_seal_free(file->private_data);
	return 0;
}

static const struct file_operations vgpu_seal_fops = {
	.owner = THIS_MODULE,
	.mmap = vgpu_seal_mmap,
	.release = vgpu_seal_release,
};

struct vgpu_uvm_seal *vgpu_uvm_seal(unsigned long uarg, u32 size)
{
	struct vgpu_uvm_seal *seal;
	unsigned long addr;
	struct file *file;

	seal = kzalloc(sizeof(*seal), GFP_KERNEL);
	if (!seal)
		return ERR_PTR(-ENOMEM);
	seal->task = current;
	seal->size = size;
	seal->len = PAGE_ALIGN(size);
	seal->buf = alloc_pages_exact(seal->len, GFP_KERNEL | __GFP_ZERO);
	if (!seal->buf) {
		kfree(seal);
		return ERR_PTR(-ENOMEM);
	}
	/* The one read of the caller's params; unreadable: -EFAULT, as the
	 * driver's own copy-in answers. */
	if (copy_from_user(seal->buf, (const void __user *)uarg, size)) {
		vgpu_seal_free(seal);
		return ERR_PTR(-EFAULT);
	}
	file = anon_inode_getfile("[vgpu-uvm-params]", &vgpu_seal_fops, seal,
				  O_RDWR);
	if (IS_ERR(file)) {
		vgpu_seal_free(seal);
		return ERR_CAST(file);
	}
	seal->file = file; /* from here the file's release frees the seal */
	WRITE_ONCE(seal->mapping, true);
	addr = vm_mmap(file, 0, seal->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       0);
	WRITE_ONCE(seal->mapping, false);
	if (IS_ERR_VALUE(addr)) {
		fput(file);
		return ERR_PTR((long)addr);
	}
	seal->addr = addr;
	return seal;
}

unsigned long vgpu_uvm_seal_addr(const struct vgpu_uvm_seal *seal)
{
	return seal->addr;
}

bool vgpu_uvm_seal_replaced(const struct vgpu_uvm_seal *seal)
{
	return READ_ONCE(seal->replaced);
}

long vgpu_uvm_unseal(struct vgpu_uvm_seal *seal, unsigned long uarg, long rc)
{
	bool replaced;

	WRITE_ONCE(seal->in_flight, false);
	replaced = READ_ONCE(seal->replaced);
	/* The driver's answer (rmStatus, outputs) into the caller's params. */
	if (copy_to_user((void __user *)uarg, seal->buf, seal->size) && rc >= 0)
		rc = -EFAULT;
	/*
	 * A replaced range is someone else's mapping now: leave it. One
	 * replaced after the flag was read is unmapped here all the same; only
	 * the task that replaced it can lose something by that.
	 */
	if (!replaced)
		vm_munmap(seal->addr, seal->len);
	fput(seal->file);
	return rc;
}

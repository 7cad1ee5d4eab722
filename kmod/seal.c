// SPDX-License-Identifier: GPL-2.0
/*
 * Calls run from a sealed copy of what the core decides on (issue 17, F2/F3;
 * docs/security/kernel-call-path.md, docs/security/kernel-lifetime-compute.md).
 * The driver copies a call's argument in from the user address it is given
 * (nvidia_ioctl, nv.c; nvidia-uvm's __UVM_ROUTE_CMD_STACK/_ALLOC, uvm_api.h at
 * 580.142), and RM copies nested params in again (RM_ALLOC's class params,
 * a control's params: rmapiParamsAcquire); the core read them before
 * (kmod/core/seal.c, vcore_sealed_size and vcore_sealed_next, name the
 * pieces). A sibling that changes them in between makes the driver act on
 * other params than the core decided on. So the pieces are copied once into
 * pages of this module's, each nested piece's pointer in its parent's copy is
 * rewritten to the piece's copy, and the whole call (core pre, driver, core
 * post) runs with the address of those pages, mapped into the caller's mm, as
 * its argument: the core reads exactly what the driver reads. The host's own
 * stores into the pieces during the call (fd numbers translated to decoys,
 * fd_translate.c; statuses and handles the core writes, core_host.c) go
 * through the kernel's mapping of the pages (vgpu_seal_kaddr): a store through
 * the user mapping by the caller would make the page writable for its
 * siblings too, before the driver read it.
 *
 * The mapping is of a per-call anonymous-inode file (never in a fd table;
 * i915's GEM mmap ioctl maps from an ioctl with vm_mmap too), and:
 * - no task but the caller stores into it, and the caller only while its call
 *   is in flight (the driver's copy-out); or the kernel thread that runs the
 *   call in its stead, while the copy is lent to it (vgpu_seal_lend). The
 *   VMA is shared and writable but has ->pfn_mkwrite, so
 *   vma_wants_writenotify() asks for write-notify and vma_set_page_prot()
 *   leaves the write bit out of vm_page_prot (mm/mmap.c, mmap_region at 6.1
 *   and 6.12); vmf_insert_pfn() maps with vm_page_prot (insert_pfn(...,
 *   mkwrite=false), mm/memory.c), so the first store to a page, by anyone,
 *   faults into do_wp_page() -> wp_pfn_shared() -> ->pfn_mkwrite
 *   (mm/memory.c), which lets only the caller and the lent thread through.
 *   A write fault on an absent page is first a read-only insert
 *   (do_shared_fault -> ->fault returns VM_FAULT_NOPAGE), then the same
 *   write-protect fault. A refused store from user mode is SIGBUS, from the
 *   kernel (a sibling's read(2) into it, an io_uring worker, a kthread using
 *   the mm) -EFAULT
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
 *   its post (vcore_call_params_replaced: tampering, the caller is killed,
 *   the file's clients are freed in the driver, and a UVM file holds every
 *   memory object the caller could have had mapped).
 * The functions named are read in Debian's 6.1 source (linux-source-6.1); on
 * 6.12 (where remove_vma and __split_vma moved to mm/vma.c) the behaviour is
 * what tests/vm/guest/vgpu/parts/vgpu_uvm_sealed.cc and vgpu_rm_sealed.cc
 * show on both kernels: a store from another task on the caller's mm never
 * lands, a replacement is caught.
 * A call the driver must run from a kernel thread (kthread_call.c: NV00E0
 * EXPORT_MEM, NV00FD ATTACH_GPU and UVM_MM_INITIALIZE, whose fd the driver
 * tests by f_op) is lent the copy: that thread's stores pass too, and while it
 * is lent, ->close and the caller's death (vgpu_seal_abandon) send it SIGKILL,
 * so a fault of it on whatever replaced the mapping (a userfaultfd range) ends
 * at once (Fabric.AReplacedSealEndsTheFabricCallThread). Until then the caller
 * faulted the pages in writable for that thread, which opened them to its
 * siblings (Fabric.SiblingCannotSwapAFabricCallIntoAGateLever).
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
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "seal.h"

/* One piece: @size bytes at the caller's @uaddr, at @off of the copy; its
 * pointer is the u64 at @ptr_off of piece @parent (none for piece 0). */
struct vgpu_seal_piece {
	unsigned long uaddr;
	u32 size;
	u32 off;
	u32 ptr_off;
	int parent;
};

struct vgpu_seal {
	/* The caller, the one task whose stores pass while in flight;
	 * compared, never dereferenced. */
	const struct task_struct *task;
	/* The kernel thread that runs the call in the caller's stead
	 * (kthread_call.c) while it does: its stores pass too, and a
	 * replacement of the mapping or the caller's death sends it SIGKILL.
	 * Under @lock, with @abandoned and the setting of @replaced; read
	 * lock-free by ->pfn_mkwrite (compared, never dereferenced there). */
	struct task_struct *lent;
	bool abandoned; /* the caller was killed: no thread may take the call */
	spinlock_t lock;
	void *buf;	    /* the sealed copy, whole pages */
	unsigned long len;  /* bytes mapped */
	unsigned long addr; /* where, in the caller's mm */
	struct file *file;
	unsigned int npieces;
	struct vgpu_seal_piece piece[VCORE_SEAL_MAX_PIECES];
	/* Set under the caller's mmap write lock (->mmap, ->close) or by the
	 * host in the calling task; read lock-free by the fault handlers. */
	bool mapping;	/* the host's own vm_mmap is under way */
	bool mapped;	/* it mapped the file: no other mmap of it */
	bool in_flight; /* mapped and the call not yet back */
	bool replaced;	/* the VMA went while in flight */
};

/* The pages of a large copy (a control's params, up to 1 MiB) are vmalloc'd:
 * no high-order allocation on the call path. */
#define VGPU_SEAL_MAX_EXACT (4 * PAGE_SIZE)

static unsigned long vgpu_seal_pfn(const struct vgpu_seal *seal, pgoff_t pgoff)
{
	void *p = (u8 *)seal->buf + (pgoff << PAGE_SHIFT);

	return is_vmalloc_addr(p) ? vmalloc_to_pfn(p)
				  : page_to_pfn(virt_to_page(p));
}

static vm_fault_t vgpu_seal_fault(struct vm_fault *vmf)
{
	struct vgpu_seal *seal = vmf->vma->vm_private_data;

	if (vmf->pgoff >= seal->len >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	/* Read-only, whatever the access: vm_page_prot lacks the write bit
	 * (write-notify); a store comes back through ->pfn_mkwrite. */
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      vgpu_seal_pfn(seal, vmf->pgoff));
}

static vm_fault_t vgpu_seal_pfn_mkwrite(struct vm_fault *vmf)
{
	const struct vgpu_seal *seal = vmf->vma->vm_private_data;

	/* The driver's copy-out, in the calling task or in the kernel thread
	 * it lent the copy to. */
	if ((current == seal->task || current == READ_ONCE(seal->lent)) &&
	    READ_ONCE(seal->in_flight))
		return 0;
	return VM_FAULT_SIGBUS;
}

static void vgpu_seal_close(struct vm_area_struct *vma)
{
	struct vgpu_seal *seal = vma->vm_private_data;

	if (!READ_ONCE(seal->in_flight))
		return;
	/* The thread the copy is lent to may wait on a fault of what now
	 * lies there (a userfaultfd range): end it at once. */
	spin_lock(&seal->lock);
	WRITE_ONCE(seal->replaced, true);
	if (seal->lent)
		send_sig(SIGKILL, seal->lent, 1);
	spin_unlock(&seal->lock);
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
	struct vgpu_seal *seal = file->private_data;

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
	 * call is back (vgpu_unseal). */
	WRITE_ONCE(seal->in_flight, true);
	return 0;
}

static void vgpu_seal_free(struct vgpu_seal *seal)
{
	if (seal->len > VGPU_SEAL_MAX_EXACT)
		vfree(seal->buf);
	else if (seal->buf)
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

static unsigned long vgpu_seal_ptr(const void *piece, u32 ptr_off)
{
	u64 p;

	memcpy(&p, (const u8 *)piece + ptr_off, sizeof(p));
	return (unsigned long)p;
}

/* Piece @i's pointer, in its parent's copy, set to @p. */
static void vgpu_seal_set_ptr(struct vgpu_seal *seal, unsigned int i, u64 p)
{
	const struct vgpu_seal_piece *c = &seal->piece[i];

	memcpy((u8 *)seal->buf + seal->piece[c->parent].off + c->ptr_off, &p,
	       sizeof(p));
}

/*
 * The pieces, each read once from the caller into @stage[i] (kvmalloc'd),
 * the next one named by the core from the bytes read. 0, or -EFAULT as the
 * driver's own copy-in answers (a nested piece unreadable: the driver would
 * fail the call too), or -ENOMEM.
 */
static int vgpu_seal_read(struct vgpu_seal *seal, const struct vcore_file *core,
			  struct vcore_seal_piece cur, unsigned long uarg,
			  void **stage)
{
	unsigned long off = 0;
	unsigned int i;

	for (i = 0; i < VCORE_SEAL_MAX_PIECES; i++) {
		struct vgpu_seal_piece *p = &seal->piece[i];
		struct vcore_seal_piece next;

		p->uaddr = uarg;
		p->size = cur.size;
		p->off = off;
		p->ptr_off = cur.ptr_off;
		p->parent = (int)i - 1;
		stage[i] = kvmalloc(cur.size, GFP_KERNEL);
		if (!stage[i])
			return -ENOMEM;
		seal->npieces = i + 1;
		if (copy_from_user(stage[i], (const void __user *)uarg,
				   cur.size))
			return -EFAULT;
		off = ALIGN(off + cur.size, sizeof(u64));
		if (!vcore_sealed_next(core, &cur, stage[i], &next))
			break;
		uarg = vgpu_seal_ptr(stage[i], next.ptr_off);
		cur = next;
	}
	seal->len = PAGE_ALIGN(off);
	return 0;
}

/* The copy mapped into the caller's mm; the file's release frees @seal
 * from here on. */
static int vgpu_seal_map(struct vgpu_seal *seal)
{
	unsigned long addr;
	struct file *file;

	file = anon_inode_getfile("[vgpu-params]", &vgpu_seal_fops, seal,
				  O_RDWR);
	if (IS_ERR(file)) {
		vgpu_seal_free(seal);
		return PTR_ERR(file);
	}
	seal->file = file;
	WRITE_ONCE(seal->mapping, true);
	addr = vm_mmap(file, 0, seal->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       0);
	WRITE_ONCE(seal->mapping, false);
	if (IS_ERR_VALUE(addr)) {
		fput(file);
		return (int)addr;
	}
	seal->addr = addr;
	return 0;
}

struct vgpu_seal *vgpu_seal(const struct vcore_file *core, unsigned int cmd,
			    unsigned long uarg)
{
	void *stage[VCORE_SEAL_MAX_PIECES] = {};
	struct vcore_seal_piece top;
	struct vgpu_seal *seal;
	unsigned int i;
	int err;

	if (!vcore_sealed_size(core, cmd, &top))
		return NULL;
	seal = kzalloc(sizeof(*seal), GFP_KERNEL);
	if (!seal)
		return ERR_PTR(-ENOMEM);
	seal->task = current;
	spin_lock_init(&seal->lock);
	err = vgpu_seal_read(seal, core, top, uarg, stage);
	if (!err) {
		seal->buf =
			seal->len > VGPU_SEAL_MAX_EXACT
				? vzalloc(seal->len)
				: alloc_pages_exact(seal->len,
						    GFP_KERNEL | __GFP_ZERO);
		if (!seal->buf)
			err = -ENOMEM;
	}
	for (i = 0; !err && i < seal->npieces; i++) {
		const struct vgpu_seal_piece *p = &seal->piece[i];

		memcpy((u8 *)seal->buf + p->off, stage[i], p->size);
	}
	for (i = 0; i < seal->npieces; i++)
		kvfree(stage[i]);
	if (err) {
		vgpu_seal_free(seal);
		return ERR_PTR(err);
	}
	err = vgpu_seal_map(seal);
	if (err)
		return ERR_PTR(err);
	/* Each nested piece's pointer in its parent's copy: the copy. */
	for (i = 1; i < seal->npieces; i++)
		vgpu_seal_set_ptr(seal, i, seal->addr + seal->piece[i].off);
	return seal;
}

unsigned long vgpu_seal_addr(const struct vgpu_seal *seal)
{
	return seal->addr;
}

bool vgpu_seal_replaced(const struct vgpu_seal *seal)
{
	return READ_ONCE(seal->replaced);
}

void *vgpu_seal_kaddr(const struct vgpu_seal *seal, unsigned long uaddr,
		      size_t n)
{
	if (uaddr < seal->addr || n > seal->len ||
	    uaddr - seal->addr > seal->len - n)
		return NULL;
	return (u8 *)seal->buf + (uaddr - seal->addr);
}

int vgpu_seal_lend(struct vgpu_seal *seal)
{
	int err = 0;

	spin_lock(&seal->lock);
	if (seal->replaced)
		err = -EFAULT; /* the driver would read someone else's page */
	else if (seal->abandoned)
		err = -EINTR;
	else
		WRITE_ONCE(seal->lent, current);
	spin_unlock(&seal->lock);
	return err;
}

void vgpu_seal_unlend(struct vgpu_seal *seal)
{
	spin_lock(&seal->lock);
	WRITE_ONCE(seal->lent, NULL);
	spin_unlock(&seal->lock);
}

void vgpu_seal_abandon(struct vgpu_seal *seal)
{
	spin_lock(&seal->lock);
	seal->abandoned = true;
	if (seal->lent)
		send_sig(SIGKILL, seal->lent, 1);
	spin_unlock(&seal->lock);
}

int vgpu_seal_put_u32(const struct vgpu_seal *seal, u32 __user *uaddr, u32 v)
{
	u32 *k = seal ? vgpu_seal_kaddr(seal, (unsigned long)uaddr, sizeof(v))
		      : NULL;

	if (!k)
		return put_user(v, uaddr);
	memcpy(k, &v, sizeof(v));
	return 0;
}

long vgpu_unseal(struct vgpu_seal *seal, long rc)
{
	unsigned int i;
	bool replaced;

	WRITE_ONCE(seal->in_flight, false);
	replaced = READ_ONCE(seal->replaced);
	/* The caller's own pointers back in, then every piece (the driver's
	 * answer: statuses, outputs) to the caller's own buffer. */
	for (i = 1; i < seal->npieces; i++)
		vgpu_seal_set_ptr(seal, i, seal->piece[i].uaddr);
	/* Innermost first, as RM copies nested params out before
	 * nvidia_ioctl copies the argument out. */
	for (i = seal->npieces; i--;) {
		const struct vgpu_seal_piece *p = &seal->piece[i];

		if (copy_to_user((void __user *)p->uaddr,
				 (u8 *)seal->buf + p->off, p->size) &&
		    rc >= 0)
			rc = -EFAULT;
	}
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

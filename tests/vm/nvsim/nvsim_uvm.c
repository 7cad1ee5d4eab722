// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/nvidia-uvm, reduced to what the fd-table contract needs (nvidia-rm-abi.md §7, §9.3.2):
 * UVM_REGISTER_GPU reaches nvGpuOpsGetGpuInfo, which fails with NV_ERR_INSUFFICIENT_PERMISSIONS
 * unless the calling process has a real GPU file of that GPU in its fd table, even though the
 * ioctl arrives on the UVM node. UVM_INITIALIZE / UNREGISTER_GPU succeed; UVM_MM_INITIALIZE
 * checks its uvmFd as the driver does; external ranges and mappings are nvsim_uvm_ext.c;
 * everything else is -EINVAL (UVM_MIGRATE is counted). A mapping is a managed range of its size
 * as the driver makes it (nvsim_uvm_mmap); nothing populates it. Dynamic major, like the real
 * "nvidia-uvm" region.
 *
 * What the driver takes from current in these calls, and nvsim with it: the parameters are
 * copied in and out through current->mm (the routing, __UVM_ROUTE_CMD_STACK in uvm_api.h);
 * UVM_INITIALIZE records current->mm as the va space's process (uvm_va_space_mm_register,
 * uvm_va_space_mm.c:195); UVM_MM_INITIALIZE fget()s uvmFd in current->files (uvm.c:67) and takes
 * the va space's recorded mm, never current->mm (uvm.c:112-113).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "nvsim.h"

static dev_t nvsim_uvm_dev;
static struct cdev nvsim_uvm_cdev;
static const struct file_operations nvsim_uvm_fops;

/* One open /dev/nvidia-uvm (file->private_data): what uvm_fd_type() tells in the driver. */
struct nvsim_uvm_open {
	void *ext;            /* nvsim_uvm_ext.c's ranges */
	bool va_space;        /* UVM_INITIALIZE done: UVM_FD_VA_SPACE */
	struct mm_struct *mm; /* a va space's process (mmgrab), as its va_space_mm.mm */
	struct file *mm_of;   /* UVM_MM_INITIALIZE done: UVM_FD_MM, holding this va-space file */
};

/* Read-only: UVM_MIGRATE calls that reached nvsim. vgpu.ko refuses them under a quota (F6), so
 * one counted there came another way (docs/security/kernel-call-path.md, F4). */
static unsigned int uvm_migrate_calls;
module_param(uvm_migrate_calls, uint, 0444);
MODULE_PARM_DESC(uvm_migrate_calls, "UVM_MIGRATE calls received (answered -EINVAL)");

/* Read-only: UVM_MM_INITIALIZE calls that reached nvsim (a caller killed while its call waited
 * in vgpu.ko's queue must not be one, kmod/kthread_call.c). */
static unsigned int uvm_mm_initialize_calls;
module_param(uvm_mm_initialize_calls, uint, 0444);
MODULE_PARM_DESC(uvm_mm_initialize_calls, "UVM_MM_INITIALIZE calls received");

/* Test hook (not a driver behaviour): UVM_MM_INITIALIZE sleeps this long (µs) after its fget,
 * holding the call open, so that a sibling thread's call lands inside it for certain. */
static unsigned int uvm_mm_initialize_delay_us;
module_param(uvm_mm_initialize_delay_us, uint, 0644);
MODULE_PARM_DESC(uvm_mm_initialize_delay_us, "UVM_MM_INITIALIZE holds its call this long (us)");

/* Read-only: bytes of managed ranges live under UVM mappings (what the driver could populate). */
static unsigned long uvm_managed_bytes;
module_param(uvm_managed_bytes, ulong, 0444);
MODULE_PARM_DESC(uvm_managed_bytes, "bytes of managed ranges under live UVM mappings");
static DEFINE_SPINLOCK(nvsim_uvm_managed_lock); /* protects uvm_managed_bytes */

static void nvsim_uvm_managed_add(long bytes)
{
	spin_lock(&nvsim_uvm_managed_lock);
	uvm_managed_bytes += bytes;
	spin_unlock(&nvsim_uvm_managed_lock);
}

/* uvm_vm_ops_disabled: a moved or forked copy holds no range; touching it faults (SIGBUS). */
static const struct vm_operations_struct nvsim_uvm_vm_ops_disabled;

/*
 * uvm_vm_open_managed (uvm.c:396-503 at 580.105.08): vm_private_data names the VMA the new one
 * was copied from. A fork (another mm) or a move (mremap: neither end shared) gets a disabled
 * copy (uvm_disable_vma); a split keeps its piece of the range.
 */
static void nvsim_uvm_vm_open(struct vm_area_struct *vma)
{
	struct vm_area_struct *orig = vma->vm_private_data;

	if (vma->vm_mm != orig->vm_mm ||
	    (vma->vm_start != orig->vm_start && vma->vm_end != orig->vm_end)) {
		vma->vm_ops = &nvsim_uvm_vm_ops_disabled;
		vma->vm_private_data = NULL;
		return;
	}
	vma->vm_private_data = vma;
}

/* uvm_vm_close_managed: the piece's range is destroyed with it. */
static void nvsim_uvm_vm_close(struct vm_area_struct *vma)
{
	nvsim_uvm_managed_add(-(long)(vma->vm_end - vma->vm_start));
}

static const struct vm_operations_struct nvsim_uvm_vm_ops_managed = {
	.open = nvsim_uvm_vm_open,
	.close = nvsim_uvm_vm_close,
};

struct nvsim_gpu *nvsim_gpu_by_uuid(const u8 *uuid)
{
	u8 want[16] = NVSIM_GPU_UUID_PREFIX;
	unsigned int i;

	for (i = 0; i < nvsim_num_gpus; i++) {
		want[15] = i;
		if (!memcmp(uuid, want, sizeof(want)))
			return &nvsim_gpus[i];
	}
	return NULL;
}

/*
 * uvm_api_mm_initialize (uvm.c:59-135 at 580.142): uvmFd is fget()-ed and must have nvidia-uvm's
 * f_op (uvm_file_is_nvidia_uvm, uvm.c:49-52) and be a va-space file; the calling file, not yet
 * typed, becomes an MM file that keeps that file until it closes (uvm.c:126, 231-248), and a
 * reference on the va space's mm, not current's (mmget_not_zero, uvm.c:112-113; mmput at
 * uvm.c:243).
 */
static u32 nvsim_uvm_mm_initialize(struct nvsim_uvm_open *mm, int fd)
{
	struct file *f = fget(fd);
	struct nvsim_uvm_open *uo;
	u32 status = NV_ERR_INVALID_ARGUMENT;

	uvm_mm_initialize_calls++;
	if (!f)
		return status;
	if (f->f_op != &nvsim_uvm_fops)
		goto out;
	if (uvm_mm_initialize_delay_us)
		usleep_range(uvm_mm_initialize_delay_us, uvm_mm_initialize_delay_us + 10);
	uo = f->private_data;
	mutex_lock(&nvsim_rm_lock);
	if (uo->va_space && uo != mm && !mm->va_space && !mm->mm_of) {
		status = NV_ERR_PAGE_TABLE_NOT_AVAIL;
		if (uo->mm && mmget_not_zero(uo->mm)) {
			mm->mm_of = f;
			f = NULL;
			status = NV_OK;
		}
	}
	mutex_unlock(&nvsim_rm_lock);
out:
	if (f)
		fput(f);
	return status;
}

static long nvsim_uvm_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct nvsim_uvm_open *uo = filp->private_data;
	void __user *up = (void __user *)arg;
	long ret;

	switch (cmd) {
	case UVM_INITIALIZE: {
		struct uvm_initialize_params p;

		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		/* An MM file is not a va space (uvm.c:971-973). */
		mutex_lock(&nvsim_rm_lock);
		p.rmStatus = uo->mm_of ? NV_ERR_INVALID_ARGUMENT : NV_OK;
		if (!uo->mm_of && !uo->va_space) {
			uo->mm = current->mm;
			if (uo->mm)
				mmgrab(uo->mm);
			/* mmap reads both without nvsim_rm_lock (it holds mmap_lock). */
			smp_store_release(&uo->va_space, true);
		}
		mutex_unlock(&nvsim_rm_lock);
		return copy_to_user(up, &p, sizeof(p)) ? -EFAULT : 0;
	}
	case UVM_MM_INITIALIZE: {
		struct uvm_mm_initialize_params p;

		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		p.rmStatus = nvsim_uvm_mm_initialize(uo, p.uvmFd);
		return copy_to_user(up, &p, sizeof(p)) ? -EFAULT : 0;
	}
	case UVM_DEINITIALIZE:
		return 0;
	case UVM_MIGRATE:
		mutex_lock(&nvsim_rm_lock);
		uvm_migrate_calls++;
		mutex_unlock(&nvsim_rm_lock);
		return -EINVAL;
	case UVM_REGISTER_GPU: {
		struct uvm_register_gpu_params p;
		struct nvsim_gpu *gpu;

		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		gpu = nvsim_gpu_by_uuid(p.gpu_uuid);
		if (!gpu)
			p.rmStatus = NV_ERR_INVALID_DEVICE;
		else if (!nvsim_gpu_accessible(gpu))
			p.rmStatus = NV_ERR_INSUFFICIENT_PERMISSIONS;
		else
			p.rmStatus = NV_OK;
		p.numaEnabled = 0;
		p.numaNodeId = -1;
		return copy_to_user(up, &p, sizeof(p)) ? -EFAULT : 0;
	}
	case UVM_UNREGISTER_GPU: {
		struct uvm_unregister_gpu_params p;

		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		p.rmStatus = nvsim_gpu_by_uuid(p.gpu_uuid) ? NV_OK : NV_ERR_INVALID_DEVICE;
		return copy_to_user(up, &p, sizeof(p)) ? -EFAULT : 0;
	}
	default:
		nvsim_sibling_uvm(cmd, up); /* test hook, off unless armed */
		ret = nvsim_uvm_ext_ioctl(uo->ext, cmd, up);
		return ret == -ENOIOCTLCMD ? -EINVAL : ret;
	}
}

/*
 * uvm_mmap (uvm.c:759-913 at 580.105.08): only a va-space file of the caller's own mm
 * (-EBADFD, -EOPNOTSUPP), at offset == address (-EINVAL), shared and read-write (-EINVAL); the
 * VMA gets VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTCOPY (mremap cannot grow it, fork does not copy
 * it) and a managed range of exactly its size.
 */
static int nvsim_uvm_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct nvsim_uvm_open *uo = filp->private_data;

	/* No nvsim_rm_lock: the caller holds mmap_lock, which copy_from_user under that lock takes. */
	if (!smp_load_acquire(&uo->va_space))
		return -EBADFD;
	if (uo->mm != current->mm)
		return -EOPNOTSUPP;
	if (vma->vm_start != (vma->vm_pgoff << PAGE_SHIFT))
		return -EINVAL;
	if ((vma->vm_flags & (VM_SHARED | VM_READ | VM_WRITE)) != (VM_SHARED | VM_READ | VM_WRITE))
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTCOPY);
#else
	vma->vm_flags |= VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTCOPY;
#endif
	vma->vm_ops = &nvsim_uvm_vm_ops_managed;
	vma->vm_private_data = vma;
	nvsim_uvm_managed_add(vma->vm_end - vma->vm_start);
	return 0;
}

static int nvsim_uvm_open(struct inode *inode, struct file *filp)
{
	struct nvsim_uvm_open *uo = kzalloc(sizeof(*uo), GFP_KERNEL);

	if (!uo)
		return -ENOMEM;
	uo->ext = nvsim_uvm_ext_open();
	if (!uo->ext) {
		kfree(uo);
		return -ENOMEM;
	}
	filp->private_data = uo;
	return 0;
}

static int nvsim_uvm_release(struct inode *inode, struct file *filp)
{
	struct nvsim_uvm_open *uo = filp->private_data;

	if (uo->mm_of) {
		mmput(((struct nvsim_uvm_open *)uo->mm_of->private_data)->mm);
		fput(uo->mm_of);
	}
	if (uo->mm)
		mmdrop(uo->mm);
	nvsim_uvm_ext_release(uo->ext);
	kfree(uo);
	return 0;
}

int nvsim_uvm_init(struct class *cls)
{
	struct device *d;
	int ret;

	ret = alloc_chrdev_region(&nvsim_uvm_dev, 0, 1, "nvidia-uvm");
	if (ret)
		return ret;
	cdev_init(&nvsim_uvm_cdev, &nvsim_uvm_fops);
	ret = cdev_add(&nvsim_uvm_cdev, nvsim_uvm_dev, 1);
	if (ret)
		goto err_region;
	d = device_create(cls, NULL, nvsim_uvm_dev, NULL, "nvidia-uvm");
	if (IS_ERR(d)) {
		ret = PTR_ERR(d);
		goto err_cdev;
	}
	return 0;

err_cdev:
	cdev_del(&nvsim_uvm_cdev);
err_region:
	unregister_chrdev_region(nvsim_uvm_dev, 1);
	return ret;
}

void nvsim_uvm_exit(struct class *cls)
{
	device_destroy(cls, nvsim_uvm_dev);
	cdev_del(&nvsim_uvm_cdev);
	unregister_chrdev_region(nvsim_uvm_dev, 1);
}

static const struct file_operations nvsim_uvm_fops = {
	.owner = THIS_MODULE,
	.open = nvsim_uvm_open,
	.release = nvsim_uvm_release,
	.unlocked_ioctl = nvsim_uvm_ioctl,
	.compat_ioctl = nvsim_uvm_ioctl,
	.mmap = nvsim_uvm_mmap,
	.llseek = noop_llseek,
};

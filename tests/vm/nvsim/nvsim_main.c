// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim: a simulated NVIDIA driver for the test guest. It keeps the contract of nvidia.ko that
 * a proxy in front of it can break (docs/nvidia-rm-abi.md §9): major 195 nodes named like
 * the real ones, ioctls decoded by (nr, size) only, XFER unwrapping, clients bound to the ctl
 * file, REGISTER_FD, fd lookups that require major 195, the fd-table check for device
 * allocation, one mmap context per file and vm_ops that use vma->vm_file.
 *
 * This file: nodes, file operations, ioctl decoding, fd lookups. RM objects: nvsim_rm.c,
 * controls: nvsim_ctrl.c, mapped memory and mmap: nvsim_mem.c, the in-kernel entry point:
 * nvsim_rmops.c, the tamper test hook: nvsim_hook.c. GPU time: nvsim_sched.c. Locking: nvsim.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "nvsim.h"

static unsigned int num_gpus = 1;
module_param(num_gpus, uint, 0444);
MODULE_PARM_DESC(num_gpus, "number of simulated GPUs, /dev/nvidia0..N-1 (1-8)");
static unsigned int vidmem_mib = 1024;
module_param(vidmem_mib, uint, 0444);
MODULE_PARM_DESC(vidmem_mib, "allocatable video memory per GPU (HEAP_SIZE), MiB");
static unsigned int reserved_mib = 64;
module_param(reserved_mib, uint, 0444);
MODULE_PARM_DESC(reserved_mib, "TOTAL_RAM_SIZE - HEAP_SIZE per GPU, MiB");

DEFINE_MUTEX(nvsim_rm_lock);
struct nvsim_gpu nvsim_gpus[NVSIM_MAX_GPUS];
unsigned int nvsim_num_gpus;

static struct cdev nvsim_cdev;
static struct class *nvsim_class;

int nvsim_copy_in(const struct nvsim_caller *c, void *dst, u64 src, size_t n)
{
	if (!src)
		return -EFAULT;
	if (c->kernel) {
		memcpy(dst, (const void *)(uintptr_t)src, n);
		return 0;
	}
	return copy_from_user(dst, u64_to_user_ptr(src), n) ? -EFAULT : 0;
}

int nvsim_copy_out(const struct nvsim_caller *c, u64 dst, const void *src, size_t n)
{
	if (!dst)
		return -EFAULT;
	if (c->kernel) {
		memcpy((void *)(uintptr_t)dst, src, n);
		return 0;
	}
	return copy_to_user(u64_to_user_ptr(dst), src, n) ? -EFAULT : 0;
}

/*
 * nv_get_file_private() (nvidia-rm-abi.md §9.3.1; nv.c:4071-4125 at 580.142): fget(fd) in current's
 * table, then the inode's major 195 and minor 255 (ctl) or a GPU minor, then private_data, cast
 * to the driver's per-open data without checking f_op: exactly these checks here, so that a file
 * the driver accepts (vgpu.ko's decoys, kmod/decoy.c) is accepted. Where the real driver would
 * misread a foreign private_data (a major-195 file that is not a driver open: a proxy's own
 * node, for one), nvsim refuses it loudly instead, because that is exactly the proxy bug the
 * simulator exists to expose.
 * On success returns the nvsim_file with *filp holding a reference (fput it).
 */
struct nvsim_file *nvsim_fget_rm_file(int fd, bool want_ctl, struct file **filp, u32 *status)
{
	struct file *f = fget(fd);
	struct nvsim_file *nvf;
	struct inode *inode;
	unsigned int minor;

	*filp = NULL;
	*status = NV_ERR_INVALID_ARGUMENT;
	if (!f)
		return NULL;
	inode = file_inode(f);
	if (!inode || imajor(inode) != NV_MAJOR_DEVICE_NUMBER)
		goto refuse;
	minor = iminor(inode);
	if (want_ctl ? minor != NV_CTL_MINOR : minor >= nvsim_num_gpus)
		goto refuse;
	nvf = nvsim_file_of(f);
	if (!nvf || nvf->magic != NVSIM_FILE_MAGIC) {
		pr_warn_ratelimited("fd %d of %s[%d] is major 195 but its private_data is not an nvsim open: the real driver would misread it\n",
				    fd, current->comm, task_pid_nr(current));
		goto refuse;
	}
	*filp = f;
	*status = NV_OK;
	return nvf;
refuse:
	fput(f);
	return NULL;
}

/* ---- file operations ---------------------------------------------------------------------- */

static int nvsim_open(struct inode *inode, struct file *filp)
{
	unsigned int minor = iminor(inode);
	struct nvsim_file *nvf;

	if (minor != NV_CTL_MINOR && minor >= nvsim_num_gpus)
		return -ENODEV;
	nvf = kzalloc(sizeof(*nvf), GFP_KERNEL);
	if (!nvf)
		return -ENOMEM;
	nvf->magic = NVSIM_FILE_MAGIC;
	nvf->filp = filp;
	nvf->gpu = minor == NV_CTL_MINOR ? NULL : &nvsim_gpus[minor];
	filp->private_data = nvf;
	return 0;
}

/*
 * rm_cleanup_file_private (nvidia-rm-abi.md §9.1): frees every client whose OS info is this file and
 * drops the REGISTER_FD reference. A VMA holds its file, so no mapping outlives the context.
 */
static int nvsim_release(struct inode *inode, struct file *filp)
{
	struct nvsim_file *nvf = nvsim_file_of(filp);

	nvsim_export_release(nvf);
	nvsim_gpus_release(nvf);
	nvsim_rm_free_file_clients(nvf);
	if (nvf->ctl_filp)
		fput(nvf->ctl_filp);
	nvsim_mmap_ctx_free(nvf->mmap_ctx);
	kfree(nvf);
	return 0;
}

/* NV_ESC_REGISTER_FD (nvidia-rm-abi.md §9.2): bind a dev file to the ctl file that owns its clients. */
static int nvsim_register_fd(struct nvsim_file *nvf, struct nv_ioctl_register_fd *p)
{
	struct nvsim_file *ctl;
	struct file *ctl_filp;
	u32 status;
	int ret = 0;

	ctl = nvsim_fget_rm_file(p->ctl_fd, true, &ctl_filp, &status);
	if (!ctl)
		return -EINVAL;
	mutex_lock(&nvsim_rm_lock);
	/* Refused: a second registration, a self-link, and a chain through a registered file. */
	if (nvf->ctl_filp || ctl == nvf || ctl->ctl_filp)
		ret = -EINVAL;
	else
		WRITE_ONCE(nvf->ctl_filp, ctl_filp);
	mutex_unlock(&nvsim_rm_lock);
	if (ret)
		fput(ctl_filp);
	return ret;
}

static void nvsim_card_info(struct nv_ioctl_card_info *ci, unsigned int n)
{
	unsigned int i;

	memset(ci, 0, sizeof(*ci) * n);
	for (i = 0; i < n && i < nvsim_num_gpus; i++) {
		ci[i].valid = 1;
		ci[i].pci_info.slot = nvsim_gpu_pci_slot(i);
		ci[i].pci_info.vendor_id = 0x10de;
		ci[i].pci_info.device_id = 0x2335; /* H200 */
		ci[i].gpu_id = nvsim_gpu_id(i);
		ci[i].fb_size = 256ULL << 20; /* BAR1, not vidmem (nvidia-rm-abi.md §5.3) */
		ci[i].minor_number = i;
		/* i < NVSIM_MAX_GPUS: one digit. */
		memcpy(ci[i].dev_name, "nvidia", 6);
		ci[i].dev_name[6] = '0' + i;
	}
}

static int nvsim_check_version(struct nv_ioctl_rm_api_version *p)
{
	p->versionString[sizeof(p->versionString) - 1] = '\0';
	switch (p->cmd) {
	case NV_RM_API_VERSION_CMD_QUERY:
		strscpy(p->versionString, NV_VERSION_STRING, sizeof(p->versionString));
		p->reply = NV_RM_API_VERSION_REPLY_RECOGNIZED;
		return 0;
	case NV_RM_API_VERSION_CMD_RELAXED:
		p->reply = NV_RM_API_VERSION_REPLY_RECOGNIZED;
		return 0;
	default:
		if (!strcmp(p->versionString, NV_VERSION_STRING)) {
			p->reply = NV_RM_API_VERSION_REPLY_RECOGNIZED;
			return 0;
		}
		strscpy(p->versionString, NV_VERSION_STRING, sizeof(p->versionString));
		p->reply = NV_RM_API_VERSION_REPLY_UNRECOGNIZED;
		return -EINVAL;
	}
}

/* Which file each escape must arrive on (nvidia-rm-abi.md §1.2). */
enum nvsim_on { NVSIM_CTL, NVSIM_DEV, NVSIM_ANY };

static bool nvsim_file_ok(const struct nvsim_file *nvf, enum nvsim_on on)
{
	return on == NVSIM_ANY || (on == NVSIM_CTL) == !nvf->gpu;
}

/* NV01_EVENT, NV01_EVENT_KERNEL_CALLBACK(_EX), NV01_EVENT_OS_EVENT (escape.c:396-414). */
static bool nvsim_is_event_class(u32 hclass)
{
	return hclass == 0x05 || hclass == 0x78 || hclass == 0x7e || hclass == 0x79;
}

/* Dispatch one escape on a private copy of its params; the caller copies them back. */
static int nvsim_dispatch(struct nvsim_file *nvf, unsigned int nr, void *buf, size_t size)
{
	/* RM calls act for nvfp->ctl_nvfp ?: nvfp (escape.c:308-310). */
	struct nvsim_caller c = {
		.os_info = nvf,
	};
	struct file *ctl_filp = READ_ONCE(nvf->ctl_filp);

	if (ctl_filp)
		c.os_info = nvsim_file_of(ctl_filp);

#define NVSIM_NEED(sz, on) \
	do { if (size != (sz) || !nvsim_file_ok(nvf, on)) return -EINVAL; } while (0)
	switch (nr) {
	case NV_ESC_RM_ALLOC:
		/* Event classes may be allocated on any file, everything else on ctl (§1.2). */
		if (nvf->gpu && (size == sizeof(struct nvos64) || size == sizeof(struct nvos21)) &&
		    !nvsim_is_event_class(((struct nvos21 *)buf)->hClass))
			return -EINVAL;
		if (size == sizeof(struct nvos64)) {
			nvsim_rm_alloc(&c, buf);
		} else if (size == sizeof(struct nvos21)) {
			struct nvos21 *p21 = buf;
			struct nvos64 p64 = {
				.hRoot = p21->hRoot, .hObjectParent = p21->hObjectParent,
				.hObjectNew = p21->hObjectNew, .hClass = p21->hClass,
				.pAllocParms = p21->pAllocParms, .paramsSize = p21->paramsSize,
			};
			nvsim_rm_alloc(&c, &p64);
			p21->hObjectNew = p64.hObjectNew;
			p21->status = p64.status;
		} else {
			return -EINVAL;
		}
		return 0;
	case NV_ESC_RM_FREE:
		NVSIM_NEED(sizeof(struct nvos00), NVSIM_CTL);
		nvsim_rm_free(&c, buf);
		return 0;
	case NV_ESC_RM_CONTROL:
		NVSIM_NEED(sizeof(struct nvos54), NVSIM_CTL);
		nvsim_rm_control(&c, buf);
		return 0;
	case NV_ESC_RM_DUP_OBJECT:
		NVSIM_NEED(sizeof(struct nvos55), NVSIM_CTL);
		nvsim_rm_dup(&c, buf);
		return 0;
	case NV_ESC_RM_SHARE:
		NVSIM_NEED(sizeof(struct nvos57), NVSIM_CTL);
		nvsim_rm_share(&c, buf);
		return 0;
	case NV_ESC_RM_VID_HEAP_CONTROL:
		NVSIM_NEED(sizeof(struct nvos32), NVSIM_CTL);
		nvsim_rm_vid_heap(&c, buf);
		return 0;
	case NV_ESC_RM_MAP_MEMORY:
		NVSIM_NEED(sizeof(struct nvos33_with_fd), NVSIM_CTL);
		nvsim_rm_map_memory(&c, buf);
		return 0;
	case NV_ESC_RM_UNMAP_MEMORY:
		NVSIM_NEED(sizeof(struct nvos34), NVSIM_CTL);
		nvsim_rm_unmap_memory(&c, buf);
		return 0;
	case NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO:
		NVSIM_NEED(sizeof(struct nvos56), NVSIM_CTL);
		nvsim_rm_update_mapping_info(&c, buf);
		return 0;
	case NV_ESC_RM_ALLOC_MEMORY:
		NVSIM_NEED(sizeof(struct nvos02_with_fd), NVSIM_DEV);
		nvsim_rm_alloc_memory(&c, buf);
		return 0;
	case NV_ESC_CARD_INFO:
		if (!size || size % sizeof(struct nv_ioctl_card_info) || nvf->gpu)
			return -EINVAL;
		nvsim_card_info(buf, size / sizeof(struct nv_ioctl_card_info));
		return 0;
	case NV_ESC_REGISTER_FD:
		NVSIM_NEED(sizeof(struct nv_ioctl_register_fd), NVSIM_ANY);
		return nvsim_register_fd(nvf, buf);
	case NV_ESC_CHECK_VERSION_STR:
		NVSIM_NEED(sizeof(struct nv_ioctl_rm_api_version), NVSIM_CTL);
		return nvsim_check_version(buf);
	case NV_ESC_ALLOC_OS_EVENT:
	case NV_ESC_FREE_OS_EVENT: {
		struct nv_ioctl_os_event *ev = buf;

		NVSIM_NEED(sizeof(*ev), NVSIM_ANY);
		/* OS events are keys, not fd lookups (§9.3.5); nvsim never signals them. */
		ev->Status = nvsim_rm_check_client(&c, ev->hClient);
		return 0;
	}
	case NV_ESC_SYS_PARAMS:
		NVSIM_NEED(sizeof(struct nv_ioctl_sys_params), NVSIM_CTL);
		return 0;
	case NV_ESC_STATUS_CODE:
		NVSIM_NEED(sizeof(struct nv_ioctl_status_code), NVSIM_CTL);
		((struct nv_ioctl_status_code *)buf)->status = NV_OK;
		return 0;
	case NV_ESC_WAIT_OPEN_COMPLETE:
		NVSIM_NEED(sizeof(struct nv_ioctl_wait_open_complete), NVSIM_ANY);
		memset(buf, 0, size);
		return 0;
	case NV_ESC_NUMA_INFO:
		NVSIM_NEED(NV_IOCTL_NUMA_INFO_SIZE, NVSIM_DEV);
		memset(buf, 0, size);
		*(s32 *)buf = -1; /* nid: no NUMA memory */
		return 0;
	case NV_ESC_ATTACH_GPUS_TO_FD:
		if (size % sizeof(u32) || nvf->gpu)
			return -EINVAL;
		return nvsim_attach_gpus_to_fd(nvf, buf, size / sizeof(u32));
	default:
		return -EINVAL;
	}
#undef NVSIM_NEED
}

/*
 * nvidia_ioctl (nv.c:2375-2783): only _IOC_NR and _IOC_SIZE count; XFER (nr 0xD3, outer size
 * 16) swaps in an inner nr/size/pointer, capped at 16384; the whole buffer is copied back
 * unless the call faulted; RM results travel in the status field with ioctl() returning 0.
 */
static long nvsim_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct nvsim_file *nvf = nvsim_file_of(filp);
	unsigned int nr = _IOC_NR(cmd);
	size_t size = _IOC_SIZE(cmd);
	void __user *uptr = (void __user *)arg;
	struct nvsim_undo undo = {};
	bool rewritten;
	void *buf;
	int ret;

	if (nr == NV_ESC_IOCTL_XFER_CMD) {
		struct nv_ioctl_xfer xfer;

		if (size != sizeof(xfer))
			return -EINVAL;
		nvsim_rewrite_xfer(uptr);
		if (copy_from_user(&xfer, uptr, sizeof(xfer)))
			return -EFAULT;
		/* A nested XFER reaches no handler in the real driver: -EINVAL. */
		if (xfer.cmd == NV_ESC_IOCTL_XFER_CMD || xfer.size > NV_ABSOLUTE_MAX_IOCTL_SIZE)
			return -EINVAL;
		nr = xfer.cmd;
		size = xfer.size;
		uptr = u64_to_user_ptr(xfer.ptr);
	}
	if (!size || size > NV_ABSOLUTE_MAX_IOCTL_SIZE)
		return -EINVAL;
	nvsim_sibling_rm(nr, uptr, size); /* test hook, off unless armed */
	rewritten = nvsim_rewrite_alloc(nr, uptr, size, &undo);
	buf = kmalloc(size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (copy_from_user(buf, uptr, size)) {
		ret = -EFAULT;
		goto out;
	}
	/* Copied back whatever the result (CHECK_VERSION_STR returns the driver's version with
	 * -EINVAL), unless the call faulted. */
	ret = nvsim_dispatch(nvf, nr, buf, size);
	if (ret != -EFAULT && copy_to_user(uptr, buf, size))
		ret = -EFAULT;
	if (rewritten && !ret)
		nvsim_rewrite_alloc_after(uptr, size);
out:
	nvsim_rewrite_undo(&undo);
	kfree(buf);
	return ret;
}

/* ---- module init/exit ------------------------------------------------------------------------ */

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static char *nvsim_devnode(const struct device *dev, umode_t *mode)
#else
static char *nvsim_devnode(struct device *dev, umode_t *mode)
#endif
{
	if (mode)
		*mode = 0666;
	return NULL;
}

static int __init nvsim_init(void)
{
	dev_t base = MKDEV(NV_MAJOR_DEVICE_NUMBER, 0);
	unsigned int i, made = 0;
	struct device *d;
	int ret;

	if (num_gpus < 1 || num_gpus > NVSIM_MAX_GPUS || !vidmem_mib)
		return -EINVAL;
	nvsim_num_gpus = num_gpus;
	for (i = 0; i < num_gpus; i++) {
		nvsim_gpus[i].minor = i;
		nvsim_gpus[i].heap_bytes = (u64)vidmem_mib << 20;
		nvsim_gpus[i].reserved_bytes = (u64)reserved_mib << 20;
		nvsim_sched_init(&nvsim_gpus[i]);
	}

	/* The real driver registers all 256 minors of major 195 as "nvidia" (nv.c:955-962). */
	ret = register_chrdev_region(base, NV_CTL_MINOR + 1, "nvidia");
	if (ret)
		return ret;
	cdev_init(&nvsim_cdev, &nvsim_fops);
	ret = cdev_add(&nvsim_cdev, base, NV_CTL_MINOR + 1);
	if (ret)
		goto err_region;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	nvsim_class = class_create("nvsim");
#else
	nvsim_class = class_create(THIS_MODULE, "nvsim");
#endif
	if (IS_ERR(nvsim_class)) {
		ret = PTR_ERR(nvsim_class);
		goto err_cdev;
	}
	nvsim_class->devnode = nvsim_devnode;
	d = device_create(nvsim_class, NULL, MKDEV(NV_MAJOR_DEVICE_NUMBER, NV_CTL_MINOR), NULL,
			  "nvidiactl");
	if (IS_ERR(d)) {
		ret = PTR_ERR(d);
		goto err_class;
	}
	for (made = 0; made < num_gpus; made++) {
		d = device_create(nvsim_class, NULL, MKDEV(NV_MAJOR_DEVICE_NUMBER, made), NULL,
				  "nvidia%u", made);
		if (IS_ERR(d)) {
			ret = PTR_ERR(d);
			goto err_devices;
		}
	}
	ret = nvsim_uvm_init(nvsim_class);
	if (ret)
		goto err_devices;
	ret = nvsim_debugfs_init();
	if (ret)
		goto err_uvm;
	pr_info("%u GPU(s), %u MiB video memory each, driver version %s\n", num_gpus, vidmem_mib,
		NV_VERSION_STRING);
	return 0;

err_uvm:
	nvsim_uvm_exit(nvsim_class);
err_devices:
	while (made--)
		device_destroy(nvsim_class, MKDEV(NV_MAJOR_DEVICE_NUMBER, made));
	device_destroy(nvsim_class, MKDEV(NV_MAJOR_DEVICE_NUMBER, NV_CTL_MINOR));
err_class:
	class_destroy(nvsim_class);
err_cdev:
	cdev_del(&nvsim_cdev);
err_region:
	unregister_chrdev_region(base, NV_CTL_MINOR + 1);
	return ret;
}

static void __exit nvsim_exit(void)
{
	unsigned int i;

	nvsim_debugfs_exit();
	/* Every user client belongs to an open file, which pins the module; what is left was
	 * made through nvidia_get_rm_ops() by a kernel caller that did not free it. */
	nvsim_rm_free_file_clients(NULL);
	nvsim_share_exit();
	nvsim_uvm_exit(nvsim_class);
	for (i = nvsim_num_gpus; i--;)
		device_destroy(nvsim_class, MKDEV(NV_MAJOR_DEVICE_NUMBER, i));
	device_destroy(nvsim_class, MKDEV(NV_MAJOR_DEVICE_NUMBER, NV_CTL_MINOR));
	class_destroy(nvsim_class);
	cdev_del(&nvsim_cdev);
	unregister_chrdev_region(MKDEV(NV_MAJOR_DEVICE_NUMBER, 0), NV_CTL_MINOR + 1);
	pr_info("unloaded\n");
}

const struct file_operations nvsim_fops = {
	.owner = THIS_MODULE,
	.open = nvsim_open,
	.release = nvsim_release,
	.unlocked_ioctl = nvsim_ioctl,
	.compat_ioctl = nvsim_ioctl,
	.mmap = nvsim_mmap,
	.llseek = noop_llseek,
};

module_init(nvsim_init);
module_exit(nvsim_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Simulated NVIDIA RM driver for vgpu's guest tests");

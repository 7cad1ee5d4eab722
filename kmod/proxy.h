/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The data path: the proxy files and their calls. fops.c opens a proxy file
 * on one real file and forwards mmap and poll; ioctl.c runs each ioctl through
 * the filter core (pre -> fd translation -> real ioctl -> restore -> post);
 * fd_translate.c makes fd numbers inside parameters name decoys of real files
 * for the call (or runs it from the module's kernel thread, kthread_call.h);
 * overquota.c undoes, after the call, what the core found allocated past the
 * quota; file_release.c ends a proxy file when its real file ends;
 * uvm_mapping.c refunds a charged UVM mapping as the driver drops it. It calls
 * down into the slots (slot.h) and the filter core's host (core_host.h),
 * never into the control plane.
 */
#ifndef VGPU_KMOD_PROXY_H
#define VGPU_KMOD_PROXY_H

#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "kthread_call.h"
#include "nodes.h"
#include "seal.h"
#include "slot.h"

struct vcore_call;
struct vcore_file;

/* Per proxy file: exactly one real file, opened with the caller's flags and
 * credentials. */
struct vgpu_file {
	struct vgpu_slot *slot; /* holds a slot reference */
	enum vgpu_node_kind kind;
	struct file *real;
	pid_t tgid;		 /* opener, for attach/exit accounting */
	struct vcore_file *core; /* the filter core's record of this file */
	struct list_head linger; /* file_release.c: parked while real is held */
	/* uvm_mapping.c: the charged mappings of a UVM file */
	spinlock_t uvm_lock; /* protects uvm_mappings */
	struct list_head uvm_mappings;
};

/* A destroyed slot's files fail every call. */
static inline bool vgpu_file_revoked(struct vgpu_file *vf)
{
	return READ_ONCE(vf->slot->state) != VGPU_SLOT_STATE_ACTIVE;
}

/* fops.c */
extern const struct file_operations vgpu_fops;

/* ioctl.c: the proxy files' unlocked_ioctl and compat_ioctl; one call through
 * the filter (overquota.c frees through it); the mmap policy. */
long vgpu_fops_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long vgpu_filter_ioctl(struct vgpu_file *vf, unsigned int cmd,
		       unsigned long arg);

/* The mmap policy: 0 (*@charged: what the core charged the mapping) or the
 * error to return. */
int vgpu_filter_mmap(struct vgpu_file *vf, struct vm_area_struct *vma,
		     vcore_u64 *charged);

/*
 * uvm_mapping.c: a charged UVM mapping's end, reported to the core as the
 * driver drops its pieces. alloc before the driver's mmap (NULL: no memory),
 * attach after it succeeded (or kfree), free every record when the proxy file
 * ends, after its real file's last other reference went.
 */
struct vgpu_uvm_mapping;
struct vgpu_uvm_mapping *vgpu_uvm_mapping_alloc(void);
void vgpu_uvm_mapping_attach(struct vgpu_file *vf, struct vm_area_struct *vma,
			     struct vgpu_uvm_mapping *m);
void vgpu_uvm_mappings_free(struct vgpu_file *vf);

/*
 * file_release.c: a proxy file ends when its real file does. release()
 * finishes @vf now if the proxy holds the real file's only reference, else
 * parks it until that is so (a registered dev file or a mapping holds it).
 */
void vgpu_file_release(struct vgpu_file *vf);
/* Module exit, after the control plane (no new slot) and before the slots. */
void vgpu_linger_exit(void);

/* fd_translate.c */
struct vgpu_fd_fix {
	u32 __user *uaddr;  /* where the fd number lives in user memory */
	int orig;	    /* the number the caller wrote */
	int tmp;	    /* the temporary decoy fd installed, or -1 */
	struct file *decoy; /* the call's reference to it (decoy.h) */
	/* Or the real file, for kernel thread @kthread's table
	 * (kthread_call.h): a lookup that tests f_op (uvmFd, devDescriptor). */
	struct file *kthread_file;
	enum vgpu_kthread kthread;
	enum vgpu_node_kind kind; /* of the proxy file it named */
	/* The core's record of that proxy file, for vcore_call_set_fd_file
	 * (compared, never dereferenced, after the fd reference is put). */
	struct vcore_file *core;
	/* The call's sealed copy, or NULL: the field's stores go through it
	 * (seal.h, vgpu_seal_put_u32), and a kernel thread's call is lent it.
	 */
	struct vgpu_seal *seal;
};
int vgpu_fd_translate(struct vgpu_file *vf, struct vgpu_fd_fix *fix,
		      u32 __user *uaddr, int fd, enum vcore_fd_kind want,
		      struct vgpu_seal *seal);
void vgpu_fd_restore(struct vgpu_fd_fix *fix);
long vgpu_fd_call(struct file *real, unsigned int cmd, unsigned long arg,
		  const struct vgpu_fd_fix *fix, unsigned int nfix,
		  const struct vcore_call *call);
/* The decoy standing for a /dev/nvidiaN during one call (decoy.h). */
struct vgpu_gpu_witness {
	int fd;		    /* -1: none installed */
	struct file *decoy; /* the call's own reference */
};
int vgpu_install_gpu_witness(struct vgpu_file *vf, struct vgpu_gpu_witness *w);
void vgpu_remove_gpu_witness(struct vgpu_gpu_witness *w);

/* overquota.c: allocations that grew past the quota during the call. */
void vgpu_overquota_settle(struct vgpu_file *vf, u32 __user *status);

#endif /* VGPU_KMOD_PROXY_H */

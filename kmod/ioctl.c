// SPDX-License-Identifier: GPL-2.0
/*
 * The proxy files' calls through the filter core (kmod/core/vcore.h): the
 * ioctl path, pre -> fd translation -> real ioctl -> restore -> post, and the
 * mmap policy. The core's records and host ops are the layer below
 * (core_host.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "core_host.h"
#include "core/abi/nv_escape.h"
#include "proxy.h"
#include "real.h"
#include "slot.h"

#define VGPU_MAX_FD_FIELDS 8

/* ---- the mmap policy ------------------------------------------------ */

int vgpu_filter_mmap(struct vgpu_file *vf, struct vm_area_struct *vma,
		     vcore_u64 *charged)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	int err;

	*charged = 0;
	/* A tampered file's clients are gone; no mapping of what the driver
	 * may still hold for it unseen (vcore_file_tampered). */
	if (vcore_file_tampered(vf->core))
		return -ENODEV;
	if (vf->kind != VGPU_NODE_UVM)
		return 0;
	err = vcore_uvm_map(vf->core, len, charged);
	if (err) {
		pr_warn_ratelimited(
			"slot %u pid %d (%s): managed-memory mmap "
			"of %lu bytes refused: %s\n",
			vf->slot->id, task_tgid_nr(current), current->comm, len,
			err == -VCORE_ENOMEM ? "over the quota" : "bad file");
		vgpu_slot_refusal(vf->slot,
				  err == -VCORE_ENOMEM ? VGPU_EVENT_QUOTA_DENIED
						       : VGPU_EVENT_REFUSED,
				  len, "managed-memory mapping refused");
	}
	return err;
}

/* ---- the ioctl path -------------------------------------------------- */

static bool vgpu_fd_kind_ok(enum vcore_fd_kind want, enum vgpu_node_kind have)
{
	switch (want) {
	case VCORE_FD_NV_CTL:
		return have == VGPU_NODE_CTL;
	case VCORE_FD_NV_DEV:
		return have == VGPU_NODE_DEV;
	case VCORE_FD_UVM:
		return have == VGPU_NODE_UVM;
	case VCORE_FD_NV_ANY:
	case VCORE_FD_EXPORT:
	default:
		return have == VGPU_NODE_CTL || have == VGPU_NODE_DEV;
	}
}

/* @why is the core's static reason string and @kind its kind, both read
 * before vcore_post freed the call. */
static void vgpu_report_refusal(struct vgpu_file *vf, enum vcore_refusal kind,
				const char *why)
{
	struct vgpu_filter_slot *fs = vf->slot->filter;

	if (!__ratelimit(&fs->event_rs))
		return;
	vgpu_slot_refusal(vf->slot,
			  kind == VCORE_REFUSAL_QUOTA ? VGPU_EVENT_QUOTA_DENIED
						      : VGPU_EVENT_REFUSED,
			  0, why);
}

/*
 * A call the core marks VCORE_NEED_UNPRIVILEGED (NV_ESC_RM_ALLOC_MEMORY) as a
 * caller without CAP_SYS_ADMIN. Its class NV01_MEMORY_LOCAL_USER (the legacy
 * heap query) first tries NV01_MEMORY_LOCAL_PHYSICAL, a mappable
 * handle on the whole framebuffer, which RM grants when the caller is an
 * administrator (rmapi_deprecated_allocmemory.c, _rmAllocMemoryLocalUser;
 * the class is RS_FLAGS_ALLOC_PRIVILEGED, alloc_free.c
 * _serverAllocValidatePrivilege; osIsAdministrator() is
 * capable(CAP_SYS_ADMIN), nv-linux.h NV_IS_SUSER). A tenant with
 * CAP_SYS_ADMIN would see every tenant's memory; without it RM answers the
 * heap's limit with a dummy handle, which is all libcuda and NVML use (issue
 * 17, F11.2). The capability is dropped for this call only, through
 * override_creds(), which capable() reads.
 */
static long vgpu_ioctl_unprivileged(struct file *real, unsigned int cmd,
				    unsigned long arg)
{
	const struct cred *old;
	struct cred *cred;
	long rc;

	if (!ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN))
		return real->f_op->unlocked_ioctl(real, cmd, arg);
	cred = prepare_creds();
	if (!cred)
		return -ENOMEM;
	cap_lower(cred->cap_effective, CAP_SYS_ADMIN);
	old = override_creds(cred);
	rc = real->f_op->unlocked_ioctl(real, cmd, arg);
	revert_creds(old);
	put_cred(cred);
	return rc;
}

/*
 * §9.5: fd numbers inside the params become decoys of real files for the call
 * (uvmFd, devDescriptor: the call runs from a kernel thread of the module), and
 * §9.3 item 2: the driver looks for a /dev/nvidiaN in the caller's fd table
 * (fd_translate.c, decoy.c, kthread_call.c).
 * Out of line: the fd fixes (320 bytes) would otherwise sit in the hot path's
 * frame, which CONFIG_INIT_STACK_ALL_ZERO (Debian's kernels) clears on every
 * call, and almost no call needs them.
 */
static noinline long
vgpu_forward_translated(struct vgpu_file *vf, struct vcore_call *call,
			unsigned int cmd, unsigned long arg, unsigned int needs,
			struct vgpu_seal *seal)
{
	struct vgpu_fd_fix fix[VGPU_MAX_FD_FIELDS];
	struct file *real = vf->real;
	struct vgpu_gpu_witness witness = {.fd = -1};
	unsigned int nfix = 0, i, n;
	long rc = 0;

	n = vcore_call_fd_count(call);
	for (i = 0; i < n && !rc; i++) {
		const struct vcore_fd_field *f = vcore_call_fd(call, i);

		if (f->value < 0)
			continue;
		if (nfix == ARRAY_SIZE(fix)) {
			rc = -E2BIG;
			break;
		}
		rc = vgpu_fd_translate(vf, &fix[nfix], vgpu_uptr(f->uaddr),
				       f->value, f->kind, seal);
		if (!rc && !vgpu_fd_kind_ok(f->kind, fix[nfix].kind)) {
			vgpu_fd_restore(&fix[nfix]);
			rc = -EINVAL;
		} else if (!rc) {
			/* Export fds keep their objects' charge (core
			 * export.c, F3): the core needs the file. */
			vcore_call_set_fd_file(call, i, fix[nfix].core);
			nfix++;
		}
	}
	if (rc) {
		vgpu_stat_inc(vf->slot, VGPU_STAT_FD_REFUSED);
		pr_warn_ratelimited(
			"slot %u pid %d (%s): escape 0x%x cmd/class 0x%x: fd "
			"field refused (%ld): not a file of this slot of the "
			"right kind\n",
			vf->slot->id, task_tgid_nr(current), current->comm,
			vcore_call_nr(call), vcore_call_cmd(call), rc);
		goto out_restore;
	}
	if (needs & VCORE_NEED_GPU_WITNESS) {
		rc = vgpu_install_gpu_witness(vf, &witness);
		if (rc)
			goto out_restore;
	}

	if (needs & VCORE_NEED_UNPRIVILEGED)
		rc = vgpu_ioctl_unprivileged(real, cmd, arg);
	else
		rc = vgpu_fd_call(real, cmd, arg, fix, nfix, call);

	vgpu_remove_gpu_witness(&witness);
out_restore:
	while (nfix)
		vgpu_fd_restore(&fix[--nfix]);
	return rc;
}

/*
 * An XFER the core unwrapped goes to the driver as its inner escape, with
 * the number, size and pointer the core read and checked: the driver never
 * reads the header a second time (nv.c, nvidia_ioctl, swaps the header's
 * cmd/size/ptr in exactly so), so a sibling's store into the header between
 * the two reads cannot change the escape or its argument (issue 17, F2).
 * The driver decodes only _IOC_NR and _IOC_SIZE. false: the inner size does
 * not fit in _IOC_SIZE (16384, the one XFER size over it; no 580 escape has
 * it).
 */
static noinline bool vgpu_unwrap_xfer(const struct vcore_call *call,
				      unsigned int *cmd, unsigned long *arg)
{
	vcore_uptr_t inner;
	u32 nr, size;

	if (!vcore_call_unwrapped(call, &nr, &size, &inner))
		return true;
	if (size > _IOC_SIZEMASK)
		return false;
	*cmd = _IOC(_IOC_READ | _IOC_WRITE, NV_IOCTL_MAGIC, nr, size);
	*arg = (unsigned long)inner;
	return true;
}

/*
 * pre -> (fd translation) -> real ioctl -> post. @seal: the call's sealed
 * copy (seal.c; every call the core decides on has one, every RM_CONTROL
 * included), whose address @arg is, or NULL. An unsealed call allocates
 * nothing, takes no lock and clears no large stack frame; a plain control
 * that reaches here unsealed (vcore_pre_lean: no handler, every test passed;
 * only one the module issues itself through vgpu_filter_ioctl, overquota.c)
 * comes back with no call: it has no fd field, needs no fd-table
 * witness, has no allocation status to settle and no post step but at most a
 * reply view, so it goes straight to the real driver. The seal's cost is
 * measured by tests/vm/guest/vgpu/vgpu_bench.cc (docs/results/kmod-bench.md).
 */
static __always_inline long vgpu_filter_call(struct vgpu_file *vf,
					     unsigned int cmd,
					     unsigned long arg,
					     struct vgpu_seal *seal)
{
	struct vcore_call_ctx ctx = {
		.pid = task_tgid_nr(current),
		.tid = task_pid_nr(current),
		/* The core's user copies inside the sealed copy go through
		 * the kernel's mapping of it (core_host.c). */
		.uctx = seal,
	};
	struct file *real = vf->real;
	struct vcore_reply reply;
	struct vcore_call *call;
	enum vcore_verdict v;
	u32 __user *status;
	unsigned int needs;
	long rc;

	/* A sealed call always gets a call record: a replacement of its copy
	 * is answered through it (vcore_call_params_replaced). */
	if (seal) {
		reply.view = NULL;
		v = vcore_pre(vf->core, cmd, (vcore_uptr_t)arg, &ctx, &call);
	} else {
		v = vcore_pre_lean(vf->core, cmd, (vcore_uptr_t)arg, &ctx,
				   &call, &reply);
	}
	if (v == VCORE_ANSWERED) /* the driver ran the core's copy */
		return vcore_post(call, 0);
	if (v != VCORE_FORWARD && v != VCORE_FORWARD_REWRITTEN) {
		const char *why = call ? vcore_call_reason(call) : "no memory";
		enum vcore_refusal kind = vcore_call_refusal(call);

		rc = vcore_post(call, 0);
		vgpu_report_refusal(vf, kind, why);
		return rc;
	}

	/* Only an unsealed call comes back without a call record. */
	if (likely(!call)) {
		rc = vgpu_real_ioctl(real, cmd, arg);
		if (reply.view)
			rc = vcore_post_view(vf->core, &reply, &ctx, (int)rc);
		status = NULL;
		goto settle;
	}
	if (unlikely(_IOC_NR(cmd) == NV_ESC_IOCTL_XFER_CMD) &&
	    !vgpu_unwrap_xfer(call, &cmd, &arg)) {
		rc = vcore_post(call, -EINVAL);
		status = NULL;
		goto settle;
	}
	/* The driver looks for a real /dev/nvidiaN in the fd table during
	 * this call (§9.3 item 2), or must not see CAP_SYS_ADMIN: the core
	 * says which. */
	needs = vcore_call_needs(call);
	if (unlikely((needs & VCORE_NEED_GPU_WITNESS) ||
		     vcore_call_fd_count(call)))
		rc = vgpu_forward_translated(vf, call, cmd, arg, needs, seal);
	else
		rc = vgpu_real_ioctl(real, cmd, arg);

	/* The sealed params were replaced while the driver ran: it may have
	 * read anything (seal.c). */
	if (unlikely(seal) && vgpu_seal_replaced(seal))
		vcore_call_params_replaced(call);
	/* Where an allocation's status lives, for vgpu_overquota_settle. */
	status = vgpu_uptr(vcore_call_status_addr(call));
	rc = vcore_post(call, rc);
settle:
	if (unlikely(vgpu_overquota_pending_any()))
		vgpu_overquota_settle(vf, status);
	return rc;
}

long vgpu_filter_ioctl(struct vgpu_file *vf, unsigned int cmd,
		       unsigned long arg)
{
	return vgpu_filter_call(vf, cmd, arg, NULL);
}

/*
 * A call whose argument (and nested params) the core decides on runs from a
 * sealed copy of them (seal.c, issue 17 F2/F3): the core and the driver read
 * the same bytes. Not in module mode's shim: one address space.
 */
static noinline long vgpu_sealed_ioctl(struct vgpu_file *vf, unsigned int cmd,
				       unsigned long arg,
				       struct vgpu_seal *seal)
{
	long rc = vgpu_filter_call(vf, cmd, vgpu_seal_addr(seal), seal);

	return vgpu_unseal(seal, rc);
}

/*
 * The proxy files' unlocked_ioctl and compat_ioctl (fops.c): here rather than
 * there so that the filter is inlined into the entry, one call less per
 * ioctl.
 */
long vgpu_fops_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct vgpu_file *vf = file->private_data;
	struct vgpu_seal *seal;

	if (vgpu_file_revoked(vf))
		return -ENODEV;
	if (!vf->real->f_op->unlocked_ioctl)
		return -ENOTTY;
	seal = vgpu_seal(vf->core, cmd, arg);
	if (unlikely(IS_ERR(seal)))
		return PTR_ERR(seal);
	if (seal)
		return vgpu_sealed_ioctl(vf, cmd, arg, seal);
	return vgpu_filter_call(vf, cmd, arg, NULL);
}

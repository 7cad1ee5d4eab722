// SPDX-License-Identifier: GPL-2.0
/*
 * The filter core's kernel host (kmod/core/vcore.h): slots and files, and
 * the ioctl path, pre -> fd translation -> real ioctl -> restore -> post. The
 * host ops and the ledger are in core_host.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/kernel_read_file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "core_host.h"
#include "core/abi/nv_escape.h"
#include "driver_query.h"
#include "vgpu.h"

static char *driver_version;
module_param(driver_version, charp, 0444);
MODULE_PARM_DESC(driver_version,
		 "Real driver version (default: read from version_file)");

static char *version_file = "/sys/module/nvidia/version";
module_param(version_file, charp, 0444);
MODULE_PARM_DESC(version_file, "Where the real driver's version is read");

static bool allow_unknown_driver;
module_param(allow_unknown_driver, bool, 0444);
MODULE_PARM_DESC(allow_unknown_driver, "Use the newest ABI tables for a driver "
				       "version the core does not know");

/*
 * Driver system memory (NV01_MEMORY_SYSTEM) one slot may hold, read when a slot is
 * created (issue 17, F10): nvidia.ko charges it to no memory cgroup. libcuda
 * takes about 70 MiB per context (tests/data/traces), and a slot holds at
 * most 16 contexts (VCORE_SLOT_MAX_TSGS / 4), so 2 GiB leaves headroom.
 * 0 = unlimited.
 */
static unsigned int slot_sysmem_mib = 2048;
module_param(slot_sysmem_mib, uint, 0644);
MODULE_PARM_DESC(slot_sysmem_mib,
		 "Driver system memory per slot in MiB, taken at slot creation "
		 "(0: unlimited)");

#define VGPU_MAX_FD_FIELDS 8

/* ---- slots and files ------------------------------------------------- */

static char vgpu_version[VCORE_VERSION_MAX];

/* The version the core's tables are chosen by: the parameter, else the driver's
 * sysfs. */
static void vgpu_read_driver_version(void)
{
	size_t fsize = 0;
	void *buf = NULL;
	ssize_t n;

	if (driver_version && *driver_version) {
		strscpy(vgpu_version, driver_version, sizeof(vgpu_version));
		return;
	}
	n = kernel_read_file_from_path_initns(version_file, 0, &buf,
					      VCORE_VERSION_MAX - 1, &fsize,
					      READING_UNKNOWN);
	if (n <= 0) {
		vgpu_version[0] = '\0';
		return;
	}
	n = min_t(ssize_t, n, VCORE_VERSION_MAX - 1);
	memcpy(vgpu_version, buf, n);
	vgpu_version[n] = '\0';
	strim(vgpu_version);
	vfree(buf);
}

static void vgpu_fill_config(struct vgpu_slot *slot,
			     struct vcore_slot_config *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->id = slot->id;
	cc->mem_quota_bytes = slot->cfg.mem_quota;
	cc->sysmem_budget_bytes = (u64)READ_ONCE(slot_sysmem_mib) << 20;
	cc->unknown_policy = slot->cfg.unknown_policy == VGPU_UNKNOWN_ALLOW_LOG
				     ? VCORE_UNKNOWN_PERMISSIVE
				     : VCORE_UNKNOWN_STRICT;
	switch (slot->cfg.managed_policy) {
	case VGPU_MANAGED_REFUSE:
		cc->managed_policy = VCORE_MANAGED_REFUSE;
		break;
	case VGPU_MANAGED_ALLOW_UNCOUNTED:
		cc->managed_policy = VCORE_MANAGED_ALLOW_UNCOUNTED;
		break;
	default:
		cc->managed_policy = VCORE_MANAGED_DEFAULT;
		break;
	}
	cc->allow_unknown_driver_version = allow_unknown_driver;
	strscpy(cc->driver_version, vgpu_version, sizeof(cc->driver_version));
}

/* A process of the slot that made its UVM context mapping. */
struct vgpu_uvm_ctx_proc {
	struct list_head node;
	struct pid *tgid; /* a reference: never another process's while held */
};

/* More processes than this on one slot: the rest get no free mapping. */
#define VGPU_UVM_CTX_PROCS_MAX 4096

/*
 * libcuda's first mmap of a UVM file is its 2 MiB context mapping, which the
 * core allows once per UVM file whatever the managed policy
 * (vcore_uvm_file_mmap_allowed). Every UVM file a process opens would give
 * it one more free managed mapping (issue 17, F6: 8 files, 8 mappings under
 * "refuse"); one per process is what libcuda needs. true: the calling
 * process had none on this slot, and now has. Processes that exited are
 * dropped on the way.
 */
static bool vgpu_uvm_first_ctx_mapping(struct vgpu_filter_slot *fs)
{
	struct vgpu_uvm_ctx_proc *p, *n, *add;
	struct pid *me = task_tgid(current);
	unsigned int count = 0;
	bool first = true;

	add = kmalloc(sizeof(*add), GFP_KERNEL);
	spin_lock(&fs->uvm_ctx_lock);
	list_for_each_entry_safe(p, n, &fs->uvm_ctx_procs, node)
	{
		if (p->tgid == me) {
			first = false;
			break;
		}
		if (!pid_has_task(p->tgid, PIDTYPE_TGID)) {
			list_del(&p->node);
			put_pid(p->tgid);
			kfree(p);
			continue;
		}
		count++;
	}
	if (first && add && count < VGPU_UVM_CTX_PROCS_MAX) {
		add->tgid = get_pid(me);
		list_add(&add->node, &fs->uvm_ctx_procs);
		add = NULL;
	} else {
		first = false; /* not recorded: no free mapping either */
	}
	spin_unlock(&fs->uvm_ctx_lock);
	kfree(add);
	return first;
}

static void vgpu_uvm_ctx_procs_free(struct vgpu_filter_slot *fs)
{
	struct vgpu_uvm_ctx_proc *p, *n;

	list_for_each_entry_safe(p, n, &fs->uvm_ctx_procs, node)
	{
		put_pid(p->tgid);
		kfree(p);
	}
}

int vgpu_filter_slot_new(struct vgpu_slot *slot)
{
	struct vgpu_filter_slot *fs;
	struct vcore_slot_config cc;
	struct vcore_ledger ledger;
	int err = -ENOMEM;

	fs = kzalloc(sizeof(*fs), GFP_KERNEL);
	if (!fs)
		return -ENOMEM;
	spin_lock_init(&fs->ledger.lock);
	spin_lock_init(&fs->uvm_ctx_lock);
	INIT_LIST_HEAD(&fs->uvm_ctx_procs);
	fs->slot = slot;
	ratelimit_state_init(&fs->event_rs, 5 * HZ, 20);
	vgpu_read_driver_version();
	vgpu_fill_config(slot, &cc);
	ledger.ops = &vgpu_ledger_ops;
	ledger.priv = &fs->ledger;
	fs->core = vcore_slot_create(&vgpu_host_ops, fs, &cc, &ledger, &err);
	if (!fs->core) {
		pr_warn("slot %u: the filter core refused driver version '%s' "
			"(%d)\n",
			slot->id, vgpu_version, err);
		kfree(fs);
		return err ? err : -ENOMEM;
	}
	vcore_slot_set_overquota_hook(fs->core, vgpu_overquota_hook);
	vcore_slot_set_client_ops(fs->core, &vgpu_client_ops);
	slot->filter = fs;
	return 0;
}

/* Caller holds slot->lock (the config it reads). */
void vgpu_filter_slot_config(struct vgpu_slot *slot)
{
	struct vcore_slot_config cc;

	lockdep_assert_held(&slot->lock);
	vgpu_fill_config(slot, &cc);
	if (vcore_slot_update_config(slot->filter->core, &cc))
		pr_warn("slot %u: the filter core refused the new config\n",
			slot->id);
}

void vgpu_filter_slot_free(struct vgpu_slot *slot)
{
	struct vgpu_filter_slot *fs = slot->filter;

	if (!fs)
		return;
	vgpu_uvm_ctx_procs_free(fs);
	vcore_slot_destroy(fs->core);
	kfree(fs);
	slot->filter = NULL;
}

int vgpu_filter_file_open(struct vgpu_file *vf)
{
	static const enum vcore_file_kind kinds[VGPU_NODE_KINDS] = {
		[VGPU_NODE_CTL] = VCORE_FILE_CTL,
		[VGPU_NODE_DEV] = VCORE_FILE_DEV,
		[VGPU_NODE_UVM] = VCORE_FILE_UVM,
	};
	struct vgpu_filter_file *ff;

	ff = kzalloc(sizeof(*ff), GFP_KERNEL);
	if (!ff)
		return -ENOMEM;
	ff->core = vcore_file_open(vf->slot->filter->core, kinds[vf->kind], vf);
	if (!ff->core) {
		kfree(ff);
		return -ENOMEM;
	}
	vf->filter = ff;
	return 0;
}

void vgpu_filter_file_close(struct vgpu_file *vf)
{
	vcore_file_close(vf->filter->core);
	kfree(vf->filter);
	vf->filter = NULL;
}

int vgpu_filter_mmap(struct vgpu_file *vf, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	int err;

	/* A tampered file's clients are gone; no mapping of what the driver
	 * may still hold for it unseen (vcore_file_tampered). */
	if (vcore_file_tampered(vf->filter->core))
		return -ENODEV;
	if (vf->kind != VGPU_NODE_UVM)
		return 0;
	if (len <= VCORE_UVM_CONTEXT_MAPPING_BYTES &&
	    vgpu_uvm_first_ctx_mapping(vf->slot->filter))
		err = vcore_uvm_file_mmap_allowed(vf->filter->core, len);
	else
		err = vcore_uvm_mmap_allowed(vf->slot->filter->core, len);
	if (err) {
		pr_warn_ratelimited("slot %u pid %d (%s): managed-memory mmap "
				    "of %lu bytes refused by policy\n",
				    vf->slot->id, task_tgid_nr(current),
				    current->comm, vma->vm_end - vma->vm_start);
		vgpu_event_refusal(vf->slot, VGPU_EVENT_REFUSED,
				   vma->vm_end - vma->vm_start,
				   vgpu_filter_charged(vf->slot),
				   "managed memory refused by policy");
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
	vgpu_event_refusal(vf->slot,
			   kind == VCORE_REFUSAL_QUOTA ? VGPU_EVENT_QUOTA_DENIED
						       : VGPU_EVENT_REFUSED,
			   0, vgpu_filter_charged(vf->slot), why);
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
 * §9.5: fd numbers inside the params become real files for the call, and §9.3
 * item 2: the driver looks for a real /dev/nvidiaN in the caller's fd table.
 * Out of line: the fd fixes (192 bytes) would otherwise sit in the hot path's
 * frame, which CONFIG_INIT_STACK_ALL_ZERO (Debian's kernels) clears on every
 * call, and almost no call needs them.
 */
static noinline long vgpu_forward_translated(struct vgpu_file *vf,
					     struct vcore_call *call,
					     unsigned int cmd,
					     unsigned long arg,
					     unsigned int needs)
{
	struct vgpu_fd_fix fix[VGPU_MAX_FD_FIELDS];
	struct file *real = vf->real;
	unsigned int nfix = 0, i, n;
	int tmp = -1;
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
				       f->value);
		if (!rc && fix[nfix].tmp >= 0 &&
		    !vgpu_fd_kind_ok(f->kind, fix[nfix].kind)) {
			vgpu_fd_restore(&fix[nfix]);
			rc = -EINVAL;
		} else if (!rc) {
			/* Export fds keep their objects' charge (core
			 * export.c, F3): the core needs the file. */
			if (fix[nfix].tmp >= 0)
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
		rc = vgpu_install_gpu_witness(vf, &tmp);
		if (rc)
			goto out_restore;
	}

	if (needs & VCORE_NEED_UNPRIVILEGED)
		rc = vgpu_ioctl_unprivileged(real, cmd, arg);
	else
		rc = real->f_op->unlocked_ioctl(real, cmd, arg);

	vgpu_remove_gpu_witness(tmp);
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
 * pre -> (fd translation) -> real ioctl -> post. The common call (a control
 * with no fd field) allocates nothing, takes no lock and clears no large
 * stack frame (tests/vm/guest/vgpu/vgpu_bench.cc measures it). A plain
 * control (vcore_pre_lean: no handler, every test passed) comes back with no
 * call: it has no fd field, needs no fd-table witness (not an RM_ALLOC, not
 * on a UVM file), has no allocation status to settle and no post step, so it
 * goes straight to the real driver.
 */
static __always_inline long
vgpu_filter_call(struct vgpu_file *vf, unsigned int cmd, unsigned long arg)
{
	struct vcore_call_ctx ctx = {
		.pid = task_tgid_nr(current),
		.tid = task_pid_nr(current),
	};
	struct file *real = vf->real;
	struct vcore_call *call;
	enum vcore_verdict v;
	u32 __user *status;
	unsigned int needs;
	long rc;

	v = vcore_pre_lean(vf->filter->core, cmd, (vcore_uptr_t)arg, &ctx,
			   &call);
	if (v == VCORE_ANSWERED) /* the driver ran the core's copy */
		return vcore_post(call, 0);
	if (v != VCORE_FORWARD && v != VCORE_FORWARD_REWRITTEN) {
		const char *why = call ? vcore_call_reason(call) : "no memory";
		enum vcore_refusal kind = vcore_call_refusal(call);

		rc = vcore_post(call, 0);
		vgpu_report_refusal(vf, kind, why);
		return rc;
	}

	if (likely(!call)) {
		rc = real->f_op->unlocked_ioctl(real, cmd, arg);
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
		rc = vgpu_forward_translated(vf, call, cmd, arg, needs);
	else
		rc = real->f_op->unlocked_ioctl(real, cmd, arg);

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
	return vgpu_filter_call(vf, cmd, arg);
}

/*
 * The proxy files' unlocked_ioctl and compat_ioctl (fops.c): here rather than
 * there so that the filter is inlined into the entry, one call less per
 * ioctl.
 */
long vgpu_fops_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct vgpu_file *vf = file->private_data;

	if (vgpu_file_revoked(vf))
		return -ENODEV;
	if (!vf->real->f_op->unlocked_ioctl)
		return -ENOTTY;
	return vgpu_filter_call(vf, cmd, arg);
}

int vgpu_filter_init(void)
{
	return 0;
}

void vgpu_filter_exit(void)
{
	vgpu_trusted_exit();
}

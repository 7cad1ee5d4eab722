// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim test hook (not a driver behaviour): a sibling thread's store into an RM_ALLOC or RM_FREE
 * during the call, made deterministic (README.md, "Test hook"). nvsim_ioctl calls it around its
 * copy-in and copy-out; tests/vm/guest/vgpu/parts/vgpu_tamper.cc arms it through the module
 * parameters below.
 */
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "nvsim.h"

/*
 * Test hook: the store of a tenant's sibling thread landing in the window between a proxy's
 * private copy of an RM_ALLOC and the driver's own copy-in (docs/results/kmod-issue4-tamper.md: hClass, hObjectNew or hRoot
 * rewritten during the call), made deterministic. While rewrite_alloc_tgid names the calling
 * process, its next NV_ESC_RM_ALLOC gets the u32 at rewrite_alloc_offset of its NVOS21/NVOS64
 * replaced by rewrite_alloc_value in the caller's memory, just before nvsim copies the struct
 * in; the hook then disarms itself and counts the rewrite in rewrite_alloc_done. Set the
 * offset and value before the tgid. Root only; 0 (the default) is off.
 */
struct nvsim_rewrite {
	int tgid;		/* armed for this process; 0: off */
	unsigned int offset;	/* of the u32 rewritten in the escape's struct */
	unsigned int value;	/* what is stored there */
	unsigned int done;	/* rewrites made since load */
};

/*
 * One hook's four parameters, rewrite_<hook>_{tgid,offset,value,done}, as fields of its struct
 * (module_param_named, as i915_params.c does for its table): tgid, offset and value written by
 * root, done read-only. @esc names the escape in the descriptions.
 */
#define NVSIM_REWRITE_PARAMS(hook, esc)                                                            \
	module_param_named(rewrite_##hook##_tgid, rewrite_##hook.tgid, int, 0600);                 \
	MODULE_PARM_DESC(rewrite_##hook##_tgid,                                                    \
			 "test hook: rewrite the next " esc " of this process");                   \
	module_param_named(rewrite_##hook##_offset, rewrite_##hook.offset, uint, 0600);            \
	MODULE_PARM_DESC(rewrite_##hook##_offset, "test hook: byte offset of the u32 to rewrite"); \
	module_param_named(rewrite_##hook##_value, rewrite_##hook.value, uint, 0600);              \
	MODULE_PARM_DESC(rewrite_##hook##_value, "test hook: the value written");                  \
	module_param_named(rewrite_##hook##_done, rewrite_##hook.done, uint, 0444);                \
	MODULE_PARM_DESC(rewrite_##hook##_done, "test hook: " esc " rewrites made so far")

static struct nvsim_rewrite rewrite_alloc;
NVSIM_REWRITE_PARAMS(alloc, "RM_ALLOC");

/*
 * A second store in the same call, after nvsim copied the reply back (a sibling's rewrite of the
 * status or of a handle between the driver's copy-out and the proxy's read of the reply). Off
 * while rewrite_alloc_after_offset is past the struct (the default).
 */
static unsigned int rewrite_alloc_after_offset = UINT_MAX;
module_param(rewrite_alloc_after_offset, uint, 0600);
MODULE_PARM_DESC(rewrite_alloc_after_offset,
		 "test hook: byte offset rewritten after the copy-out of the same call (off: past the struct)");
static unsigned int rewrite_alloc_after_value;
module_param(rewrite_alloc_after_value, uint, 0600);
MODULE_PARM_DESC(rewrite_alloc_after_value, "test hook: the value written after the copy-out");

/*
 * The same for NV_ESC_RM_FREE (NVOS00), armed on its own: a sibling's store into the NVOS00 of a
 * free that a proxy issues on the tenant's behalf from user memory (docs/results/kmod-issue4-tamper.md: vgpu.ko's cleanup
 * free of an allocation past the quota used a scratch page of the caller's mm).
 */
static struct nvsim_rewrite rewrite_free;
NVSIM_REWRITE_PARAMS(free, "RM_FREE");

/*
 * The same for the 16-byte header of NV_ESC_IOCTL_XFER_CMD, just before nvsim reads it: a
 * sibling's store into the header of a wrapped call between a proxy's check of it and the
 * driver's own read (nv.c reads it again, nvidia_ioctl).
 */
static struct nvsim_rewrite rewrite_xfer;
NVSIM_REWRITE_PARAMS(xfer, "XFER header");

/*
 * The same for the params of the process's next NV_ESC_RM_CONTROL (NVOS54 params@16,
 * paramsSize@24), one byte at rewrite_ctrl_offset (controls have NvBool fields, e.g.
 * GPFIFO_SCHEDULE's bEnable), just before nvsim copies the params in: a sibling's store into the
 * nested params of a control between a proxy's check of them and the driver's own read.
 */
static struct nvsim_rewrite rewrite_ctrl;
NVSIM_REWRITE_PARAMS(ctrl, "RM_CONTROL's params");

/*
 * The same for the alloc params of the process's next NV_ESC_RM_ALLOC (pAllocParms@16 of the
 * NVOS21/NVOS64): the u32 at rewrite_allocp_offset is replaced just before nvsim copies the
 * struct in, and its old value is put back after nvsim copied the reply out: a sibling's store
 * that raises a size around the call, so that the driver allocates the raised size while the
 * reply the proxy reads afterwards shows the size the proxy checked (issue 17, F10).
 */
static struct nvsim_rewrite rewrite_allocp;
NVSIM_REWRITE_PARAMS(allocp, "RM_ALLOC's alloc params");

/*
 * The same for the gpu_id array of the process's next NV_ESC_ATTACH_GPUS_TO_FD, just before nvsim
 * copies it in: a sibling's store into the array between a proxy's check of it and the driver's
 * own copy-in (nv.c nvidia_ioctl copies the escape's argument itself; issue 17, F11.3).
 */
static struct nvsim_rewrite rewrite_attach;
NVSIM_REWRITE_PARAMS(attach, "ATTACH_GPUS_TO_FD array");

static bool nvsim_rewrite(struct nvsim_rewrite *h, void __user *uptr, size_t size)
{
	int tgid = READ_ONCE(h->tgid);
	unsigned int off = READ_ONCE(h->offset), value = READ_ONCE(h->value);

	if (!tgid || tgid != task_tgid_nr(current) || off % sizeof(u32) ||
	    off + sizeof(u32) > size)
		return false;
	if (cmpxchg(&h->tgid, tgid, 0) != tgid)
		return false; /* one rewrite per arming */
	if (put_user(value, (u32 __user *)((u8 __user *)uptr + off)))
		return false;
	WRITE_ONCE(h->done, h->done + 1);
	return true;
}

static void nvsim_rewrite_ctrl(void __user *uptr, size_t size)
{
	int tgid = READ_ONCE(rewrite_ctrl.tgid);
	unsigned int off = READ_ONCE(rewrite_ctrl.offset);
	struct nvos54 p;

	if (!tgid || tgid != task_tgid_nr(current) || size != sizeof(p) ||
	    copy_from_user(&p, uptr, sizeof(p)) || off >= p.paramsSize || !p.params)
		return;
	if (cmpxchg(&rewrite_ctrl.tgid, tgid, 0) != tgid)
		return;
	if (put_user((u8)READ_ONCE(rewrite_ctrl.value), (u8 __user *)u64_to_user_ptr(p.params) + off))
		return;
	WRITE_ONCE(rewrite_ctrl.done, rewrite_ctrl.done + 1);
}

static void nvsim_rewrite_allocp(void __user *uptr, size_t size, struct nvsim_undo *undo)
{
	int tgid = READ_ONCE(rewrite_allocp.tgid);
	unsigned int off = READ_ONCE(rewrite_allocp.offset);
	u64 __user *pp = (u64 __user *)((u8 __user *)uptr + offsetof(struct nvos21, pAllocParms));
	u32 __user *at;
	u64 params;

	if (!tgid || tgid != task_tgid_nr(current) || off % sizeof(u32) ||
	    size < sizeof(struct nvos21) || get_user(params, pp) || !params)
		return;
	if (cmpxchg(&rewrite_allocp.tgid, tgid, 0) != tgid)
		return;
	at = (u32 __user *)((u8 __user *)u64_to_user_ptr(params) + off);
	if (get_user(undo->old, at) || put_user(READ_ONCE(rewrite_allocp.value), at))
		return;
	undo->at = at;
	WRITE_ONCE(rewrite_allocp.done, rewrite_allocp.done + 1);
}

/* true: the RM_ALLOC hook fired for this call (its after-store is due after the copy-out). */
bool nvsim_rewrite_alloc(unsigned int nr, void __user *uptr, size_t size, struct nvsim_undo *undo)
{
	if (nr == NV_ESC_RM_CONTROL)
		nvsim_rewrite_ctrl(uptr, size);
	if (nr == NV_ESC_RM_ALLOC)
		nvsim_rewrite_allocp(uptr, size, undo);
	if (nr == NV_ESC_RM_ALLOC)
		return nvsim_rewrite(&rewrite_alloc, uptr, size);
	if (nr == NV_ESC_RM_FREE)
		nvsim_rewrite(&rewrite_free, uptr, size);
	if (nr == NV_ESC_ATTACH_GPUS_TO_FD)
		nvsim_rewrite(&rewrite_attach, uptr, size);
	return false;
}

void nvsim_rewrite_alloc_after(void __user *uptr, size_t size)
{
	unsigned int off = READ_ONCE(rewrite_alloc_after_offset);

	if (off % sizeof(u32) || off >= size || size - off < sizeof(u32))
		return;
	if (put_user(READ_ONCE(rewrite_alloc_after_value), (u32 __user *)((u8 __user *)uptr + off)))
		return;
}

/* After the copy-out: the rewrite_allocp store is taken back (the sibling lowers the size again). */
void nvsim_rewrite_undo(const struct nvsim_undo *undo)
{
	if (undo->at && put_user(undo->old, undo->at))
		pr_debug("rewrite_allocp: the old value could not be put back\n");
}

void nvsim_rewrite_xfer(void __user *uptr)
{
	nvsim_rewrite(&rewrite_xfer, uptr, sizeof(struct nv_ioctl_xfer));
}

/*
 * The same for the rmStatus of the process's next UVM_FREE or UVM_UNMAP_EXTERNAL, just after
 * nvsim copied it out (rewrite_uvm_status_offset: 16 for UVM_FREE, 32 for UNMAP_EXTERNAL): a
 * sibling's store of NV_OK over a failure between UVM's copy-out and a proxy's read of the reply
 * (issue 17, F3: the proxy must not believe it).
 */
static struct nvsim_rewrite rewrite_uvm_status;
NVSIM_REWRITE_PARAMS(uvm_status, "UVM_FREE / UNMAP_EXTERNAL status");

void nvsim_rewrite_uvm_status(unsigned int cmd, void __user *uptr, size_t size)
{
	if (cmd == UVM_FREE || cmd == UVM_UNMAP_EXTERNAL)
		nvsim_rewrite(&rewrite_uvm_status, uptr, size);
}

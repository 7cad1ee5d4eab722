// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim test hook (not a driver behaviour): a sibling thread's store into an RM_ALLOC or RM_FREE
 * during the call, made deterministic (README.md, "Test hook"). nvsim_ioctl calls it around its
 * copy-in and copy-out; tests/vm/guest/vgpu/vgpu_tamper.cpp arms it through the module
 * parameters below.
 */
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "nvsim.h"

/*
 * Test hook: the store of a tenant's sibling thread landing in the window between a proxy's
 * private copy of an RM_ALLOC and the driver's own copy-in (issue 4: hClass, hObjectNew or hRoot
 * rewritten during the call), made deterministic. While rewrite_alloc_tgid names the calling
 * process, its next NV_ESC_RM_ALLOC gets the u32 at rewrite_alloc_offset of its NVOS21/NVOS64
 * replaced by rewrite_alloc_value in the caller's memory, just before nvsim copies the struct
 * in; the hook then disarms itself and counts the rewrite in rewrite_alloc_done. Set the
 * offset and value before the tgid. Root only; 0 (the default) is off.
 */
static int rewrite_alloc_tgid;
module_param(rewrite_alloc_tgid, int, 0600);
MODULE_PARM_DESC(rewrite_alloc_tgid, "test hook: rewrite the next RM_ALLOC of this process");
static unsigned int rewrite_alloc_offset;
module_param(rewrite_alloc_offset, uint, 0600);
MODULE_PARM_DESC(rewrite_alloc_offset, "test hook: byte offset of the u32 to rewrite");
static unsigned int rewrite_alloc_value;
module_param(rewrite_alloc_value, uint, 0600);
MODULE_PARM_DESC(rewrite_alloc_value, "test hook: the value written");
static unsigned int rewrite_alloc_done;
module_param(rewrite_alloc_done, uint, 0444);
MODULE_PARM_DESC(rewrite_alloc_done, "test hook: rewrites made so far");
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
 * free that a proxy issues on the tenant's behalf from user memory (issue 4: vgpu.ko's cleanup
 * free of an allocation past the quota used a scratch page of the caller's mm).
 */
static int rewrite_free_tgid;
module_param(rewrite_free_tgid, int, 0600);
MODULE_PARM_DESC(rewrite_free_tgid, "test hook: rewrite the next RM_FREE of this process");
static unsigned int rewrite_free_offset;
module_param(rewrite_free_offset, uint, 0600);
MODULE_PARM_DESC(rewrite_free_offset, "test hook: byte offset of the u32 to rewrite");
static unsigned int rewrite_free_value;
module_param(rewrite_free_value, uint, 0600);
MODULE_PARM_DESC(rewrite_free_value, "test hook: the value written");
static unsigned int rewrite_free_done;
module_param(rewrite_free_done, uint, 0444);
MODULE_PARM_DESC(rewrite_free_done, "test hook: RM_FREE rewrites made so far");

static bool nvsim_rewrite(int *armed, unsigned int off, unsigned int value, unsigned int *done,
			  void __user *uptr, size_t size)
{
	int tgid = READ_ONCE(*armed);

	if (!tgid || tgid != task_tgid_nr(current) || off % sizeof(u32) ||
	    off + sizeof(u32) > size)
		return false;
	if (cmpxchg(armed, tgid, 0) != tgid)
		return false; /* one rewrite per arming */
	if (put_user(value, (u32 __user *)((u8 __user *)uptr + off)))
		return false;
	WRITE_ONCE(*done, *done + 1);
	return true;
}

/* true: the RM_ALLOC hook fired for this call (its after-store is due after the copy-out). */
bool nvsim_rewrite_alloc(unsigned int nr, void __user *uptr, size_t size)
{
	if (nr == NV_ESC_RM_ALLOC)
		return nvsim_rewrite(&rewrite_alloc_tgid, READ_ONCE(rewrite_alloc_offset),
				     READ_ONCE(rewrite_alloc_value), &rewrite_alloc_done, uptr, size);
	if (nr == NV_ESC_RM_FREE)
		nvsim_rewrite(&rewrite_free_tgid, READ_ONCE(rewrite_free_offset),
			      READ_ONCE(rewrite_free_value), &rewrite_free_done, uptr, size);
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

// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim test hook (not a driver behaviour): a SIBLING of the caller, not the caller, stores into
 * the argument of a call, or replaces the mapping it lies on, just before nvsim copies it in
 * (README.md, "Sibling hook"). The store is made by another task: a kernel thread that adopts the
 * caller's mm (kthread_use_mm), so it is one that no caller-only protection of the page lets
 * through (issue 17: a proxy that read the argument before the driver does). The caller waits for
 * the thread, which makes the race deterministic.
 */
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "nvsim.h"

#define NVSIM_SIBLING_STORES 4

/* One armed sibling: where it stores, what, and how. */
struct nvsim_sibling {
	struct mm_struct *mm;
	void __user *uptr;	/* the argument nvsim is given */
	bool nested;		/* the stores go to the buffer whose pointer is the u64 at 16 */
	bool replace;		/* replace the pages instead of storing into them */
	unsigned int n;
	unsigned int off[NVSIM_SIBLING_STORES];
	u32 value[NVSIM_SIBLING_STORES];
	bool landed;
	struct completion done;
};

/*
 * The replacement: the pages under the stores, unmapped and mapped again anonymous (MAP_FIXED)
 * with the same bytes and the stores made: what a tamperer does to a page it cannot store into.
 */
static bool nvsim_sibling_replace(struct nvsim_sibling *s, u8 __user *target)
{
	unsigned long start = (unsigned long)target & PAGE_MASK, end = start + PAGE_SIZE, len, at;
	bool ok = false;
	unsigned int i;
	u8 *bytes;

	for (i = 0; i < s->n; i++)
		end = max(end, PAGE_ALIGN((unsigned long)target + s->off[i] + sizeof(u32)));
	len = end - start;
	bytes = kvmalloc(len, GFP_KERNEL);
	if (!bytes)
		return false;
	if (copy_from_user(bytes, (void __user *)start, len))
		goto out;
	for (i = 0; i < s->n; i++)
		memcpy(bytes + ((unsigned long)target - start) + s->off[i], &s->value[i], sizeof(u32));
	if (vm_munmap(start, len))
		goto out;
	at = vm_mmap(NULL, start, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, 0);
	ok = at == start && !copy_to_user((void __user *)start, bytes, len);
out:
	kvfree(bytes);
	return ok;
}

static int nvsim_sibling_fn(void *arg)
{
	struct nvsim_sibling *s = arg;
	u8 __user *target = s->uptr;
	unsigned int i;
	u64 nested;

	kthread_use_mm(s->mm);
	if (s->nested) {
		/* NVOS21/NVOS64 pAllocParms and NVOS54 params both sit at 16. */
		target = get_user(nested, (u64 __user *)((u8 __user *)s->uptr + 16)) || !nested ?
				 NULL : u64_to_user_ptr(nested);
	}
	if (target && s->replace) {
		s->landed = nvsim_sibling_replace(s, target);
	} else if (target) {
		s->landed = true;
		for (i = 0; i < s->n; i++)
			s->landed &= !put_user(s->value[i], (u32 __user *)(target + s->off[i]));
	}
	kthread_unuse_mm(s->mm);
	complete(&s->done);
	return 0;
}

/* Runs @s's thread and waits for it; the caller's mm outlives the thread's use of it. */
static bool nvsim_sibling_run(struct nvsim_sibling *s)
{
	struct task_struct *t;

	init_completion(&s->done);
	t = kthread_run(nvsim_sibling_fn, s, "nvsim-sibling");
	if (IS_ERR(t))
		return false;
	wait_for_completion(&s->done);
	return s->landed;
}

/*
 * The call is process @tgid's: made by it, or for it by a kernel thread on its mm (a proxy runs
 * the calls whose fd the driver tests by f_op from its own kernel threads, kmod/kthread_call.c;
 * the sibling then stores while that thread is in the call).
 */
static bool nvsim_sibling_for(int tgid)
{
	struct task_struct *t;
	bool same;

	if (tgid == task_tgid_nr(current))
		return true;
	if (!(current->flags & PF_KTHREAD))
		return false;
	rcu_read_lock();
	t = pid_task(find_vpid(tgid), PIDTYPE_TGID);
	same = t && READ_ONCE(t->mm) == current->mm;
	rcu_read_unlock();
	return same;
}

/* Disarms @tgid's hook for the caller's process; false: not armed for it. */
static bool nvsim_sibling_take(int *tgid_param)
{
	int tgid = READ_ONCE(*tgid_param);

	return tgid && current->mm && nvsim_sibling_for(tgid) &&
	       cmpxchg(tgid_param, tgid, 0) == tgid;
}

/*
 * UVM: while sibling_uvm_map_tgid names the calling process, its next UVM_MAP_EXTERNAL_ALLOCATION
 * gets hMemory replaced by sibling_uvm_map_hmemory (the 580 driver copies the params in once at
 * entry, __UVM_ROUTE_CMD_ALLOC in uvm_api.h). sibling_uvm_map_replace 0: the thread stores into
 * the page that is mapped there; 1: it replaces the mapping. sibling_uvm_map_tries counts armed
 * calls, sibling_uvm_map_done the stores or replacements that landed. Set the value and the mode
 * before the tgid; root only.
 */
static int sibling_uvm_map_tgid;
module_param(sibling_uvm_map_tgid, int, 0600);
MODULE_PARM_DESC(sibling_uvm_map_tgid, "test hook: a sibling swaps hMemory of this process's next UVM map");
static unsigned int sibling_uvm_map_hmemory;
module_param(sibling_uvm_map_hmemory, uint, 0600);
MODULE_PARM_DESC(sibling_uvm_map_hmemory, "test hook: the hMemory the sibling stores");
static unsigned int sibling_uvm_map_done;
module_param(sibling_uvm_map_done, uint, 0444);
MODULE_PARM_DESC(sibling_uvm_map_done, "test hook: sibling stores or replacements that landed");
static unsigned int sibling_uvm_map_replace;
module_param(sibling_uvm_map_replace, uint, 0600);
MODULE_PARM_DESC(sibling_uvm_map_replace, "test hook: 1: replace the mapping instead of storing");
static unsigned int sibling_uvm_map_tries;
module_param(sibling_uvm_map_tries, uint, 0444);
MODULE_PARM_DESC(sibling_uvm_map_tries, "test hook: armed UVM maps the sibling tried");

void nvsim_sibling_uvm(unsigned int cmd, void __user *uptr)
{
	struct nvsim_sibling s = {
		.mm = current->mm,
		.uptr = uptr,
		.n = 1,
		.off = {offsetof(struct uvm_map_external_allocation_params, hMemory)},
	};

	if (cmd != UVM_MAP_EXTERNAL_ALLOCATION || !nvsim_sibling_take(&sibling_uvm_map_tgid))
		return;
	s.value[0] = READ_ONCE(sibling_uvm_map_hmemory);
	s.replace = READ_ONCE(sibling_uvm_map_replace);
	WRITE_ONCE(sibling_uvm_map_tries, sibling_uvm_map_tries + 1);
	if (nvsim_sibling_run(&s))
		WRITE_ONCE(sibling_uvm_map_done, sibling_uvm_map_done + 1);
}

/*
 * RM: while sibling_rm_tgid names the calling process, its next escape sibling_rm_nr (after XFER
 * unwrapping) gets the u32s sibling_rm_values stored at sibling_rm_offsets (comma lists of up to
 * four, the same length) of its argument (sibling_rm_nested 0) or of the buffer the u64 at 16 of
 * the argument points to (1: RM_ALLOC's class params, RM_CONTROL's params), just before nvsim
 * copies the argument in (nv.c nvidia_ioctl copies it itself; RM copies the nested params after).
 * sibling_rm_replace 1: the pages are replaced instead. sibling_rm_tries counts armed calls,
 * sibling_rm_done the stores or replacements that landed. Set everything before the tgid.
 */
static int sibling_rm_tgid;
module_param(sibling_rm_tgid, int, 0600);
MODULE_PARM_DESC(sibling_rm_tgid, "test hook: a sibling stores into this process's next sibling_rm_nr escape");
static unsigned int sibling_rm_nr;
module_param(sibling_rm_nr, uint, 0600);
MODULE_PARM_DESC(sibling_rm_nr, "test hook: the escape number (after XFER unwrapping)");
static unsigned int sibling_rm_nested;
module_param(sibling_rm_nested, uint, 0600);
MODULE_PARM_DESC(sibling_rm_nested, "test hook: 1: store into the buffer the u64 at 16 points to");
static unsigned int sibling_rm_offsets[NVSIM_SIBLING_STORES], sibling_rm_noffsets;
module_param_array(sibling_rm_offsets, uint, &sibling_rm_noffsets, 0600);
MODULE_PARM_DESC(sibling_rm_offsets, "test hook: byte offsets of the u32s stored");
static unsigned int sibling_rm_values[NVSIM_SIBLING_STORES], sibling_rm_nvalues;
module_param_array(sibling_rm_values, uint, &sibling_rm_nvalues, 0600);
MODULE_PARM_DESC(sibling_rm_values, "test hook: the u32s stored");
static unsigned int sibling_rm_replace;
module_param(sibling_rm_replace, uint, 0600);
MODULE_PARM_DESC(sibling_rm_replace, "test hook: 1: replace the mapping instead of storing");
static unsigned int sibling_rm_done;
module_param(sibling_rm_done, uint, 0444);
MODULE_PARM_DESC(sibling_rm_done, "test hook: sibling stores or replacements that landed");
static unsigned int sibling_rm_tries;
module_param(sibling_rm_tries, uint, 0444);
MODULE_PARM_DESC(sibling_rm_tries, "test hook: armed escapes the sibling tried");

void nvsim_sibling_rm(unsigned int nr, void __user *uptr, size_t size)
{
	struct nvsim_sibling s = {.mm = current->mm, .uptr = uptr};
	unsigned int i;

	if (nr != READ_ONCE(sibling_rm_nr) || !nvsim_sibling_take(&sibling_rm_tgid))
		return;
	s.nested = READ_ONCE(sibling_rm_nested);
	s.replace = READ_ONCE(sibling_rm_replace);
	s.n = min(READ_ONCE(sibling_rm_noffsets), READ_ONCE(sibling_rm_nvalues));
	for (i = 0; i < s.n; i++) {
		s.off[i] = READ_ONCE(sibling_rm_offsets[i]);
		s.value[i] = READ_ONCE(sibling_rm_values[i]);
		/* Inside the argument (the nested buffer's size is the test's to know). */
		if (s.off[i] % sizeof(u32) || (!s.nested && s.off[i] + sizeof(u32) > size))
			return;
	}
	if (s.nested && size < 24)
		return;
	WRITE_ONCE(sibling_rm_tries, sibling_rm_tries + 1);
	if (s.n && nvsim_sibling_run(&s))
		WRITE_ONCE(sibling_rm_done, sibling_rm_done + 1);
}

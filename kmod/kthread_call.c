// SPDX-License-Identifier: GPL-2.0
/*
 * Driver calls run from this module's kernel threads (docs/security/
 * kernel-call-path.md, F4). nvidia-uvm's UVM_MM_INITIALIZE fget()s its uvmFd
 * in current->files and accepts only a file whose f_op is nvidia-uvm's
 * (uvm_api_mm_initialize, uvm.c:59-76 at 580.142); NV00E0 EXPORT_MEM and
 * NV00FD ATTACH_GPU fget() their devDescriptor there (RmGetDeviceFd and
 * nv_get_file_private, escape.c:75-131 and 716-761, nv.c:4071-4125) and
 * accept only a file whose f_op is nvidia.ko's (osMatchGpuOsInfo, i.e.
 * nv_match_dev_state, nv.c:5762-5783; mem_export.c:700,
 * mem_multicast_fabric.c:546). Whatever passes that test can be called: in
 * the caller's fd table a sibling thread's ioctl on it would reach the driver
 * unfiltered. So the call runs here, from a kernel thread of its own with
 * the real file on a fd of the kernel threads' table, and the caller waits.
 * What the driver takes from current, and why each is right here:
 *
 * files: kthreadd and every kernel thread are created with CLONE_FILES
 * (kernel/kthread.c), so they share one table (init_files) that no user task
 * shares: init copied it at boot, and a usermode helper, copying it, execs
 * before it runs user code (the fd is close-on-exec). A tenant cannot name a
 * kernel thread: they live in the initial PID namespace only (no /proc/PID, no
 * pidfd_open from a container's), and even from there /proc/PID/fd and
 * pidfd_getfd need ptrace access, granted only with CAP_SYS_PTRACE or every
 * capability the thread has (cap_ptrace_access_check, security/commoncap.c):
 * privileged pods are out of scope. The driver reads the number from the
 * sealed copy (below), which no sibling can store into; one that replaces the
 * mapping can still put another number there before the driver reads it
 * (tampering, seen only after the call): one call at a time of each kind
 * leaves no other tenant's file in the table for it to name. The two kinds
 * share that table: a number rewritten to the other kind's file names the
 * wrong driver (nvidia-uvm's node is not major 195, nv.c:4071-4125;
 * /dev/nvidiaN has not nvidia-uvm's f_op): refused.
 *
 * mm: the routing copies the parameters in and out through current->mm
 * (__UVM_ROUTE_CMD_STACK, uvm_api.h; nvidia.ko's nvidia_ioctl and RM's
 * rmapiParamsAcquire likewise), so the thread adopts the caller's
 * (kthread_use_mm). The caller sleeps here holding a user of it, so it
 * outlives the call. uvm_api_mm_initialize itself takes the mm the va space
 * recorded at UVM_INITIALIZE, never current's (uvm.c:112-113).
 *
 * the parameters: these calls run from a sealed copy (seal.c; MM_INITIALIZE
 * is a UVM_SEALED row, the fabric controls' NVOS54 and params are sealed as
 * every handled control's, kmod/core/seal.c), and every buffer the core lists
 * for the call lies in it, or the call is refused (vgpu_kthread_sealed). The
 * copy is lent to the call's thread (vgpu_seal_lend): its stores pass as the
 * caller's, everyone else's are still refused, so the caller no longer makes
 * the pages writable for the call and no sibling can change what the driver
 * reads (Fabric.SiblingCannotSwapAFabricCallIntoAGateLever,
 * Fabric.SiblingCannotRenumberAFabricCallsDevice). The thread stores the fd
 * number through the kernel's mapping of the copy. These calls touch user
 * memory only through copy_from_user/copy_to_user of the parameters
 * (__UVM_ROUTE_CMD_STACK, uvm_api.h, whose nv_copy_*_user are the kernel's,
 * uvm_linux.h; nvidia_ioctl; rmapiParamsAcquire): no get_user_pages, no
 * other user address.
 *
 * faults: one call at a time of each kind, across every slot, so nothing of
 * one tenant's may hold the thread. It runs with page faults enabled; the
 * only pages it faults on are the copy's, this module's own, which ->fault
 * maps without waiting on anything. A tenant cannot make them wait: a
 * replacement of the mapping (munmap, MAP_FIXED over it, then a userfaultfd
 * range there) is seen by the seal's ->close, which sends the lent thread
 * SIGKILL (allowed in the thread); a fault's wait ends on it at once
 * (handle_userfault waits killably, and a kernel-mode fault with a fatal
 * signal pending fails the copy, do_user_addr_fault), and the call is
 * tampering (vcore_call_params_replaced). Killed, the caller does the same
 * (vgpu_seal_abandon), then waits for the thread's end. Not covered: the
 * fault takes the caller's mmap lock, killably (lock_mm_and_find_vma,
 * mm/memory.c, in 6.1 and 6.12; on 6.12 a write fault on a ->pfn_mkwrite VMA
 * goes back to it from the per-VMA lock, wp_pfn_shared and
 * vmf_can_call_fault); a tenant that holds its own mmap lock for long holds
 * its call, and the calls of that kind queued behind it, until it lets go or
 * dies (they wait killably).
 *
 * credentials: the uvm path checks none (uvm.c:59-139 and the routing), but
 * a kernel thread's own are the kernel's full ones: the caller's stand for the
 * call (override_creds), so a capable() in the driver answers for the tenant:
 * RM's privilege level is osIsAdministrator() (escape.c:304), and a client's
 * owner check fails only if both euid and pid differ (os.c:3787-3868), euid
 * being the caller's (NV_CURRENT_EUID reads current->cred, nv-linux.h:156,
 * which override_creds sets). The RM client is the one of the ctl file the
 * call is made on (escape.c:308-310), as from the caller.
 *
 * signals: the thread allows only SIGKILL, sent by this module alone (above);
 * an interruptible wait in the driver is a plain wait otherwise (the uvm path
 * has none: the power-management lock is a trylock, uvm.c:1059, then a
 * spinlock). The caller waits killably. Killed while another call of the
 * kind runs, it never starts its own (mutex_lock_killable) and the driver
 * never sees it; killed while its own runs, it still waits for its end, so
 * the driver's result reaches the core's post step and the thread never uses
 * the caller's mm, credentials or files after the caller returned.
 *
 * the task: one kernel thread per call (kthread_run), which ends with the
 * call (kthread_complete_and_exit: no code of this module runs after the
 * caller is woken). nvidia-uvm keys its per-thread lock-tracking context on
 * current for the call only (UVM_ENTRY_WRAP, uvm_api.h;
 * uvm_thread_context.c) and prints current->pid in debug messages;
 * MM_INITIALIZE records neither.
 *
 * Only these calls come here: nvidia-uvm's other paths use current->mm as
 * the caller's (uvm_va_space_mm_or_current_retain asserts a user thread,
 * uvm_va_space_mm.c:271-274). The fabric controls may wait on the fabric
 * manager (multicast attach): they are a kind of their own, so a slow one
 * holds up no MM_INITIALIZE. Measured against nvsim (tests/vm/guest/vgpu/
 * held_fault.h): with the parameters on a page a userfaultfd write-protects,
 * another slot's MM_INITIALIZE or ATTACH_GPU returns, and the held caller,
 * SIGKILLed, dies, within the bound (CallPath.AFaultOfOneTenantsMmInitialize
 * HoldsUpNoOtherSlot, Fabric.AFaultOfOneTenantsFabricCallHoldsUpNoOtherSlot:
 * the fault is the caller's own, at the copy back); with the sealed mapping
 * replaced by a userfaultfd range during an ATTACH_GPU, the tenant is killed
 * and another slot's call returns within the bound
 * (Fabric.AReplacedSealEndsTheFabricCallThread). Still held: a fabric manager
 * that never answers holds every slot's fabric calls (a wait in the driver,
 * not a fault).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cred.h>
#include <linux/err.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "core/vcore.h"
#include "kthread_call.h"
#include "seal.h"

/* One call at a time of each kind (above). */
static struct mutex vgpu_kthread_locks[VGPU_KTHREAD_COUNT];
static const char *const vgpu_kthread_names[VGPU_KTHREAD_COUNT] = {
	[VGPU_KTHREAD_UVM] = "vgpu-call",
	[VGPU_KTHREAD_FABRIC] = "vgpu-fabric",
};

/* On the caller's stack: it returns only once the thread is done with it. */
struct vgpu_kthread_ioctl {
	struct completion done;
	struct file *real;
	unsigned int cmd;
	unsigned long arg;
	struct file *file;
	u32 *fd_kaddr; /* the fd field, in the kernel's mapping of the seal */
	struct vgpu_seal *seal;
	struct mm_struct *mm;
	const struct cred *cred;
	long rc;
};

static int vgpu_kthread_ioctl_fn(void *data)
{
	struct vgpu_kthread_ioctl *c = data;
	const struct cred *old;
	int fd;

	/* Before the lend: a SIGKILL sent while lent must not be dropped
	 * (a kernel thread ignores every signal it does not allow). */
	allow_signal(SIGKILL);
	c->rc = vgpu_seal_lend(c->seal);
	if (c->rc)
		goto out;
	kthread_use_mm(c->mm);
	old = override_creds(c->cred);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		c->rc = fd;
		goto out_creds;
	}
	fd_install(fd, get_file(c->file));
	*c->fd_kaddr = fd; /* the driver reads it from the copy */
	c->rc = c->real->f_op->unlocked_ioctl(c->real, c->cmd, c->arg);
	/* The driver took its own reference if it keeps the file. */
	close_fd(fd);
out_creds:
	revert_creds(old);
	kthread_unuse_mm(c->mm);
	vgpu_seal_unlend(c->seal);
out:
	/* The last touch of c, and of this module's code: the caller may
	 * return, and the module go. */
	kthread_complete_and_exit(&c->done, 0);
}

/*
 * Every buffer the core lists for @call, and the fd field, in @seal's copy:
 * the thread's faults are then the seal's own. Every call that comes here is
 * sealed so (above); anything else would let a fault of the tenant's hold
 * the thread. Returns the fd field's address in the kernel's mapping of the
 * copy (where the thread stores the number), or NULL.
 */
static u32 *vgpu_kthread_sealed(const struct vcore_call *call,
				const struct vgpu_seal *seal,
				u32 __user *fd_uaddr)
{
	struct vcore_buf_info b;
	unsigned int i;
	u32 *fd_kaddr;

	if (!seal)
		return NULL;
	fd_kaddr = vgpu_seal_kaddr(seal, (unsigned long)fd_uaddr, sizeof(u32));
	if (!fd_kaddr)
		return NULL;
	for (i = 0; !vcore_call_buffer(call, i, &b); i++) {
		if (b.len &&
		    !vgpu_seal_kaddr(seal, (unsigned long)b.uaddr, b.len))
			return NULL;
	}
	return fd_kaddr;
}

long vgpu_kthread_ioctl(enum vgpu_kthread t, struct file *real,
			unsigned int cmd, unsigned long arg, struct file *file,
			u32 __user *fd_uaddr, const struct vcore_call *call,
			struct vgpu_seal *seal)
{
	struct vgpu_kthread_ioctl c = {
		.real = real,
		.cmd = cmd,
		.arg = arg,
		.file = file,
		.seal = seal,
		/* current's mm stays: it returns only once the thread is done
		 * with it (or never started). */
		.mm = current->mm,
	};
	struct task_struct *task;
	long rc;

	c.fd_kaddr = vgpu_kthread_sealed(call, seal, fd_uaddr);
	if (!c.fd_kaddr) {
		pr_warn_ratelimited("pid %d (%s): cmd 0x%x cmd/class 0x%x: "
				    "parameters outside the sealed copy, "
				    "refused\n",
				    task_tgid_nr(current), current->comm, cmd,
				    vcore_call_cmd(call));
		return -EFAULT;
	}
	if (mutex_lock_killable(&vgpu_kthread_locks[t]))
		return -EINTR;	     /* the driver never saw it */
	c.cred = get_current_cred(); /* pairs with the put below */
	init_completion(&c.done);
	task = kthread_run(vgpu_kthread_ioctl_fn, &c, "%s",
			   vgpu_kthread_names[t]);
	if (IS_ERR(task)) {
		rc = PTR_ERR(task); /* -EINTR if killed meanwhile */
		goto out;
	}
	if (wait_for_completion_killable(&c.done)) {
		/* Killed: the thread's waits on faults end at once, and a
		 * thread not yet in the call never starts it. */
		vgpu_seal_abandon(seal);
		wait_for_completion(&c.done);
	}
	rc = c.rc;
out:
	put_cred(c.cred);
	mutex_unlock(&vgpu_kthread_locks[t]);
	return rc;
}

/* After the nodes: no call can come any more, and none is left running (each
 * caller waited for its thread). */
void vgpu_kthread_call_exit(void)
{
	int t;

	for (t = 0; t < VGPU_KTHREAD_COUNT; t++)
		mutex_destroy(&vgpu_kthread_locks[t]);
}

int vgpu_kthread_call_init(void)
{
	int t;

	for (t = 0; t < VGPU_KTHREAD_COUNT; t++)
		mutex_init(&vgpu_kthread_locks[t]);
	return 0;
}

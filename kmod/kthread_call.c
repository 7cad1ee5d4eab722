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
 * unfiltered. So the call runs here, with the real file on a fd of this
 * thread's table, and the caller waits. What the driver takes from current,
 * and why each is right here:
 *
 * files: kthreadd and every kernel thread are created with CLONE_FILES
 * (kernel/kthread.c), so they share one table (init_files) that no user task
 * shares: init copied it at boot, and a usermode helper, copying it, execs
 * before it runs user code (the fd is close-on-exec). A tenant cannot name a
 * kernel thread: they live in the initial PID namespace only (no /proc/PID, no
 * pidfd_open from a container's), and even from there /proc/PID/fd and
 * pidfd_getfd need ptrace access, granted only with CAP_SYS_PTRACE or every
 * capability the thread has (cap_ptrace_access_check, security/commoncap.c):
 * privileged pods are out of scope. The driver reads uvmFd from user memory
 * after the number is stored there, and a sibling may rewrite it in between:
 * one call at a time leaves no other tenant's file in the table for it to
 * name. The two threads share that table: a number rewritten to the other
 * thread's file names the wrong driver (nvidia-uvm's node is not major 195,
 * nv.c:4071-4125; /dev/nvidiaN has not nvidia-uvm's f_op): refused.
 *
 * mm: the routing copies the parameters in and out through current->mm
 * (__UVM_ROUTE_CMD_STACK, uvm_api.h; nvidia.ko's nvidia_ioctl and RM's
 * rmapiParamsAcquire likewise), so the thread adopts the caller's
 * (kthread_use_mm). The caller sleeps here holding a user of it, so it
 * outlives the call. uvm_api_mm_initialize itself takes the mm the va space
 * recorded at UVM_INITIALIZE, never current's (uvm.c:112-113).
 *
 * faults: the thread is shared by every slot, so nothing of one tenant's may
 * hold it. A fault on the parameters could (a userfaultfd range whose handler
 * never answers, a FUSE mapping): the caller faults the call's buffers in
 * first, in its own context (fault_in_safe_writeable: fixup_user_fault waits
 * killably, mm/gup.c), and the thread runs the call with page faults disabled
 * (pagefault_disable): a fault there fails the copy with -EFAULT at once
 * (do_user_addr_fault, faulthandler_disabled()), never waits. A page lost in
 * between (unmapped, write-protected, reclaimed) costs only its own call: if
 * the store of the fd number fails, the driver has not run, and the caller
 * faults in and queues again (VGPU_KTHREAD_TRIES); a copy the driver makes
 * fails with -EFAULT (or an RM status), as for any bad pointer. These calls
 * touch user memory only through copy_from_user/copy_to_user of the
 * parameters (__UVM_ROUTE_CMD_STACK, uvm_api.h, whose nv_copy_*_user are the
 * kernel's, uvm_linux.h; nvidia_ioctl; rmapiParamsAcquire): no
 * get_user_pages, no other user address. Sleeping with page faults disabled
 * is allowed (a per-task count; preemption stays on).
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
 * signals: a kernel thread takes none, so an interruptible wait in the driver
 * is a plain wait here (the uvm path has none: the power-management lock is a
 * trylock, uvm.c:1059, then a spinlock). The caller waits killably. Killed
 * while its call is queued, the call is taken off the queue
 * (kthread_cancel_work_sync) and the driver never sees it; killed while it
 * runs, the caller still waits for its end (bounded: it waits on no fault),
 * so the driver's result reaches the core's post step and the thread never
 * uses the caller's mm, credentials or files after the caller returned.
 *
 * the task: nvidia-uvm keys its per-thread lock-tracking context on current
 * for the call only (UVM_ENTRY_WRAP, uvm_api.h; uvm_thread_context.c) and
 * prints current->pid in debug messages; MM_INITIALIZE records neither.
 *
 * Only these calls come here: nvidia-uvm's other paths use current->mm as
 * the caller's (uvm_va_space_mm_or_current_retain asserts a user thread,
 * uvm_va_space_mm.c:271-274). The fabric controls may wait on the fabric
 * manager (multicast attach): they have their own thread, so a slow one holds
 * up no MM_INITIALIZE. Measured against nvsim (tests/vm/guest/vgpu/
 * held_fault.h): with the parameters on a page a userfaultfd write-protects,
 * another slot's MM_INITIALIZE, or ATTACH_GPU on the fabric thread, had not
 * returned after 5 s, and the held caller, SIGKILLed, had not exited after
 * 5 s (6.12, 6.1); now they return in 0.013-0.076 s and the caller dies in
 * 0.001-0.020 s (three runs each, loaded host). Still held: a fabric manager
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
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>

#include "core/vcore.h"
#include "kthread_call.h"

/* One call at a time on each (above). */
static struct kthread_worker *vgpu_kthreads[VGPU_KTHREAD_COUNT];
static const char *const vgpu_kthread_names[VGPU_KTHREAD_COUNT] = {
	[VGPU_KTHREAD_UVM] = "vgpu-call",
	[VGPU_KTHREAD_FABRIC] = "vgpu-fabric",
};

/*
 * How often a call whose fd number could not be stored (its page gone again
 * between the caller's fault-in and the thread's store) is faulted in and
 * queued again before it fails with -EFAULT.
 */
#define VGPU_KTHREAD_TRIES 3

struct vgpu_kthread_ioctl {
	struct kthread_work work;
	struct completion done;
	struct file *real;
	unsigned int cmd;
	unsigned long arg;
	struct file *file;
	u32 __user *fd_uaddr;
	struct mm_struct *mm;
	const struct cred *cred;
	bool again; /* the number could not be stored: the driver did not run */
	long rc;
};

static void vgpu_kthread_ioctl_fn(struct kthread_work *work)
{
	struct vgpu_kthread_ioctl *c =
		container_of(work, struct vgpu_kthread_ioctl, work);
	const struct cred *old;
	int fd;

	kthread_use_mm(c->mm);
	old = override_creds(c->cred);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		c->rc = fd;
		goto out;
	}
	fd_install(fd, get_file(c->file));
	/* A fault on a user address now fails the copy (-EFAULT), never
	 * waits: the caller faulted the parameters in. */
	pagefault_disable();
	c->again = put_user(fd, c->fd_uaddr) != 0;
	if (c->again)
		c->rc = -EFAULT;
	else
		c->rc = c->real->f_op->unlocked_ioctl(c->real, c->cmd, c->arg);
	pagefault_enable();
	/* The driver took its own reference if it keeps the file. */
	close_fd(fd);
out:
	revert_creds(old);
	kthread_unuse_mm(c->mm);
	complete(&c->done); /* the last touch of c: the caller may return */
}

/*
 * In the caller's own context: every buffer of the call, for writing (the
 * driver copies them back), else for reading. A fault that blocks blocks
 * here, killably (fixup_user_fault, mm/gup.c), and nowhere else. What
 * cannot be faulted in is left to the driver, which answers -EFAULT.
 */
static void vgpu_fault_in_call(const struct vcore_call *call)
{
	struct vcore_buf_info b;
	unsigned int i;

	for (i = 0; !vcore_call_buffer(call, i, &b); i++) {
		char __user *p = u64_to_user_ptr((u64)b.uaddr);

		if (fault_in_safe_writeable(p, b.len))
			fault_in_readable(p, b.len);
	}
}

long vgpu_kthread_ioctl(enum vgpu_kthread t, struct file *real,
			unsigned int cmd, unsigned long arg, struct file *file,
			u32 __user *fd_uaddr, const struct vcore_call *call)
{
	/* current's mm and cred stay: it returns only once the thread is
	 * done with them (or never started). */
	struct vgpu_kthread_ioctl c = {
		.real = real,
		.cmd = cmd,
		.arg = arg,
		.file = file,
		.fd_uaddr = fd_uaddr,
		.mm = current->mm,
		.cred = current_cred(),
	};
	int attempt;

	for (attempt = 0; attempt < VGPU_KTHREAD_TRIES; attempt++) {
		vgpu_fault_in_call(call);
		if (fatal_signal_pending(current))
			return -EINTR;
		c.again = false;
		init_completion(&c.done);
		kthread_init_work(&c.work, vgpu_kthread_ioctl_fn);
		kthread_queue_work(vgpu_kthreads[t], &c.work);
		/* Killed while queued: taken off the queue, the driver never
		 * saw the call. Killed while it runs: it runs to its end
		 * (it waits on no fault), then its result stands. */
		if (wait_for_completion_killable(&c.done) &&
		    kthread_cancel_work_sync(&c.work))
			return -EINTR;
		/* The worker may hold the work's address until the function
		 * returned. */
		kthread_flush_work(&c.work);
		if (!c.again)
			break;
	}
	return c.rc;
}

/* After the nodes: no call can come any more. */
void vgpu_kthread_call_exit(void)
{
	int t;

	for (t = 0; t < VGPU_KTHREAD_COUNT; t++) {
		if (!IS_ERR_OR_NULL(vgpu_kthreads[t]))
			kthread_destroy_worker(vgpu_kthreads[t]);
		vgpu_kthreads[t] = NULL;
	}
}

int vgpu_kthread_call_init(void)
{
	int t;

	for (t = 0; t < VGPU_KTHREAD_COUNT; t++) {
		vgpu_kthreads[t] =
			kthread_create_worker(0, "%s", vgpu_kthread_names[t]);
		if (IS_ERR(vgpu_kthreads[t])) {
			int err = PTR_ERR(vgpu_kthreads[t]);

			vgpu_kthread_call_exit();
			return err;
		}
	}
	return 0;
}

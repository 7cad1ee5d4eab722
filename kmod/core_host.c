// SPDX-License-Identifier: GPL-2.0
/*
 * The filter core's kernel host ops (kmod/core/vcore.h): user copies,
 * allocation, locks, log lines, the clock, the driver queries (driver_query.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "core_host.h"
#include "driver_query.h"
#include "seal.h"

/*
 * The core's reads and writes on the hot path are small fixed headers and
 * status words (NVOS54 is 32 bytes, a reply status 4, most escapes under 64).
 * copy_{from,to}_user() of a run-time size go through the string copy (rep
 * movsb where the CPU has ERMS/FSRM, whose start-up cost dominates at this
 * size); a few word accesses in one user-access window cost less, as in the
 * kernel's own small fixed-size readers (e.g. strncpy_from_user).
 */
#define VGPU_SMALL_COPY 64

static bool vgpu_copy_is_small(size_t n)
{
	return n <= VGPU_SMALL_COPY && IS_ALIGNED(n, sizeof(u32));
}

/* Word reads inside an open user-access window; false on a fault. */
static __always_inline bool vgpu_get_small(u8 *dst, const u8 __user *src,
					   size_t n)
{
	size_t i = 0;
	u64 w;
	u32 h;

	for (; i + sizeof(w) <= n; i += sizeof(w)) {
		unsafe_get_user(w, (const u64 __user *)(src + i), efault);
		memcpy(dst + i, &w, sizeof(w));
	}
	if (i < n) {
		unsafe_get_user(h, (const u32 __user *)(src + i), efault);
		memcpy(dst + i, &h, sizeof(h));
	}
	return true;
efault:
	return false;
}

static int vgpu_copy_small_from_user(u8 *dst, const u8 __user *src, size_t n)
{
	bool ok;

	if (!user_access_begin(src, n))
		return -EFAULT;
	ok = vgpu_get_small(dst, src, n);
	user_access_end();
	return ok ? 0 : -EFAULT;
}

static int vgpu_copy_small_to_user(u8 __user *dst, const u8 *src, size_t n)
{
	size_t i = 0;
	u64 w;
	u32 h;

	if (!user_access_begin(dst, n))
		return -EFAULT;
	for (; i + sizeof(w) <= n; i += sizeof(w)) {
		memcpy(&w, src + i, sizeof(w));
		unsafe_put_user(w, (u64 __user *)(dst + i), efault);
	}
	if (i < n) {
		memcpy(&h, src + i, sizeof(h));
		unsafe_put_user(h, (u32 __user *)(dst + i), efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * @uctx is the call's sealed copy, or NULL (ioctl.c, vgpu_filter_call): what
 * lies inside it is read and written through the kernel's mapping. A store
 * through the user mapping would make the page writable, for the caller's
 * siblings too, before the driver read it (seal.c).
 */
static __always_inline void *vgpu_sealed(void *uctx, vcore_uptr_t uaddr,
					 vcore_size_t n)
{
	return unlikely(uctx) ? vgpu_seal_kaddr(uctx, (unsigned long)uaddr, n)
			      : NULL;
}

/* Called directly by the core (core.mk: VCORE_HOST_COPY_FROM_USER). */
int vgpu_host_copy_from_user(void *uctx, void *dst, vcore_uptr_t src,
			     vcore_size_t n)
{
	const void *k = vgpu_sealed(uctx, src, n);

	if (k) {
		memcpy(dst, k, n);
		return 0;
	}
	if (vgpu_copy_is_small(n))
		return vgpu_copy_small_from_user(dst, vgpu_uptr(src), n);
	return copy_from_user(dst, vgpu_uptr(src), n) ? -EFAULT : 0;
}

/*
 * Called directly by the core (core.mk: VCORE_HOST_COPY_FROM_USER2): two
 * small reads in one user-access window, one stac/clac pair fewer (a view
 * reads the RM status and the reply's head, kmod/core/views.c).
 */
int vgpu_host_copy_from_user2(void *uctx, void *d1, vcore_uptr_t s1,
			      vcore_size_t n1, void *d2, vcore_uptr_t s2,
			      vcore_size_t n2)
{
	bool ok;

	if (unlikely(uctx) || !vgpu_copy_is_small(n1) ||
	    !vgpu_copy_is_small(n2))
		return vgpu_host_copy_from_user(uctx, d1, s1, n1)
			       ?: vgpu_host_copy_from_user(uctx, d2, s2, n2);
	if (!access_ok(vgpu_uptr(s2), n2))
		return -EFAULT;
	if (!user_access_begin(vgpu_uptr(s1), n1))
		return -EFAULT;
	ok = vgpu_get_small(d1, vgpu_uptr(s1), n1) &&
	     vgpu_get_small(d2, vgpu_uptr(s2), n2);
	user_access_end();
	return ok ? 0 : -EFAULT;
}

int vgpu_host_copy_to_user(void *uctx, vcore_uptr_t dst, const void *src,
			   vcore_size_t n)
{
	void *k = vgpu_sealed(uctx, dst, n);

	if (k) {
		memcpy(k, src, n);
		return 0;
	}
	if (vgpu_copy_is_small(n))
		return vgpu_copy_small_to_user(vgpu_uptr(dst), src, n);
	return copy_to_user(vgpu_uptr(dst), src, n) ? -EFAULT : 0;
}

/*
 * Called directly by the core (core.mk: VCORE_HOST_PATCH_USER_LIST): a view's
 * read, compare and write of a reply list (struct vcore_list_patch) in one
 * user-access window, where the copy ops take three (the status with the
 * list's head, the rest of a long list, the write back). Inside the window
 * only user accesses, loads of @p and arithmetic: no call. The size and the
 * list's largest extent are range-checked before user_access_begin, whose
 * speculation barrier then covers them (as vgpu_host_copy_from_user2 does).
 */
int vgpu_host_patch_user_list(void *uctx, const struct vcore_list_patch *p)
{
	const u32 __user *status = vgpu_uptr(p->status);
	const u32 __user *size = vgpu_uptr(p->list);
	struct vcore_kv32 __user *e = vgpu_uptr(p->list + sizeof(u32));
	bool list_ok =
		access_ok(size, sizeof(u32) + (size_t)p->max * sizeof(*e));
	u32 st, n, i, k, key, value;
	int changed = 0;

	if (!user_access_begin(status, sizeof(*status)))
		return 0;
	unsafe_get_user(st, status, out);
	if (st != p->status_ok)
		goto out;
	if (!list_ok)
		goto efault;
	unsafe_get_user(n, size, efault);
	n = min(n, p->max);
	for (i = 0; i < n; i++) {
		unsafe_get_user(key, &e[i].key, efault);
		for (k = 0; k < p->nsubst && p->subst[k].key != key; k++)
			;
		if (k == p->nsubst)
			continue;
		unsafe_get_user(value, &e[i].value, efault);
		if (value == p->subst[k].value)
			continue;
		unsafe_put_user(p->subst[k].value, &e[i].value, efault);
		changed = 1;
	}
out:
	user_access_end();
	return changed;
efault:
	user_access_end();
	return -EFAULT;
}

static void *vgpu_host_zalloc(void *priv, vcore_size_t n)
{
	return kvzalloc(n, GFP_KERNEL);
}

static void vgpu_host_free(void *priv, void *p)
{
	kvfree(p);
}

/*
 * One lock class for every slot's core lock: lockdep then checks the core's own
 * order (it never nests two slots' locks).
 */
static void *vgpu_host_lock_create(void *priv)
{
	struct mutex *m = kmalloc(sizeof(*m), GFP_KERNEL);

	if (m)
		mutex_init(m);
	return m;
}

/*
 * A UVM file's lock: the same mutex in a lockdep class of its own. It is held
 * across user copies and the driver call, which take mmap_lock, while slot
 * locks are taken under mmap_lock (the mmap path): in the slots' class lockdep
 * would see a cycle that two distinct locks never close.
 */
static struct lock_class_key vgpu_uvm_file_lock_key;

static void *vgpu_host_lock_create_file(void *priv)
{
	struct mutex *m = vgpu_host_lock_create(priv);

	if (m)
		lockdep_set_class(m, &vgpu_uvm_file_lock_key);
	return m;
}

static void vgpu_host_lock_destroy(void *priv, void *lock)
{
	if (lock)
		mutex_destroy(lock);
	kfree(lock);
}

static void vgpu_host_lock(void *lock)
{
	mutex_lock(lock);
}

/* A UVM file's lock (vgpu_host_lock_create_file): a killed caller stops
 * waiting; its ioctl then fails with -EINTR, which it never sees. */
static int vgpu_host_lock_file_killable(void *lock)
{
	return mutex_lock_killable(lock) ? -VCORE_EINTR : 0;
}

static void vgpu_host_unlock(void *lock)
{
	mutex_unlock(lock);
}

/*
 * One line naming slot, pid and comm, and what was refused and why. The core's
 * messages about calls already start with "slot N: pid P:"; the host adds the
 * command name.
 */
static void vgpu_host_log(void *priv, enum vcore_log_level level,
			  const char *msg)
{
	struct vgpu_filter_slot *fs = priv;
	u32 id = fs ? fs->id : U32_MAX;
	bool named = !strncmp(msg, "slot ", 5);

#define VGPU_HOST_LOG(pr)                                                      \
	do {                                                                   \
		if (named)                                                     \
			pr("%s (comm %s)\n", msg, current->comm);              \
		else                                                           \
			pr("slot %u pid %d (%s): %s\n", id,                    \
			   task_tgid_nr(current), current->comm, msg);         \
	} while (0)
	switch (level) {
	case VCORE_LOG_ERR:
		VGPU_HOST_LOG(pr_err_ratelimited);
		break;
	case VCORE_LOG_WARN:
		VGPU_HOST_LOG(pr_warn_ratelimited);
		break;
	case VCORE_LOG_INFO:
		VGPU_HOST_LOG(pr_info_ratelimited);
		break;
	default:
		VGPU_HOST_LOG(pr_debug);
		break;
	}
#undef VGPU_HOST_LOG
}

static vcore_u64 vgpu_host_clock_ns(void *priv)
{
	return ktime_get_ns();
}

static void (*vgpu_tsg_hook)(u32 slot_id);

void vgpu_filter_set_tsg_hook(void (*fn)(u32 slot_id))
{
	WRITE_ONCE(vgpu_tsg_hook, fn);
}

static void vgpu_host_tsg_scheduled(void *priv)
{
	struct vgpu_filter_slot *fs = priv;
	void (*fn)(u32 slot_id) = READ_ONCE(vgpu_tsg_hook);

	if (fn)
		fn(fs->id);
}

const struct vcore_host_ops vgpu_host_ops = {
	.copy_from_user = vgpu_host_copy_from_user,
	.copy_to_user = vgpu_host_copy_to_user,
	.zalloc = vgpu_host_zalloc,
	.free = vgpu_host_free,
	.lock_create = vgpu_host_lock_create,
	.lock_destroy = vgpu_host_lock_destroy,
	.lock = vgpu_host_lock,
	.unlock = vgpu_host_unlock,
	.log = vgpu_host_log,
	.clock_ns = vgpu_host_clock_ns,
	.driver_memory = vgpu_trusted_driver_memory,
	.driver_class = vgpu_trusted_driver_class,
	.control_copy = vgpu_trusted_control_copy,
	.tsg_scheduled = vgpu_host_tsg_scheduled,
	.lock_create_file = vgpu_host_lock_create_file,
	.lock_file_killable = vgpu_host_lock_file_killable,
};

/* Client records confirmed by the driver (kmod/core/vcore.h, driver_query.c).
 */
const struct vcore_client_ops vgpu_client_ops = {
	.claim = vgpu_trusted_client_claim,
	.release = vgpu_trusted_client_release,
	.driver_has = vgpu_trusted_driver_has,
};

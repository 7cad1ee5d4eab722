// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * views.c - replies rewritten so a slot sees its own GPU: total = quota,
 * free = quota - charged (the whole slot's charge), and only its own
 * processes (abi.md §5, memory-quota-h200.md).
 *
 * Consumers and what they compute (abi.md §5.2):
 *   cuMemGetInfo   total = (HEAP_SIZE + FB_TAX) KiB, free = HEAP_FREE
 *   nvidia-smi     total = TOTAL_RAM_SIZE, used = HEAP_SIZE - HEAP_FREE,
 *                  reserved = TOTAL_RAM_SIZE - HEAP_SIZE
 *   NVML v1/v2     the same indices
 * So HEAP_SIZE = TOTAL_RAM_SIZE = USABLE_RAM_SIZE = RAM_SIZE = quota,
 * FB_TAX = 0, HEAP_FREE = LARGEST_FREE_REGION = quota - charged: every
 * formula then yields total = quota, used = charged, reserved = 0.
 */
#include "vcore_internal.h"
#include "abi/ctrl.h"
#include "abi/nv_escape.h"
#include "abi/nvstatus.h"

/*
 * The figures every memory view shows: @total = the quota, @avail = the quota
 * less the slot's charge. The core's own ledger (the kernel host's) is one
 * word its writers change under the slot lock with relaxed atomic stores
 * (slot.c), so it is read here with one relaxed load and no lock: the lock
 * would only order this read against a charge in flight, and without it the
 * view still shows a charge the slot held during the call. The quota is read
 * lock-free as vcore_slot_has_quota reads it. A host's ledger (the shim's,
 * shared between processes) is asked under the slot lock, as the contract of
 * its ops says (vcore.h, struct vcore_ledger_ops).
 */
static void view_figures(struct vcore_slot *slot, vcore_u64 *total,
			 vcore_u64 *avail)
{
	vcore_u64 q, c;

	if (slot->own_ledger) {
		q = slot->cfg.mem_quota_bytes;
		c = vcore_atomic_load(&slot->own_ledger_charged);
	} else {
		vcore_lock(slot);
		q = slot->cfg.mem_quota_bytes;
		c = vcore_charged(slot);
		vcore_unlock(slot);
	}
	*total = q;
	*avail = c < q ? q - c : 0;
}

static vcore_u32 kib(vcore_u64 bytes)
{
	vcore_u64 k = bytes >> 10;

	return k > 0xffffffffull ? 0xffffffffu : (vcore_u32)k;
}

/* RM's {index, data} lists are the pairs a host patches (vcore.h). */
_Static_assert(sizeof(struct vcore_kv32) == sizeof(NVXXXX_CTRL_XXX_INFO) &&
		       VCORE_OFF(NVXXXX_CTRL_XXX_INFO, index) ==
			       VCORE_OFF(struct vcore_kv32, key) &&
		       VCORE_OFF(NVXXXX_CTRL_XXX_INFO, data) ==
			       VCORE_OFF(struct vcore_kv32, value),
	       "NVXXXX_CTRL_XXX_INFO is a vcore_kv32");

/* Every FB info index a memory view rewrites. */
#define FB_VIEW_INDICES 9

/*
 * The memory view's substitutions into @s: each FB info index it rewrites
 * with the figure it shows (KiB; abi.md §5.2, the formulas at the top).
 */
static void fb_view_subst(struct vcore_slot *slot,
			  struct vcore_kv32 s[FB_VIEW_INDICES])
{
	vcore_u64 total_bytes, free_bytes;
	vcore_u32 total, free_kib;

	view_figures(slot, &total_bytes, &free_bytes);
	total = kib(total_bytes);
	free_kib = kib(free_bytes);
	s[0] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE,
				   free_kib};
	s[1] = (struct vcore_kv32){
		NV2080_CTRL_FB_INFO_INDEX_LARGEST_FREE_REGION_SIZE_KB,
		free_kib};
	s[2] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE, total};
	s[3] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE, total};
	s[4] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE,
				   total};
	s[5] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_MAPPABLE_HEAP_SIZE,
				   total};
	s[6] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE,
				   total};
	s[7] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_FB_TAX_SIZE_KB, 0};
	s[8] = (struct vcore_kv32){NV2080_CTRL_FB_INFO_INDEX_HEAP_OFFLINE_SIZE,
				   0};
}

/*
 * Substitute @subst (@nsubst pairs) into the list @l of @n entries in place;
 * returns 1 if anything changed.
 */
static int subst_list(struct vcore_kv32 *l, vcore_u32 n,
		      const struct vcore_kv32 *subst, vcore_u32 nsubst)
{
	vcore_u32 i, k;
	int changed = 0;

	for (i = 0; i < n; i++) {
		for (k = 0; k < nsubst && subst[k].key != l[i].key; k++)
			;
		if (k == nsubst || l[i].value == subst[k].value)
			continue;
		l[i].value = subst[k].value;
		changed = 1;
	}
	return changed;
}

/* Rewrite one {index, data} list in place; returns 1 if anything changed. */
static int rewrite_fb_list(struct vcore_slot *slot, NVXXXX_CTRL_XXX_INFO *l,
			   vcore_u32 n)
{
	struct vcore_kv32 subst[FB_VIEW_INDICES];

	fb_view_subst(slot, subst);
	return subst_list((struct vcore_kv32 *)l, n, subst, FB_VIEW_INDICES);
}

/* Read the reply list at @uaddr (n entries), rewrite it, write it back. */
static int rewrite_fb_reply(struct vcore_call *call, vcore_uptr_t uaddr,
			    vcore_u32 n)
{
	NVXXXX_CTRL_XXX_INFO l[NV2080_CTRL_FB_INFO_MAX_LIST_SIZE];
	vcore_size_t len = (vcore_size_t)n * sizeof(l[0]);

	if (vcore_user_read(call, l, uaddr, len))
		return -VCORE_EFAULT;
	if (!rewrite_fb_list(call->slot, l, n))
		return 0;
	if (vcore_user_write(call, uaddr, l, len))
		return -VCORE_EFAULT;
	vcore_count_view(call->slot);
	return 0;
}

/* ---- views: controls whose only work is rewriting the reply ---- */

static int view_post(struct vcore_call *call)
{
	const struct vcore_buf_info *b = &call->bufs[call->params_buf];
	struct vcore_reply reply = {
		.view = call->view,
		.arg = call->arg,
		.params = b->uaddr,
		.params_size = b->len,
	};

	return reply.view(call->slot, call->ctx.uctx, &reply);
}

/*
 * vcore_pre's handler of a view row. vcore_pre_lean forwards the same calls
 * with no record (dispatch.c) and the host runs the same view after the
 * driver (vcore_post_view): a call without params is refused by both, as
 * a view needs the reply it rewrites.
 */
enum vcore_verdict vcore_ctrl_view(struct vcore_call *call,
				   const struct vcore_view *view)
{
	if (!vcore_view_wanted(call->slot, view))
		return VCORE_FORWARD;
	if (call->params_buf < 0)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "view control without params");
	call->view = view->rewrite;
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = view_post;
	return VCORE_FORWARD;
}

/* The list's size and the list in the params; RM's status in the NVOS54. */
#define FB_V2_SIZE  VCORE_OFF(NV2080_CTRL_FB_GET_INFO_V2_PARAMS, fbInfoListSize)
#define FB_V2_LIST  VCORE_OFF(NV2080_CTRL_FB_GET_INFO_V2_PARAMS, fbInfoList)
#define CTRL_STATUS VCORE_OFF(NVOS54_PARAMETERS, status)
_Static_assert(FB_V2_LIST == FB_V2_SIZE + sizeof(vcore_u32),
	       "the list follows its size (struct vcore_list_patch)");
/* The list's head read with one small copy: its size and this many entries
 * (60 bytes; libcuda's and NVML's queries ask 1-5 indices). */
#define LIST_HEAD_ENTRIES 7

/*
 * struct vcore_list_patch through the host's copy ops, for a host with no
 * VCORE_HOST_PATCH_USER_LIST: the status and the list's head in one read,
 * the rest of the list when it is longer, and the list written back when an
 * entry changed. The same answers as the one-window version (vcore.h).
 */
static int patch_list_by_copies(struct vcore_slot *slot, void *uctx,
				const struct vcore_list_patch *p)
{
	/* Written by the reads before it is read (not cleared per call). */
	struct {
		vcore_u32 size;
		struct vcore_kv32 e[NV2080_CTRL_FB_INFO_MAX_LIST_SIZE];
	} l VCORE_NO_AUTO_INIT;
	vcore_u32 status = 1, max = p->max, n;
	vcore_size_t head, len;

	if (max > NV2080_CTRL_FB_INFO_MAX_LIST_SIZE)
		max = NV2080_CTRL_FB_INFO_MAX_LIST_SIZE;
	head = sizeof(l.size) +
	       (max < LIST_HEAD_ENTRIES ? max : LIST_HEAD_ENTRIES) *
		       sizeof(l.e[0]);
	/* The status and the head together (one user-access window in the
	 * kernel); when that faults, the status alone says which answer. */
	if (vcore_slot_user_read2(slot, uctx, &status, p->status,
				  sizeof(status), &l, p->list, head)) {
		if (vcore_slot_user_read(slot, uctx, &status, p->status,
					 sizeof(status)) ||
		    status != p->status_ok)
			return 0;
		return -VCORE_EFAULT;
	}
	if (status != p->status_ok)
		return 0;
	n = l.size < max ? l.size : max;
	len = sizeof(l.size) + n * sizeof(l.e[0]);
	if (len > head &&
	    vcore_slot_user_read(slot, uctx, (vcore_u8 *)&l + head,
				 p->list + head, len - head))
		return -VCORE_EFAULT;
	if (!subst_list(l.e, n, p->subst, p->nsubst))
		return 0;
	if (vcore_slot_user_write(slot, uctx, p->list + sizeof(l.size), l.e,
				  len - sizeof(l.size)))
		return -VCORE_EFAULT;
	return 1;
}

/*
 * A reply list rewritten in place (vcore.h, struct vcore_list_patch): in one
 * user-access window where the host has one, so that a view costs the
 * caller one stac/clac pair after the driver's call, not three.
 */
static int patch_user_list(struct vcore_slot *slot, void *uctx,
			   const struct vcore_list_patch *p)
{
#if defined(VCORE_HOST_PATCH_USER_LIST) &&                                     \
	defined(VCORE_HOST_COPY_FROM_USER) && defined(VCORE_HOST_COPY_TO_USER)
	if (__builtin_expect(
		    slot->ops->copy_from_user == VCORE_HOST_COPY_FROM_USER &&
			    slot->ops->copy_to_user == VCORE_HOST_COPY_TO_USER,
		    1))
		return VCORE_HOST_PATCH_USER_LIST(uctx, p);
#endif
	return patch_list_by_copies(slot, uctx, p);
}

/*
 * NV2080_CTRL_CMD_FB_GET_INFO_V2 (0x20801303, 1028 B), a view row: after a
 * call RM answered NV_OK, fbInfoListSize and the list as RM wrote them back
 * (it answers in place, and rejects a size over 128). Everything is read
 * from the reply, after the call; nothing before it. This is within the
 * kernel side's rule (docs/security.md: user memory is read once, and the
 * driver never reads what the core did not check): the driver gets the
 * caller's params untouched, as for any plain control, and no decision about
 * the call rests on them, so there is nothing the driver could read
 * differently. The rewrite is a courtesy to the caller on its own reply, not
 * a check: a sibling thread that changes the reply around the rewrite changes
 * only what its own process reads, which it can do anyway.
 */
static int fb_get_info_v2_view(struct vcore_slot *slot, void *uctx,
			       const struct vcore_reply *reply)
{
	struct vcore_kv32 subst[FB_VIEW_INDICES];
	struct vcore_list_patch p = {
		.status = reply->arg + CTRL_STATUS,
		.list = reply->params + FB_V2_SIZE,
		.status_ok = NV_OK,
		.nsubst = FB_VIEW_INDICES,
		.subst = subst,
	};
	int changed;

	if (reply->params_size < FB_V2_LIST)
		return 0;
	p.max = (reply->params_size - FB_V2_LIST) / sizeof(subst[0]);
	if (p.max > NV2080_CTRL_FB_INFO_MAX_LIST_SIZE)
		p.max = NV2080_CTRL_FB_INFO_MAX_LIST_SIZE;
	fb_view_subst(slot, subst);
	changed = patch_user_list(slot, uctx, &p);
	if (changed > 0)
		vcore_count_view(slot);
	return changed < 0 ? changed : 0;
}

int vcore_post_view(struct vcore_file *file, const struct vcore_reply *reply,
		    const struct vcore_call_ctx *ctx, int rc)
{
	void *uctx = ctx ? ctx->uctx : VCORE_NULL;

	if (rc)
		return rc;
	/*
	 * The memory view by a direct call: an indirect one is a retpoline on
	 * kernels built with them (Linux's INDIRECT_CALL_1 pattern, as
	 * dispatch.c calls rm_control_pre).
	 */
	if (reply->view == fb_get_info_v2_view)
		return fb_get_info_v2_view(file->slot, uctx, reply);
	return reply->view(file->slot, uctx, reply);
}

static int fb_v1_post(struct vcore_call *call)
{
	const struct vcore_buf_info *list = &call->bufs[call->list_buf];

	if (!vcore_reply_ok(call))
		return 0;
	return rewrite_fb_reply(call, list->uaddr,
				list->len / sizeof(NVXXXX_CTRL_XXX_INFO));
}

/*
 * NV2080_CTRL_CMD_FB_GET_INFO (0x20801301, deprecated): 16-B params with a
 * pointer to a user list (rmapi_deprecated_control.c:791-798).
 */
enum vcore_verdict vcore_ctrl_fb_get_info(struct vcore_call *call)
{
	const vcore_u8 *prm;
	vcore_u32 n;
	vcore_uptr_t list;
	int err;

	if (call->params_buf < 0)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "FB_GET_INFO without params");
	err = vcore_copy_buf(call, (unsigned int)call->params_buf);
	if (err)
		return vcore_refuse_errno(call, err,
					  "FB_GET_INFO params unreadable");
	prm = call->bufs[call->params_buf].priv;
	n = vcore_rd32(prm, 0);
	list = vcore_rd64(prm, 8);
	if (n > NV2080_CTRL_FB_INFO_MAX_LIST_SIZE)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   "FB_GET_INFO list too long");
	if (!n || !list)
		return VCORE_FORWARD;
	err = vcore_add_buf(call, call->params_buf, 8, list,
			    n * (vcore_u32)sizeof(NVXXXX_CTRL_XXX_INFO), 0);
	if (err < 0)
		return vcore_refuse_errno(call, -VCORE_EFAULT, "FB_GET_INFO");
	call->list_buf = err;
	if (!vcore_slot_has_quota(call->slot))
		return VCORE_FORWARD;
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = fb_v1_post;
	return VCORE_FORWARD;
}

/* NVOS32 FUNCTION_INFO: total = (HEAP_SIZE + FB_TAX) << 10 @24, free =
 * HEAP_FREE << 10 @32 (rmapi_deprecated_vidheapctrl.c:342-389). */
int vcore_post_vhc_info(struct vcore_call *call)
{
	vcore_u64 v[2];

	if (!vcore_slot_has_quota(call->slot) || !vcore_reply_ok(call))
		return 0;
	view_figures(call->slot, &v[0], &v[1]);
	if (vcore_user_write(call, call->arg + 24, v, sizeof(v)))
		return -VCORE_EFAULT;
	vcore_count_view(call->slot);
	return 0;
}

/* Legacy heap query: RM_ALLOC_MEMORY of class 0x40 returns
 * limit = heap - 1 (rmapi_deprecated_allocmemory.c:305-333). */
int vcore_view_heap_query(struct vcore_call *call)
{
	vcore_u64 limit;

	if (!vcore_slot_has_quota(call->slot))
		return 0;
	limit = call->slot->cfg.mem_quota_bytes - 1;
	if (vcore_user_write(call, call->arg + 32, &limit, sizeof(limit)))
		return -VCORE_EFAULT;
	vcore_count_view(call->slot);
	return 0;
}

/* ---- processes ---- */

static int rewrite_reply_post(struct vcore_call *call)
{
	struct vcore_buf_info *b = &call->bufs[call->params_buf];
	/* Reuse the private copy for the reply: the decision was made. */
	vcore_u8 *prm = (vcore_u8 *)b->priv;

	if (!vcore_reply_ok(call))
		return 0;
	if (vcore_user_read(call, prm, b->uaddr, b->len))
		return -VCORE_EFAULT;
	if (!call->reply_rewrite(call, prm, b->len))
		return 0;
	if (vcore_user_write(call, b->uaddr, prm, b->len))
		return -VCORE_EFAULT;
	vcore_count_view(call->slot);
	return 0;
}

void vcore_post_rewrite_reply(struct vcore_call *call,
			      vcore_reply_rewrite_fn fn)
{
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = rewrite_reply_post;
	call->reply_rewrite = fn;
}

/* GET_PIDS: pidTbl[] keeps only this slot's processes. */
static int get_pids_fn(const struct vcore_call *call, vcore_u8 *prm,
		       vcore_u32 len)
{
	NV2080_CTRL_GPU_GET_PIDS_PARAMS *r =
		(NV2080_CTRL_GPU_GET_PIDS_PARAMS *)prm;
	vcore_u32 i, n, kept = 0;

	if (len < sizeof(*r))
		return 0;
	n = r->pidTblCount;
	if (n > NV2080_CTRL_GPU_GET_PIDS_MAX_COUNT)
		n = NV2080_CTRL_GPU_GET_PIDS_MAX_COUNT;
	for (i = 0; i < n; i++)
		if (vcore_pid_in_slot(call->slot, r->pidTbl[i]))
			r->pidTbl[kept++] = r->pidTbl[i];
	if (kept == r->pidTblCount)
		return 0;
	for (i = kept; i < n; i++)
		r->pidTbl[i] = 0;
	r->pidTblCount = kept;
	return 1;
}

/*
 * A control whose reply @fn rewrites to this slot's processes: its params
 * copied now, for the post step to read back into. @missing and @unreadable
 * are the refusals' static reasons.
 */
static enum vcore_verdict pid_view_pre(struct vcore_call *call,
				       vcore_reply_rewrite_fn fn,
				       const char *missing,
				       const char *unreadable)
{
	int err;

	if (call->params_buf < 0)
		return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT,
					   missing);
	err = vcore_copy_buf(call, (unsigned int)call->params_buf);
	if (err)
		return vcore_refuse_errno(call, err, unreadable);
	vcore_post_rewrite_reply(call, fn);
	return VCORE_FORWARD;
}

/* NV2080_CTRL_CMD_GPU_GET_PIDS (0x2080018d, 3812 B): only this slot's. */
enum vcore_verdict vcore_ctrl_get_pids(struct vcore_call *call)
{
	return pid_view_pre(call, get_pids_fn, "GET_PIDS without params",
			    "GET_PIDS params unreadable");
}

/* GET_PID_INFO: another slot's process is reported as not found. */
static int get_pid_info_fn(const struct vcore_call *call, vcore_u8 *prm,
			   vcore_u32 len)
{
	NV2080_CTRL_GPU_GET_PID_INFO_PARAMS *r =
		(NV2080_CTRL_GPU_GET_PID_INFO_PARAMS *)prm;
	vcore_u32 i, n;
	int changed = 0;

	if (len < sizeof(*r))
		return 0;
	n = r->pidInfoListCount;
	if (n > NV2080_CTRL_GPU_GET_PID_INFO_MAX_COUNT)
		n = NV2080_CTRL_GPU_GET_PID_INFO_MAX_COUNT;
	for (i = 0; i < n; i++) {
		NV2080_CTRL_GPU_PID_INFO *e = &r->pidInfoList[i];

		if (vcore_pid_in_slot(call->slot, e->pid))
			continue;
		vcore_memset(e->data, 0, sizeof(e->data));
		e->result = NV_ERR_OBJECT_NOT_FOUND;
		changed = 1;
	}
	return changed;
}

/* NV2080_CTRL_CMD_GPU_GET_PID_INFO (0x2080018e, 14408 B). */
enum vcore_verdict vcore_ctrl_get_pid_info(struct vcore_call *call)
{
	return pid_view_pre(call, get_pid_info_fn,
			    "GET_PID_INFO without params",
			    "GET_PID_INFO params unreadable");
}

/* ---- per-process utilisation samples ---- */

/*
 * One engine's sample of
 * NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 as a slot may see it:
 * a process outside the slot becomes "no process", as the driver reports an
 * engine nobody was on (procId and subProcessID NV2080_GPUMON_PID_INVALID,
 * ctrl2080perf.h), so NVML, which attributes a sample only to a valid pid
 * (gpu_acct.c gpuacctProcessGpuUtil does the same), counts it for nobody. util
 * stays: it is the whole engine's busy fraction over the period, not the
 * process's, and the GPU's utilisation is readable to every tenant anyway
 * (nvmlDeviceGetUtilizationRates). pOsPidInfo, the driver's struct pid pointer,
 * which it returns as is to a caller in the initial pid namespace
 * (kern_perf_ctrl.c), is cleared for every sample: it is a kernel address.
 * @last_pid/@last_in cache the previous answer (samples repeat pids).
 */
static int hide_foreign_engine(struct vcore_slot *slot,
			       NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE *e,
			       vcore_u32 *last_pid, vcore_bool *last_in)
{
	int changed = e->pOsPidInfo != 0;

	e->pOsPidInfo = 0;
	if (e->procId == NV2080_GPUMON_PID_INVALID)
		return changed;
	if (e->procId != *last_pid) {
		*last_pid = e->procId;
		*last_in = vcore_pid_in_slot(slot, e->procId);
	}
	if (*last_in)
		return changed;
	e->procId = NV2080_GPUMON_PID_INVALID;
	e->subProcessID = NV2080_GPUMON_PID_INVALID;
	vcore_memset(e->subProcessName, 0, sizeof(e->subProcessName));
	return 1;
}

/*
 * NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2 (0x20802096,
 * 55888 B), a view row: the samples name the process on each engine at each
 * sampling instant, every tenant's (F11.4, docs/security.md); the reply keeps
 * only this slot's. Nothing of the request decides anything (the driver
 * checks bufSize), so nothing is read before the call; after a call RM
 * answered NV_OK, the reply (the row's exact size) is read, rewritten and
 * written back when anything changed. On every slot, quota or not.
 */
static int perfmon_samples_view(struct vcore_slot *slot, void *uctx,
				const struct vcore_reply *reply)
{
	NV2080_CTRL_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2_PARAMS *r;
	vcore_u32 i, status = 1, last_pid = NV2080_GPUMON_PID_INVALID;
	vcore_bool last_in = 0;
	int changed = 0, ret = 0;

	if (vcore_slot_user_read(slot, uctx, &status, reply->arg + CTRL_STATUS,
				 sizeof(status)) ||
	    status != NV_OK)
		return 0;
	r = slot->ops->zalloc(slot->priv, sizeof(*r));
	if (!r)
		return -VCORE_ENOMEM;
	if (vcore_slot_user_read(slot, uctx, r, reply->params, sizeof(*r))) {
		ret = -VCORE_EFAULT;
		goto out;
	}
	for (i = 0; i < NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL;
	     i++) {
		NV2080_CTRL_PERF_GPUMON_PERFMON_UTIL_SAMPLE *s = &r->samples[i];
		NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE *e[] = {
			&s->fb,	   &s->gr,    &s->nvenc,
			&s->nvdec, &s->nvjpg, &s->nvofa};
		unsigned int k;

		for (k = 0; k < sizeof(e) / sizeof(e[0]); k++)
			changed |= hide_foreign_engine(slot, e[k], &last_pid,
						       &last_in);
	}
	if (!changed)
		goto out;
	if (vcore_slot_user_write(slot, uctx, reply->params, r, sizeof(*r)))
		ret = -VCORE_EFAULT;
	else
		vcore_count_view(slot);
out:
	slot->ops->free(slot->priv, r);
	return ret;
}

/* The view rows' rewrites, by enum vcore_view_id (struct vcore_ctrl_row). */
const struct vcore_view vcore_views[VCORE_VIEWS] = {
	[VCORE_VIEW_FB_INFO_V2] = {.rewrite = fb_get_info_v2_view,
				   .under_quota = 1},
	[VCORE_VIEW_PERFMON_SAMPLES] = {.rewrite = perfmon_samples_view},
};

// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim RM core: clients, the object tree, video memory, and the controls a quota or compute
 * controller reads and drives (reference/nvidia-rm-abi.md §3-§6, §9.2-§9.3). All under
 * nvsim_rm_lock (nvsim.h). Statuses follow nvstatuscodes.h; where the real code path was not
 * verified the closest documented status is used and marked "approx".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "nvsim.h"

#define NVSIM_VIDMEM_ALIGN (2ULL << 20) /* class 0x40 rounds to 2 MiB (§4.2) */
#define NVSIM_MAX_OBJECTS_PER_CLIENT 65536
#define NVSIM_MAX_MAP_BYTES (4ULL << 30)

static LIST_HEAD(nvsim_clients);
static u32 nvsim_next_client = 0xc1d00000; /* RM-generated client handles look like this (§3) */

static struct nvsim_client *nvsim_client_find(u32 handle)
{
	struct nvsim_client *cl;

	list_for_each_entry(cl, &nvsim_clients, node)
		if (cl->handle == handle)
			return cl;
	return NULL;
}

/*
 * rmclientValidate (§9.2): strict validation binds a client to the ctl file that created it.
 * A call through any other file sees NV_ERR_INVALID_CLIENT, exactly like an unknown client.
 * Kernel callers (os_info NULL) skip the check, as RS_PRIV_LEVEL_KERNEL does.
 */
static struct nvsim_client *nvsim_client_get(const struct nvsim_caller *c, u32 handle, u32 *status)
{
	struct nvsim_client *cl = nvsim_client_find(handle);

	if (!cl || (c->os_info && cl->owner != c->os_info)) {
		*status = NV_ERR_INVALID_CLIENT;
		return NULL;
	}
	*status = NV_OK;
	return cl;
}

u32 nvsim_rm_check_client(const struct nvsim_caller *c, u32 hclient)
{
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	nvsim_client_get(c, hclient, &status);
	mutex_unlock(&nvsim_rm_lock);
	return status;
}

static struct nvsim_obj *nvsim_obj_find(struct nvsim_client *cl, u32 handle)
{
	return xa_load(&cl->objects, handle);
}

/* Release what one object holds; its children are already gone. */
static void nvsim_obj_release(struct nvsim_obj *obj)
{
	struct nvsim_gpu *gpu = obj->gpu;

	if (obj->vidmem)
		gpu->used_bytes -= obj->vidmem;
	if (obj->tsg)
		nvsim_sched_tsg_destroy(gpu, obj->tsg);
	if (NVSIM_IS_CHANNEL_CLASS(obj->hclass) && obj->parent && obj->parent->tsg)
		nvsim_sched_channels(gpu, obj->parent->tsg, -1, obj->channel_disabled ? -1 : 0);
	list_del(&obj->sibling);
	xa_erase(&obj->client->objects, obj->handle);
	obj->client->nobjects--;
	kfree(obj);
}

/* A free cascades to every descendant (§3 NVOS00). Iterative: a hostile client may build
 * chains deeper than the kernel stack. */
static void nvsim_obj_destroy(struct nvsim_obj *root)
{
	struct nvsim_obj *cur = root, *parent;
	bool last;

	for (;;) {
		if (!list_empty(&cur->children)) {
			cur = list_first_entry(&cur->children, struct nvsim_obj, sibling);
			continue;
		}
		parent = cur->parent;
		last = cur == root;
		nvsim_obj_release(cur);
		if (last)
			return;
		cur = parent;
	}
}

static void nvsim_client_destroy(struct nvsim_client *cl)
{
	while (!list_empty(&cl->children))
		nvsim_obj_destroy(list_first_entry(&cl->children, struct nvsim_obj, sibling));
	xa_destroy(&cl->objects);
	list_del(&cl->node);
	kfree(cl);
}

void nvsim_rm_free_file_clients(const void *os_info)
{
	struct nvsim_client *cl, *tmp;

	mutex_lock(&nvsim_rm_lock);
	list_for_each_entry_safe(cl, tmp, &nvsim_clients, node)
		if (cl->owner == os_info)
			nvsim_client_destroy(cl);
	mutex_unlock(&nvsim_rm_lock);
}

static u32 nvsim_client_new(const struct nvsim_caller *c, struct nvos64 *p)
{
	struct nvsim_client *cl;
	u32 handle = p->hObjectNew;

	if (handle && nvsim_client_find(handle))
		return NV_ERR_INSERT_DUPLICATE_NAME;
	while (!handle || nvsim_client_find(handle))
		handle = nvsim_next_client++;
	cl = kzalloc(sizeof(*cl), GFP_KERNEL);
	if (!cl)
		return NV_ERR_NO_MEMORY;
	cl->handle = handle;
	cl->owner = c->os_info;
	cl->pid = task_tgid_nr(current);
	get_task_comm(cl->comm, current);
	xa_init(&cl->objects);
	INIT_LIST_HEAD(&cl->children);
	cl->next_handle = 0xcaf00000;
	list_add_tail(&cl->node, &nvsim_clients);
	p->hObjectNew = handle;
	return NV_OK;
}

/* Link a new object under parent (NULL: the client) with the requested or a generated handle. */
static u32 nvsim_obj_insert(struct nvsim_client *cl, struct nvsim_obj *parent, struct nvsim_obj *obj,
			    u32 handle)
{
	int err;

	if (cl->nobjects >= NVSIM_MAX_OBJECTS_PER_CLIENT)
		return NV_ERR_INSUFFICIENT_RESOURCES;
	if (handle == cl->handle || (handle && nvsim_obj_find(cl, handle)))
		return NV_ERR_INSERT_DUPLICATE_NAME;
	while (!handle || handle == cl->handle || nvsim_obj_find(cl, handle))
		handle = cl->next_handle++;
	err = xa_insert(&cl->objects, handle, obj, GFP_KERNEL);
	if (err)
		return err == -EBUSY ? NV_ERR_INSERT_DUPLICATE_NAME : NV_ERR_NO_MEMORY;
	cl->nobjects++;
	obj->handle = handle;
	obj->client = cl;
	obj->parent = parent;
	INIT_LIST_HEAD(&obj->children);
	list_add_tail(&obj->sibling, parent ? &parent->children : &cl->children);
	return NV_OK;
}

/* osIsGpuAccessible (§9.3.2): a file with nvsim's f_op for this GPU in current's fd table. */
static int nvsim_match_gpu(const void *gpu, struct file *f, unsigned int fd)
{
	return f->f_op == &nvsim_fops && ((struct nvsim_file *)f->private_data)->gpu == gpu;
}

bool nvsim_gpu_accessible(struct nvsim_gpu *gpu)
{
	return current->files && iterate_fd(current->files, 0, nvsim_match_gpu, gpu) != 0;
}

/* RM derives the alloc-param size from the class, never from paramsSize (§3 NVOS64). */
static size_t nvsim_class_params_size(u32 hclass)
{
	switch (hclass) {
	case NV01_DEVICE_0:
		return sizeof(struct nv0080_alloc_params);
	case NV01_MEMORY_LOCAL_USER:
	case NV01_MEMORY_SYSTEM:
	case NV50_MEMORY_VIRTUAL:
		return sizeof(struct nv_memory_allocation_params);
	case KEPLER_CHANNEL_GROUP_A:
		return sizeof(struct nv_channel_group_alloc_params);
	default:
		return 0;
	}
}

union nvsim_class_params {
	struct nv0080_alloc_params dev;
	struct nv_memory_allocation_params mem;
	struct nv_channel_group_alloc_params tsg;
};

/* Class semantics of a new object; on success obj is ready to insert. */
static u32 nvsim_alloc_class(const struct nvsim_caller *c, struct nvsim_client *cl,
			     struct nvsim_obj *parent, struct nvsim_obj *obj,
			     union nvsim_class_params *prm)
{
	struct nvsim_gpu *gpu = parent ? parent->gpu : NULL;
	u64 size;

	obj->gpu = gpu;
	switch (obj->hclass) {
	case NV01_DEVICE_0:
		if (parent)
			return NV_ERR_INVALID_OBJECT_PARENT;
		if (prm->dev.deviceId >= nvsim_num_gpus)
			return NV_ERR_INVALID_ARGUMENT; /* approx */
		obj->gpu = &nvsim_gpus[prm->dev.deviceId];
		/* device.c:140-148: user clients need a real GPU file in their fd table. */
		if (!c->kernel && !nvsim_gpu_accessible(obj->gpu))
			return NV_ERR_INSUFFICIENT_PERMISSIONS;
		return NV_OK;
	case NV20_SUBDEVICE_0:
		return parent && parent->hclass == NV01_DEVICE_0 ? NV_OK : NV_ERR_INVALID_OBJECT_PARENT;
	case NV01_MEMORY_LOCAL_USER:
		if (!gpu)
			return NV_ERR_INVALID_OBJECT_PARENT;
		if (!prm->mem.size)
			return NV_ERR_INVALID_ARGUMENT;
		if (prm->mem.size > gpu->heap_bytes)
			return NV_ERR_NO_MEMORY;
		size = round_up(prm->mem.size, NVSIM_VIDMEM_ALIGN);
		if (gpu->used_bytes + size > gpu->heap_bytes)
			return NV_ERR_NO_MEMORY;
		gpu->used_bytes += size;
		obj->vidmem = size;
		prm->mem.size = size; /* in/out: the size actually allocated */
		return NV_OK;
	case NV50_MEMORY_VIRTUAL: /* a VA reservation: consumes no video memory */
		return gpu ? NV_OK : NV_ERR_INVALID_OBJECT_PARENT;
	case NV04_DISPLAY_COMMON:
		/* The H200 has no display engine: nvidia-smi's probe gets 0x56 (recorded corpus). */
		return NV_ERR_NOT_SUPPORTED;
	case KEPLER_CHANNEL_GROUP_A:
		if (!parent || parent->hclass != NV01_DEVICE_0)
			return NV_ERR_INVALID_OBJECT_PARENT;
		obj->tsg = nvsim_sched_tsg_create(gpu, cl->handle, 0, cl->pid, prm->tsg.engineType);
		return obj->tsg ? NV_OK : NV_ERR_NO_MEMORY;
	default:
		if (NVSIM_IS_CHANNEL_CLASS(obj->hclass)) {
			/* nvsim: channels need a TSG parent (no internal TSGs). */
			if (!parent || !parent->tsg)
				return NV_ERR_INVALID_OBJECT_PARENT;
			nvsim_sched_channels(gpu, parent->tsg, 1, 0);
		}
		/* Everything else (subcontexts, engines, events, RUSD, ...) is a plain object. */
		return NV_OK;
	}
}

/* Undo nvsim_alloc_class for an object that could not be inserted. */
static void nvsim_alloc_class_undo(struct nvsim_obj *parent, struct nvsim_obj *obj)
{
	if (obj->vidmem)
		obj->gpu->used_bytes -= obj->vidmem;
	if (obj->tsg)
		nvsim_sched_tsg_destroy(obj->gpu, obj->tsg);
	if (NVSIM_IS_CHANNEL_CLASS(obj->hclass) && parent && parent->tsg)
		nvsim_sched_channels(obj->gpu, parent->tsg, -1, 0);
}

void nvsim_rm_alloc(const struct nvsim_caller *c, struct nvos64 *p)
{
	union nvsim_class_params prm = {};
	struct nvsim_obj *parent = NULL, *obj;
	struct nvsim_client *cl;
	size_t psize;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	/* Userspace root-client allocations are all NV01_ROOT_CLIENT (escape.c:396-404). */
	if (p->hClass == NV01_ROOT || p->hClass == NV01_ROOT_NON_PRIV || p->hClass == NV01_ROOT_CLIENT) {
		p->status = nvsim_client_new(c, p);
		goto out;
	}
	cl = nvsim_client_get(c, p->hRoot, &status);
	if (!cl)
		goto fail;
	if (p->hObjectParent != p->hRoot) {
		parent = nvsim_obj_find(cl, p->hObjectParent);
		if (!parent) {
			status = NV_ERR_INVALID_OBJECT_PARENT;
			goto fail;
		}
	}
	psize = nvsim_class_params_size(p->hClass);
	if (psize && nvsim_copy_in(c, &prm, p->pAllocParms, psize)) {
		status = NV_ERR_INVALID_POINTER; /* approx */
		goto fail;
	}
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj) {
		status = NV_ERR_NO_MEMORY;
		goto fail;
	}
	obj->hclass = p->hClass;
	status = nvsim_alloc_class(c, cl, parent, obj, &prm);
	if (status == NV_OK) {
		status = nvsim_obj_insert(cl, parent, obj, p->hObjectNew);
		if (status != NV_OK)
			nvsim_alloc_class_undo(parent, obj);
	}
	if (status != NV_OK) {
		kfree(obj);
		goto fail;
	}
	if (obj->tsg)
		obj->tsg->htsg = obj->handle;
	/* Only the memory classes have outputs (size is in/out). */
	if (obj->hclass != NV01_DEVICE_0 && obj->hclass != KEPLER_CHANNEL_GROUP_A && psize &&
	    nvsim_copy_out(c, p->pAllocParms, &prm, psize)) {
		nvsim_obj_destroy(obj);
		status = NV_ERR_INVALID_POINTER; /* approx */
		goto fail;
	}
	p->hObjectNew = obj->handle;
fail:
	p->status = status;
out:
	mutex_unlock(&nvsim_rm_lock);
}

void nvsim_rm_free(const struct nvsim_caller *c, struct nvos00 *p)
{
	struct nvsim_client *cl;
	struct nvsim_obj *obj;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hRoot, &status);
	if (cl) {
		/* Freeing the client frees everything it owns. */
		if (p->hObjectOld == p->hRoot) {
			nvsim_client_destroy(cl);
		} else {
			/*
			 * An unknown handle frees nothing and succeeds: serverFreeResourceTree
			 * (resserv rs_server.c) turns "not found" into NV_OK under
			 * RS_COMPATABILITY_MODE, which the shipped driver sets; libcuda relies
			 * on it (the corpus frees handles before allocating them).
			 */
			obj = nvsim_obj_find(cl, p->hObjectOld);
			if (obj)
				nvsim_obj_destroy(obj);
		}
	}
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/* ---- controls -------------------------------------------------------------------------------- */

static u32 nvsim_fb_value(struct nvsim_gpu *gpu, u32 index, u32 *data)
{
	u64 heap_kib = gpu->heap_bytes >> 10, total_kib = (gpu->heap_bytes + gpu->reserved_bytes) >> 10;

	switch (index) {
	case NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE:
	case NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE:
		*data = total_kib;
		return NV_OK;
	case NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE:
		*data = heap_kib;
		return NV_OK;
	case NV2080_CTRL_FB_INFO_INDEX_FB_TAX_SIZE_KB:
		*data = 0;
		return NV_OK;
	case NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE:
		*data = (gpu->heap_bytes - gpu->used_bytes) >> 10;
		return NV_OK;
	default:
		*data = 0; /* indices nvsim does not model read as 0 */
		return NV_OK;
	}
}

static u32 nvsim_ctrl_fb_info_v2(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_fb_get_info_v2_params *p = buf;
	u32 i;

	if (p->fbInfoListSize > NV2080_CTRL_FB_INFO_MAX_LIST_SIZE)
		return NV_ERR_INVALID_ARGUMENT;
	for (i = 0; i < p->fbInfoListSize; i++)
		nvsim_fb_value(x->gpu, p->fbInfoList[i].index, &p->fbInfoList[i].data);
	return NV_OK;
}

/* Deprecated form: a nested user pointer to the {index,data} list (§5.1). */
static u32 nvsim_ctrl_fb_info_v1(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_fb_get_info_params *p = buf;
	size_t n = p->fbInfoListSize;
	struct nv2080_fb_info *list;
	u32 status = NV_ERR_INVALID_POINTER; /* approx */
	size_t i;

	if (!n || n > NV2080_CTRL_FB_INFO_MAX_LIST_SIZE)
		return NV_ERR_INVALID_ARGUMENT;
	list = kcalloc(n, sizeof(*list), GFP_KERNEL);
	if (!list)
		return NV_ERR_NO_MEMORY;
	if (nvsim_copy_in(x->c, list, p->fbInfoList, n * sizeof(*list)))
		goto out;
	for (i = 0; i < n; i++)
		nvsim_fb_value(x->gpu, list[i].index, &list[i].data);
	if (nvsim_copy_out(x->c, p->fbInfoList, list, n * sizeof(*list)))
		goto out;
	status = NV_OK;
out:
	kfree(list);
	return status;
}

/* Video memory a client holds on one GPU. */
static u64 nvsim_client_vidmem(struct nvsim_client *cl, struct nvsim_gpu *gpu, bool *on_gpu)
{
	struct nvsim_obj *obj;
	unsigned long idx;
	u64 sum = 0;

	xa_for_each(&cl->objects, idx, obj) {
		if (obj->gpu != gpu)
			continue;
		*on_gpu = true;
		sum += obj->vidmem;
	}
	return sum;
}

static u32 nvsim_ctrl_get_pids(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_gpu_get_pids_params *p = buf;
	struct nvsim_client *cl;
	u32 n = 0, i;

	list_for_each_entry(cl, &nvsim_clients, node) {
		bool on_gpu = false;

		nvsim_client_vidmem(cl, x->gpu, &on_gpu);
		if (!on_gpu)
			continue;
		for (i = 0; i < n && p->pidTbl[i] != cl->pid; i++)
			;
		if (i == n && n < NV2080_CTRL_GPU_MAX_PIDS)
			p->pidTbl[n++] = cl->pid;
	}
	p->pidTblCount = n;
	return NV_OK;
}

static u32 nvsim_ctrl_get_pid_info(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_gpu_get_pid_info_params *p = buf;
	struct nvsim_client *cl;
	u32 i;

	if (p->pidInfoListCount > NV2080_CTRL_GPU_MAX_PID_INFO)
		return NV_ERR_INVALID_ARGUMENT;
	for (i = 0; i < p->pidInfoListCount; i++) {
		struct nv2080_gpu_pid_info *e = &p->pidInfoList[i];
		bool found = false;
		u64 sum = 0;

		if (e->index != NV2080_CTRL_GPU_PID_INFO_INDEX_VIDEO_MEMORY_USAGE) {
			e->result = NV_ERR_NOT_SUPPORTED;
			continue;
		}
		list_for_each_entry(cl, &nvsim_clients, node)
			if (cl->pid == (pid_t)e->pid)
				sum += nvsim_client_vidmem(cl, x->gpu, &found);
		e->result = found ? NV_OK : NV_ERR_OBJECT_NOT_FOUND; /* approx */
		e->memPrivate = sum;
		e->memSharedOwned = 0;
		e->memSharedDuped = 0;
	}
	return NV_OK;
}

/* nvsim_sched.c: the TSG controls' side of the H200's contract (see there). */
void nvsim_sched_preempt_wait(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool wait,
			      u32 disables);
u32 nvsim_sched_disables(struct nvsim_gpu *gpu, struct nvsim_tsg *t);
void nvsim_sched_disable_channel(struct nvsim_gpu *gpu, struct nvsim_tsg *t, bool dis, bool was,
				 bool only_sched);
extern unsigned int nvsim_preempt_delay_us;

static u32 nvsim_ctrl_disable_channels(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv2080_fifo_disable_channels_params *p = buf;
	struct nvsim_obj *ch[NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES];
	u32 i, status;

	/* pRunlistPreemptEvent must be NULL for non-kernel callers (§6.2). */
	if ((p->pRunlistPreemptEvent && !x->c->kernel) ||
	    p->numChannels > NV2080_CTRL_FIFO_DISABLE_CHANNELS_MAX_ENTRIES)
		return NV_ERR_INVALID_ARGUMENT;
	/* Validate all, then apply: a refused list changes nothing. */
	for (i = 0; i < p->numChannels; i++) {
		struct nvsim_client *cl = nvsim_client_get(x->c, p->hClientList[i], &status);

		if (!cl)
			return status;
		ch[i] = nvsim_obj_find(cl, p->hChannelList[i]);
		if (!ch[i] || !NVSIM_IS_CHANNEL_CLASS(ch[i]->hclass) || ch[i]->gpu != x->gpu)
			return NV_ERR_INVALID_OBJECT_HANDLE;
	}
	for (i = 0; i < p->numChannels; i++) {
		bool dis = p->bDisable, was = ch[i]->channel_disabled;

		ch[i]->channel_disabled = dis;
		/* The H200's enable rule and its counters live there. */
		nvsim_sched_disable_channel(x->gpu, ch[i]->parent->tsg, dis, was,
					    p->bOnlyDisableScheduling);
	}
	return NV_OK;
}

static u32 nvsim_ctrl_tsg_schedule(struct nvsim_ctrl_ctx *x, void *buf)
{
	nvsim_sched_set_scheduled(x->gpu, x->obj->tsg,
				  ((struct nva06c_gpfifo_schedule_params *)buf)->bEnable);
	return NV_OK;
}

static u32 nvsim_ctrl_set_timeslice(struct nvsim_ctrl_ctx *x, void *buf)
{
	u64 us = ((struct nva06c_timeslice_params *)buf)->timesliceUs;

	if (!us)
		return NV_ERR_INVALID_ARGUMENT;
	nvsim_sched_set_timeslice(x->gpu, x->obj->tsg, us);
	return NV_OK;
}

static u32 nvsim_ctrl_get_timeslice(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nvsim_tsg_runtime_params rt;

	nvsim_sched_runtime(x->gpu, x->obj->tsg, &rt);
	((struct nva06c_timeslice_params *)buf)->timesliceUs = rt.timesliceUs;
	return NV_OK;
}

/*
 * preempt_delay_us (nvsim_sched.c): a PREEMPT(bWait=1) of a scheduled TSG that waits, as for a
 * running kernel on the H200, with the RM lock released so other calls (a controller's enable)
 * are served meanwhile. The TSG is looked up again after the wait: it may be gone.
 */
static u32 nvsim_ctrl_preempt(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nva06c_preempt_params *p = buf;
	unsigned int delay_us = READ_ONCE(nvsim_preempt_delay_us);
	u32 hclient = x->cl->handle, htsg = x->obj->handle, disables, status;

	if (p->timeoutUs > 1000000)
		return NV_ERR_INVALID_ARGUMENT; /* max 1 s (§6.2) */
	disables = nvsim_sched_disables(x->gpu, x->obj->tsg);
	if (p->bWait && delay_us && x->obj->tsg->scheduled) {
		mutex_unlock(&nvsim_rm_lock);
		usleep_range(delay_us, delay_us + 100);
		mutex_lock(&nvsim_rm_lock);
		x->cl = nvsim_client_get(x->c, hclient, &status);
		if (!x->cl)
			return status;
		x->obj = nvsim_obj_find(x->cl, htsg);
		if (!x->obj || !x->obj->tsg)
			return NV_ERR_INVALID_OBJECT_HANDLE;
		x->gpu = x->obj->gpu;
	}
	nvsim_sched_preempt_wait(x->gpu, x->obj->tsg, p->bWait, disables);
	return NV_OK;
}

static u32 nvsim_ctrl_tsg_runtime(struct nvsim_ctrl_ctx *x, void *buf)
{
	nvsim_sched_runtime(x->gpu, x->obj->tsg, buf);
	return NV_OK;
}

u32 nvsim_ctrl_handle_info(struct nvsim_ctrl_ctx *x, void *buf); /* nvsim_handle.c */

/* The controls nvsim serves: paramsSize must match exactly (control.c:453-461). */
static const struct nvsim_ctrl {
	u32 cmd;
	u32 size;
	u32 hclass; /* class of hObject the command is issued on */
	u32 (*fn)(struct nvsim_ctrl_ctx *x, void *buf);
} nvsim_ctrls[] = {
	{ NV2080_CTRL_CMD_FB_GET_INFO_V2, sizeof(struct nv2080_fb_get_info_v2_params),
	  NV20_SUBDEVICE_0, nvsim_ctrl_fb_info_v2 },
	{ NV2080_CTRL_CMD_FB_GET_INFO, sizeof(struct nv2080_fb_get_info_params), NV20_SUBDEVICE_0,
	  nvsim_ctrl_fb_info_v1 },
	{ NV2080_CTRL_CMD_GPU_GET_PIDS, sizeof(struct nv2080_gpu_get_pids_params), NV20_SUBDEVICE_0,
	  nvsim_ctrl_get_pids },
	{ NV2080_CTRL_CMD_GPU_GET_PID_INFO, sizeof(struct nv2080_gpu_get_pid_info_params),
	  NV20_SUBDEVICE_0, nvsim_ctrl_get_pid_info },
	{ NV2080_CTRL_CMD_FIFO_DISABLE_CHANNELS, sizeof(struct nv2080_fifo_disable_channels_params),
	  NV20_SUBDEVICE_0, nvsim_ctrl_disable_channels },
	{ NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, sizeof(struct nva06c_gpfifo_schedule_params),
	  KEPLER_CHANNEL_GROUP_A, nvsim_ctrl_tsg_schedule },
	{ NVA06C_CTRL_CMD_SET_TIMESLICE, sizeof(struct nva06c_timeslice_params), KEPLER_CHANNEL_GROUP_A,
	  nvsim_ctrl_set_timeslice },
	{ NVA06C_CTRL_CMD_GET_TIMESLICE, sizeof(struct nva06c_timeslice_params), KEPLER_CHANNEL_GROUP_A,
	  nvsim_ctrl_get_timeslice },
	{ NVA06C_CTRL_CMD_PREEMPT, sizeof(struct nva06c_preempt_params), KEPLER_CHANNEL_GROUP_A,
	  nvsim_ctrl_preempt },
	{ NVSIM_CTRL_CMD_TSG_GET_RUNTIME, sizeof(struct nvsim_tsg_runtime_params),
	  KEPLER_CHANNEL_GROUP_A, nvsim_ctrl_tsg_runtime },
	/* Every Memory subclass answers it (memCtrlCmdGetSurfaceInfoLvm, nvsim_surface.c). */
	{ NV0041_CTRL_CMD_GET_SURFACE_INFO, NV0041_GET_SURFACE_INFO_PARAMS_SIZE, NV01_MEMORY_LOCAL_USER,
	  nvsim_ctrl_surface_info },
	{ NV0041_CTRL_CMD_GET_SURFACE_INFO, NV0041_GET_SURFACE_INFO_PARAMS_SIZE, NV01_MEMORY_SYSTEM,
	  nvsim_ctrl_surface_info },
	{ NV0041_CTRL_CMD_GET_SURFACE_INFO, NV0041_GET_SURFACE_INFO_PARAMS_SIZE, NV50_MEMORY_VIRTUAL,
	  nvsim_ctrl_surface_info },
	{ 0xd02 /* NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO */, 16, NV01_ROOT_CLIENT, nvsim_ctrl_handle_info },
};

void nvsim_rm_control(const struct nvsim_caller *c, struct nvos54 *p)
{
	const struct nvsim_ctrl *ctl = NULL;
	struct nvsim_ctrl_ctx x = { .c = c };
	void *buf = NULL;
	u32 status;
	size_t i;

	/* IRQL_RAISED and LOCK_BYPASS are refused for non-kernel callers (control.c:441-448). */
	if (!c->kernel && (p->flags & (NVOS54_FLAGS_IRQL_RAISED | NVOS54_FLAGS_LOCK_BYPASS))) {
		p->status = NV_ERR_INVALID_FLAGS; /* approx */
		return;
	}
	mutex_lock(&nvsim_rm_lock);
	x.cl = nvsim_client_get(c, p->hClient, &status);
	if (!x.cl)
		goto out;
	if (p->hObject != p->hClient) {
		x.obj = nvsim_obj_find(x.cl, p->hObject);
		if (!x.obj) {
			status = NV_ERR_OBJECT_NOT_FOUND;
			goto out;
		}
		x.gpu = x.obj->gpu;
	}
	/* A command may be served on several classes: the row of hObject's class. */
	for (i = 0; i < ARRAY_SIZE(nvsim_ctrls); i++)
		if (nvsim_ctrls[i].cmd == p->cmd &&
		    (!ctl || nvsim_ctrls[i].hclass == (x.obj ? x.obj->hclass : NV01_ROOT_CLIENT)))
			ctl = &nvsim_ctrls[i];
	status = NV_ERR_NOT_SUPPORTED;
	if (!ctl || (x.obj ? x.obj->hclass : NV01_ROOT_CLIENT) != ctl->hclass)
		goto out;
	status = NV_ERR_INVALID_ARGUMENT;
	if (p->paramsSize != ctl->size)
		goto out;
	buf = kvzalloc(ctl->size, GFP_KERNEL);
	status = NV_ERR_NO_MEMORY;
	if (!buf)
		goto out;
	status = NV_ERR_INVALID_POINTER; /* approx */
	if (nvsim_copy_in(c, buf, p->params, ctl->size))
		goto out;
	status = ctl->fn(&x, buf);
	if (status == NV_OK && nvsim_copy_out(c, p->params, buf, ctl->size))
		status = NV_ERR_INVALID_POINTER;
out:
	mutex_unlock(&nvsim_rm_lock);
	kvfree(buf);
	p->status = status;
}

/* NVOS32 FUNCTION_INFO (§5.3): total = HEAP_SIZE + FB_TAX, free = HEAP_FREE, in bytes. */
void nvsim_rm_vid_heap(const struct nvsim_caller *c, struct nvos32 *p)
{
	struct nvsim_client *cl;
	struct nvsim_obj *dev;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hRoot, &status);
	if (!cl)
		goto out;
	dev = nvsim_obj_find(cl, p->hObjectParent);
	status = NV_ERR_INVALID_OBJECT_PARENT;
	if (!dev || !dev->gpu)
		goto out;
	status = NV_ERR_NOT_SUPPORTED; /* nvsim models only INFO; ALLOC_SIZE & co. are refused */
	if (p->function != NVOS32_FUNCTION_INFO)
		goto out;
	p->total = dev->gpu->heap_bytes;
	p->free = dev->gpu->heap_bytes - dev->gpu->used_bytes;
	status = NV_OK;
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/*
 * rm_create_mmap_context -> nv_add_mapping_context_to_file (nv-usermap.c:45-56): the wrapper's
 * fd is looked up in current's table (major 195; a dev file must be of the same GPU) and gets
 * the file's one mmap context, NV_ERR_STATE_IN_USE if it has one already.
 */
static u32 nvsim_add_mmap_ctx(int fd, bool want_ctl, struct nvsim_gpu *gpu, u64 length, u32 hclient,
			      u32 hmemory)
{
	struct nvsim_mmap_ctx *ctx;
	struct nvsim_file *target;
	struct file *filp;
	u32 status;

	if (!length || length > NVSIM_MAX_MAP_BYTES)
		return NV_ERR_INVALID_ARGUMENT;
	target = nvsim_fget_rm_file(fd, want_ctl, &filp, &status);
	if (!target)
		return status;
	status = NV_ERR_INVALID_ARGUMENT;
	if (!want_ctl && target->gpu != gpu)
		goto out;
	status = NV_ERR_NO_MEMORY;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		goto out;
	ctx->size = PAGE_ALIGN(length);
	ctx->hclient = hclient;
	ctx->hmemory = hmemory;
	mutex_init(&ctx->lock);
	xa_init(&ctx->pages);
	/* Set once, read locklessly by mmap (which runs under mmap_lock and must not take
	 * nvsim_rm_lock: copy_from_user under nvsim_rm_lock already orders rm_lock -> mmap_lock). */
	if (cmpxchg_release(&target->mmap_ctx, NULL, ctx)) {
		kfree(ctx);
		status = NV_ERR_STATE_IN_USE;
		goto out;
	}
	status = NV_OK;
out:
	fput(filp);
	return status;
}

static bool nvsim_is_sysmem_class(u32 hclass)
{
	return hclass == NV01_MEMORY_SYSTEM || hclass == RM_USER_SHARED_DATA ||
	       hclass == NV01_MEMORY_SYSTEM_OS_DESCRIPTOR;
}

void nvsim_rm_map_memory(const struct nvsim_caller *c, struct nvos33_with_fd *p)
{
	struct nvsim_client *cl;
	struct nvsim_obj *dev, *mem;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hClient, &status);
	if (!cl)
		goto out;
	dev = nvsim_obj_find(cl, p->hDevice);
	mem = nvsim_obj_find(cl, p->hMemory);
	status = NV_ERR_OBJECT_NOT_FOUND;
	if (!dev || !mem || !dev->gpu)
		goto out;
	/* Sysmem and RUSD are mapped through a ctl file, GPU memory through a dev file (§9.4). */
	status = nvsim_add_mmap_ctx(p->fd, nvsim_is_sysmem_class(mem->hclass), dev->gpu, p->length,
				    p->hClient, p->hMemory);
	if (status == NV_OK)
		p->pLinearAddress = 0; /* mmap(fd, length, offset 0) follows */
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

void nvsim_rm_unmap_memory(const struct nvsim_caller *c, struct nvos34 *p)
{
	struct nvsim_client *cl;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hClient, &status);
	if (cl && !nvsim_obj_find(cl, p->hMemory))
		status = NV_ERR_OBJECT_NOT_FOUND;
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/*
 * RM_UPDATE_DEVICE_MAPPING_INFO (NVOS56, ctl): libcuda moves a CPU mapping of hMemory from
 * pOldCpuAddress to pNewCpuAddress (mremap) and tells RM. nvsim keeps no CPU addresses of
 * mappings (the mmap context holds pages, not addresses), so after the client, device and
 * memory checks there is nothing to update.
 */
void nvsim_rm_update_mapping_info(const struct nvsim_caller *c, struct nvos56 *p)
{
	struct nvsim_client *cl;
	struct nvsim_obj *dev, *mem;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hClient, &status);
	if (cl) {
		dev = nvsim_obj_find(cl, p->hDevice);
		mem = nvsim_obj_find(cl, p->hMemory);
		if (!dev || !mem || !dev->gpu)
			status = NV_ERR_OBJECT_NOT_FOUND;
	}
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/*
 * NV_ESC_RM_ALLOC_MEMORY on a dev file (NVOS02 + fd): OS descriptors (0x71, host pinning),
 * sysmem with an mmap context in fd, and the legacy heap query of class 0x40 whose limit
 * leaks the heap size (§4.2, §5.3). An unregistered dev file owns no client: 0x23.
 */
void nvsim_rm_alloc_memory(const struct nvsim_caller *c, struct nvos02_with_fd *p)
{
	struct nvsim_obj *parent, *obj;
	struct nvsim_client *cl;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hRoot, &status);
	if (!cl)
		goto out;
	parent = nvsim_obj_find(cl, p->hObjectParent);
	status = NV_ERR_INVALID_OBJECT_PARENT;
	if (!parent || !parent->gpu)
		goto out;
	status = NV_ERR_INVALID_CLASS;
	if (p->hClass != NV01_MEMORY_SYSTEM_OS_DESCRIPTOR && p->hClass != NV01_MEMORY_SYSTEM &&
	    p->hClass != NV01_MEMORY_LOCAL_USER)
		goto out;
	status = NV_ERR_NO_MEMORY;
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		goto out;
	obj->hclass = p->hClass;
	obj->gpu = parent->gpu;
	status = nvsim_obj_insert(cl, parent, obj, p->hObjectNew);
	if (status != NV_OK) {
		kfree(obj);
		goto out;
	}
	p->hObjectNew = obj->handle;
	if (p->hClass == NV01_MEMORY_LOCAL_USER)
		p->limit = obj->gpu->heap_bytes - 1;
	if (p->hClass == NV01_MEMORY_SYSTEM && p->fd >= 0) {
		status = nvsim_add_mmap_ctx(p->fd, false, obj->gpu, p->limit + 1, cl->handle, obj->handle);
		if (status != NV_OK)
			nvsim_obj_destroy(obj);
	}
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

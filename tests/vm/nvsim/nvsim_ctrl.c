// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim RM controls (NV_ESC_RM_CONTROL): the ones a quota or compute controller reads and
 * drives (docs/nvidia-rm-abi.md §5-§6), one table row each, on the client table of
 * nvsim_rm.c, under nvsim_rm_lock (nvsim.h). Statuses as in nvsim_rm.c ("approx" where the
 * real code path was not verified).
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "nvsim.h"

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
	{ NV2080_CTRL_CMD_PERF_GET_GPUMON_PERFMON_UTIL_SAMPLES_V2,
	  sizeof(struct nv2080_perf_get_gpumon_perfmon_util_samples_v2_params), NV20_SUBDEVICE_0,
	  nvsim_ctrl_perfmon_samples }, /* nvsim_perfmon.c */
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
	/* The node's GPUs (nvsim_gpuid.c; ctrl0000gpu.h sizes). */
	{ 0x201 /* GET_ATTACHED_IDS */, 32 * 4, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_attached_ids },
	{ 0x214 /* GET_PROBED_IDS */, 3 * 32 * 4, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_probed_ids },
	{ 0x215 /* ATTACH_IDS */, 33 * 4, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_attach_ids },
	{ 0x216 /* DETACH_IDS */, 32 * 4, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_detach_ids },
	{ 0x205 /* GET_ID_INFO_V2 */, 8 * 4, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_id_info_v2 },
	{ 0x21b /* GET_PCI_INFO */, 12, NV01_ROOT_CLIENT, nvsim_ctrl_gpu_pci_info },
	/* Export fds (nvsim_share.c). */
	{ NV0000_CTRL_CMD_OS_UNIX_GET_EXPORT_OBJECT_INFO,
	  sizeof(struct nv0000_get_export_object_info_params), NV01_ROOT_CLIENT, nvsim_ctrl_export_info },
	{ NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD,
	  sizeof(struct nv0000_export_objects_to_fd_params), NV01_ROOT_CLIENT,
	  nvsim_ctrl_export_objects },
	{ NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD,
	  sizeof(struct nv0000_import_objects_from_fd_params), NV01_ROOT_CLIENT,
	  nvsim_ctrl_import_objects },
	/* Fabric controls: on the client here (nvsim_fabric.c). */
	{ NV00FD_CTRL_CMD_ATTACH_GPU, sizeof(struct nv00fd_attach_gpu_params), NV01_ROOT_CLIENT,
	  nvsim_ctrl_attach_gpu },
	{ NV00E0_CTRL_CMD_EXPORT_MEM, sizeof(struct nv00e0_export_mem_params), NV01_ROOT_CLIENT,
	  nvsim_ctrl_export_mem },
};

/*
 * Test counter (not a driver behaviour): controls with cmd watch_ctrl_cmd that reached nvsim,
 * counted at entry whatever their outcome (a control a proxy refuses from tenants must never get
 * here; tests/vm/guest/vgpu/parts/vgpu_rm_sealed.cc). 0: off.
 */
static unsigned int watch_ctrl_cmd;
module_param(watch_ctrl_cmd, uint, 0600);
MODULE_PARM_DESC(watch_ctrl_cmd, "test counter: the control command counted in watch_ctrl_seen");
static unsigned int watch_ctrl_seen;
module_param(watch_ctrl_seen, uint, 0444);
MODULE_PARM_DESC(watch_ctrl_seen, "test counter: controls with cmd watch_ctrl_cmd received");

void nvsim_rm_control(const struct nvsim_caller *c, struct nvos54 *p)
{
	const struct nvsim_ctrl *ctl = NULL;
	struct nvsim_ctrl_ctx x = { .c = c };
	void *buf = NULL;
	u32 status;
	size_t i;

	if (p->cmd && p->cmd == READ_ONCE(watch_ctrl_cmd))
		WRITE_ONCE(watch_ctrl_seen, watch_ctrl_seen + 1);
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

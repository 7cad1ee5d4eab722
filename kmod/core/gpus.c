// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gpus.c - a slot is one GPU of the node (issue 17, F11.3).
 *
 * The driver names GPUs by a 32-bit id derived from the PCI address
 * (gpuGenerate32BitId, src/nvidia/src/kernel/gpu/gpu.c, called from
 * arch/nvalloc/unix/src/osinit.c): NV_ESC_CARD_INFO lists them with their
 * minor numbers, the NV0000 GPU controls list, describe and attach them by
 * id, and NV_ESC_ATTACH_GPUS_TO_FD holds the GPUs it names open until the
 * ctl file closes (nv.c nvidia_dev_get). A tenant that attaches another GPU
 * keeps it initialised and "in use" (no reset, no MIG change) and reads
 * another tenant's GPU. So, when the slot knows its GPU (cfg.gpu_id, the
 * host's word: vgpu.ko asks the driver when it creates the slot):
 *   - the lists (CARD_INFO, GET_ATTACHED_IDS, GET_PROBED_IDS,
 *     GET_ACTIVE_DEVICE_IDS) are rewritten to name only the slot's GPU, as
 *     views.c rewrites the memory figures;
 *   - a call that names another GPU by id is refused as the driver refuses
 *     an id it does not know: NV_ERR_INVALID_ARGUMENT for controls, -ENODEV
 *     for ATTACH_GPUS_TO_FD (find_gpu_id found none);
 *   - "attach every probed GPU" is refused; "detach all" passes (RM detaches
 *     only what no other client still holds).
 * NV01_DEVICE_0 of another GPU is refused by the driver itself: it needs a
 * file of that GPU in the caller's fd table (abi.md §9.3.2), and the slot's
 * nodes give only the slot's GPU.
 * cfg.gpu_id 0 (a host that cannot say) confines nothing.
 */
#include "vcore_internal.h"
#include "abi/ctrl.h"
#include "abi/nv_escape.h"
#include "abi/nvstatus.h"
#include "rm_alloc_internal.h"

static vcore_u32 slot_gpu(const struct vcore_call *call)
{
	return call->slot->cfg.gpu_id;
}

static int copy_params(struct vcore_call *call)
{
	int err;

	if (call->params_buf < 0)
		return -VCORE_EFAULT;
	err = vcore_copy_buf(call, (unsigned int)call->params_buf);
	return err ? err : call->params_buf;
}

static enum vcore_verdict other_gpu(struct vcore_call *call, const char *what)
{
	return vcore_refuse_status(call, NV_ERR_INVALID_ARGUMENT, what);
}

/* ---- lists of ids, rewritten in the reply ---- */

/*
 * Keep the slot's id in an INVALID-terminated list of @n ids at @off of the
 * params (gpuIds[], excludedGpuIds[]); 1 if the list changed.
 */
static int keep_slot_gpu(vcore_u8 *prm, vcore_u32 off, vcore_u32 n,
			 vcore_u32 mine)
{
	vcore_u32 i, kept = 0, id;
	int changed = 0;

	for (i = 0; i < n; i++) {
		id = vcore_rd32(prm, off + 4 * i);
		if (id == NV0000_CTRL_GPU_INVALID_ID)
			break;
		if (id == mine)
			vcore_wr32(prm, off + 4 * kept++, id);
		else
			changed = 1;
	}
	for (i = kept; changed && i < n; i++)
		vcore_wr32(prm, off + 4 * i, NV0000_CTRL_GPU_INVALID_ID);
	return changed;
}

/* GET_ATTACHED_IDS: gpuIds[32]. */
static int attached_fn(const struct vcore_call *call, vcore_u8 *prm,
		       vcore_u32 len)
{
	if (len < 4 * NV0000_CTRL_GPU_MAX_ATTACHED_GPUS)
		return 0;
	return keep_slot_gpu(prm, 0, NV0000_CTRL_GPU_MAX_ATTACHED_GPUS,
			     slot_gpu(call));
}

/* GET_PROBED_IDS: gpuIds[32], excludedGpuIds[32], gpuFlags[32] (the flags
 * follow gpuIds: the slot's entry moves to the front with its id). */
static int probed_fn(const struct vcore_call *call, vcore_u8 *prm,
		     vcore_u32 len)
{
	const vcore_u32 n = NV0000_CTRL_GPU_MAX_PROBED_GPUS,
			mine = slot_gpu(call);
	vcore_u32 i, flags = 0;
	int changed;

	if (len < 3 * 4 * n)
		return 0;
	for (i = 0; i < n; i++)
		if (vcore_rd32(prm, 4 * i) == mine)
			flags = vcore_rd32(prm, 4 * (2 * n + i));
	changed = keep_slot_gpu(prm, 0, n, mine);
	changed |= keep_slot_gpu(prm, 4 * n, n, mine);
	if (changed)
		for (i = 0; i < n; i++)
			vcore_wr32(prm, 4 * (2 * n + i),
				   i == 0 && vcore_rd32(prm, 0) == mine ? flags
									: 0);
	return changed;
}

/* GET_ACTIVE_DEVICE_IDS: numDevices, devices[256] {gpuId, gpuInstanceId,
 * computeInstanceId}. */
static int active_fn(const struct vcore_call *call, vcore_u8 *prm,
		     vcore_u32 len)
{
	const vcore_u32 esz = 12, mine = slot_gpu(call);
	vcore_u32 n, i, kept = 0;

	if (len < 4)
		return 0;
	n = vcore_rd32(prm, 0);
	if (n > (len - 4) / esz)
		n = (len - 4) / esz;
	for (i = 0; i < n; i++) {
		vcore_u8 *e = prm + 4 + esz * i;

		if (vcore_rd32(e, 0) != mine)
			continue;
		if (kept != i)
			vcore_memcpy(prm + 4 + esz * kept, e, esz);
		kept++;
	}
	if (kept == n)
		return 0;
	vcore_memset(prm + 4 + esz * kept, 0, esz * (n - kept));
	vcore_wr32(prm, 0, kept);
	return 1;
}

static enum vcore_verdict list_ctrl(struct vcore_call *call,
				    vcore_reply_rewrite_fn fn)
{
	int i;

	if (!slot_gpu(call))
		return VCORE_FORWARD;
	i = copy_params(call);
	if (i < 0)
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "GPU list params unreadable");
	vcore_post_rewrite_reply(call, fn);
	return VCORE_FORWARD;
}

enum vcore_verdict vcore_ctrl_gpu_attached_ids(struct vcore_call *call)
{
	return list_ctrl(call, attached_fn);
}

enum vcore_verdict vcore_ctrl_gpu_probed_ids(struct vcore_call *call)
{
	return list_ctrl(call, probed_fn);
}

enum vcore_verdict vcore_ctrl_gpu_active_device_ids(struct vcore_call *call)
{
	return list_ctrl(call, active_fn);
}

/* ---- calls that name one GPU ---- */

/* GET_ID_INFO(_V2), GET_PCI_INFO, GET_UUID_FROM_GPU_ID, QUERY_DRAIN_STATE,
 * ASYNC/WAIT_ATTACH_ID: gpuId is the first field. */
enum vcore_verdict vcore_ctrl_gpu_id_at0(struct vcore_call *call)
{
	int i;

	if (!slot_gpu(call))
		return VCORE_FORWARD;
	i = copy_params(call);
	if (i < 0 || call->bufs[i].len < 4)
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "GPU control params unreadable");
	if (vcore_rd32(call->bufs[i].priv, 0) != slot_gpu(call))
		return other_gpu(call, "a GPU outside the slot");
	return VCORE_FORWARD;
}

/*
 * ATTACH_IDS {gpuIds[32], failedId} and DETACH_IDS {gpuIds[32]}: every id
 * up to INVALID must be the slot's. The driver reads the params again, so a
 * sibling thread could swap an id after this check (F2's class): with the
 * host's in-kernel entry the driver runs the core's copy instead, on the
 * caller's own client (RM keeps the attachment with that client).
 */
static enum vcore_verdict attach_ctrl(struct vcore_call *call,
				      vcore_bool attach)
{
	struct vcore_slot *slot = call->slot;
	const vcore_u32 n = NV0000_CTRL_GPU_MAX_PROBED_GPUS;
	vcore_u32 h_client, status = 0, k;
	/* NV0000_CTRL_GPU_ATTACH_IDS_PARAMS: gpuIds[32], failedId */
	vcore_u8 copy[4 * (NV0000_CTRL_GPU_MAX_PROBED_GPUS + 1)];
	const vcore_u8 *prm;
	int i;

	if (!slot_gpu(call))
		return VCORE_FORWARD;
	i = copy_params(call);
	if (i < 0 || call->bufs[i].len < 4 * n)
		return vcore_refuse_errno(call, -VCORE_EFAULT,
					  "GPU attach params unreadable");
	prm = call->bufs[i].priv;
	if (vcore_rd32(prm, 0) == NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS) {
		if (attach)
			return other_gpu(call, "attach of every GPU");
		return VCORE_FORWARD; /* DETACH_ALL_ATTACHED_IDS */
	}
	for (k = 0; k < n; k++) {
		vcore_u32 id = vcore_rd32(prm, 4 * k);

		if (id == NV0000_CTRL_GPU_INVALID_ID)
			break;
		if (id != slot_gpu(call))
			return other_gpu(call,
					 attach ? "attach of a GPU outside "
						  "the slot"
						: "detach of a GPU outside "
						  "the slot");
	}
	h_client = vcore_rd32(call->argbuf, 0);
	if (!attach || !slot->ops->control_copy ||
	    call->bufs[i].len != sizeof(copy) ||
	    vcore_rd32(call->argbuf, 4) != h_client ||
	    !vcore_own_client(call, h_client))
		return VCORE_FORWARD;
	vcore_memcpy(copy, prm, sizeof(copy));
	if (slot->ops->control_copy(slot->priv, h_client, h_client, call->cmd,
				    copy, sizeof(copy), &status))
		return VCORE_FORWARD;
	return vcore_answer_status(call, status);
}

enum vcore_verdict vcore_ctrl_gpu_attach_ids(struct vcore_call *call)
{
	return attach_ctrl(call, 1);
}

enum vcore_verdict vcore_ctrl_gpu_detach_ids(struct vcore_call *call)
{
	return attach_ctrl(call, 0);
}

/*
 * NV_ESC_ATTACH_GPUS_TO_FD: NvU32 gpu_id[] (0 skipped, nv.c). Residue,
 * refused by policy (docs/security/kernel-call-path.md, F11.3): the driver
 * reads the array from user memory again (an escape, not an RM control: the
 * host cannot hand the driver the core's copy, and no page of the caller's
 * is out of its siblings' reach), so a sibling thread that rewrites an id
 * during the call attaches that GPU to the file. That holds the GPU open
 * until the file closes and gives nothing else: a device of it needs a file
 * of that GPU in the caller's table, and every RM path naming it is refused
 * here (CallPath.AForeignGpuAttachedByARaceServesNothing).
 */
enum vcore_verdict vcore_esc_attach_gpus_to_fd(struct vcore_call *call)
{
	vcore_u32 k, id;
	int err;

	if (!slot_gpu(call))
		return VCORE_FORWARD;
	err = vcore_copy_arg(call);
	if (err)
		return vcore_refuse_errno(call, err,
					  "ATTACH_GPUS_TO_FD unreadable");
	for (k = 0; k + 4 <= call->size; k += 4) {
		id = vcore_rd32(call->argbuf, k);
		if (id && id != slot_gpu(call))
			return vcore_refuse_errno(call, -VCORE_ENODEV,
						  "ATTACH_GPUS_TO_FD names a "
						  "GPU outside the slot");
	}
	return VCORE_FORWARD;
}

/*
 * NV_ESC_CARD_INFO: nv_ioctl_card_info_t[n], the valid entries first
 * (nv.c nvidia_read_card_info). Only the slot's entry stays, at index 0.
 */
static int card_info_post(struct vcore_call *call)
{
	const vcore_u32 esz = sizeof(nv_ioctl_card_info_t);
	vcore_u32 n = call->size / esz, i, kept = 0, listed = 0;
	vcore_u8 *ci = call->argbuf;

	if (vcore_user_read(call, ci, call->arg, call->size))
		return -VCORE_EFAULT;
	for (i = 0; i < n; i++) {
		nv_ioctl_card_info_t *e =
			(nv_ioctl_card_info_t *)(ci + esz * i);

		if (!e->valid)
			continue;
		listed++;
		if (e->gpu_id != slot_gpu(call))
			continue;
		if (kept != i)
			vcore_memcpy(ci + esz * kept, e, esz);
		kept++;
	}
	if (kept == listed)
		return 0; /* nothing but the slot's GPU was listed */
	vcore_memset(ci + esz * kept, 0, esz * (n - kept));
	if (vcore_user_write(call, call->arg, ci, call->size))
		return -VCORE_EFAULT;
	vcore_count_view(call->slot);
	return 0;
}

enum vcore_verdict vcore_esc_card_info(struct vcore_call *call)
{
	int err;

	if (!slot_gpu(call))
		return VCORE_FORWARD;
	/* The private buffer the reply is read into (the input is ignored). */
	err = vcore_copy_arg(call);
	if (err)
		return vcore_refuse_errno(call, err, "CARD_INFO unreadable");
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = card_info_post;
	return VCORE_FORWARD;
}

/* ---- the host's question: which GPU is the slot's ---- */

vcore_u32 vcore_card_info_req(vcore_size_t *len)
{
	*len = NV_CARD_INFO_MAX_ENTRIES * sizeof(nv_ioctl_card_info_t);
	return VCORE_IOWR(NV_IOCTL_MAGIC, NV_ESC_CARD_INFO, *len);
}

vcore_u32 vcore_card_info_gpu_id(const void *reply, vcore_size_t len,
				 vcore_u32 minor)
{
	const nv_ioctl_card_info_t *ci = reply;
	vcore_size_t i;

	for (i = 0; i < len / sizeof(*ci); i++)
		if (ci[i].valid && ci[i].minor_number == minor)
			return ci[i].gpu_id;
	return 0;
}

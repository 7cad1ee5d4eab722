// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim_gpuid.c - the GPUs of the node as the driver names them: ids, the NV0000 GPU controls that
 * list, describe and attach them, and NV_ESC_ATTACH_GPUS_TO_FD.
 *
 * 580 driver (NVIDIA/open-gpu-kernel-modules, tag 580.142):
 * - a GPU's id is gpuGenerate32BitId(domain, bus, slot) of its PCI address
 *   (arch/nvalloc/unix/src/osinit.c nv_generate_id_from_pci_info; gpu/gpu.c), the `gpu_id` of
 *   NV_ESC_CARD_INFO (kernel-open/nvidia/nv.c nvidia_read_card_info) and every NV0000 gpuId.
 *   nvsim's GPU i sits at 0000:00:(6 + i).0, so GPU 0 has the id the H200 of the recorded corpus
 *   has (6, tests/data/traces).
 * - NV_ESC_ATTACH_GPUS_TO_FD (nv.c): once per ctl file (a second call -EINVAL), each non-zero id
 *   opened with nvidia_dev_get (unknown id: -ENODEV, the ones taken so far put back) and held
 *   until the file is released (nvidia_close → nvidia_dev_put).
 * - NV0000 GET_ATTACHED_IDS / GET_PROBED_IDS / ATTACH_IDS / DETACH_IDS / GET_ID_INFO_V2 /
 *   GET_PCI_INFO (ctrl0000gpu.h): lists end with NV0000_CTRL_GPU_INVALID_ID; an unknown gpuId is
 *   NV_ERR_INVALID_ARGUMENT. Simplified: every GPU counts as attached (as on a node where other
 *   processes use them all), ATTACH_IDS only counts, per GPU, in the read-only parameter
 *   `gpu_attach_ids` (DETACH_IDS validates and changes nothing).
 */
#include <linux/moduleparam.h>

#include "nvsim.h"

/* Per GPU: NV0000 ATTACH_IDS calls that named it (cumulative); ATTACH_GPUS_TO_FD references held
 * now. nvsim_rm_lock. */
static unsigned int gpu_attach_ids[NVSIM_MAX_GPUS];
static unsigned int gpu_fd_refs[NVSIM_MAX_GPUS];
module_param_array(gpu_attach_ids, uint, NULL, 0444);
MODULE_PARM_DESC(gpu_attach_ids, "per GPU: NV0000 GPU_ATTACH_IDS calls naming it");
module_param_array(gpu_fd_refs, uint, NULL, 0444);
MODULE_PARM_DESC(gpu_fd_refs, "per GPU: NV_ESC_ATTACH_GPUS_TO_FD references held now");

#define NV0000_CTRL_GPU_INVALID_ID 0xffffffffu
#define NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS 0x0000ffffu
#define NV0000_CTRL_GPU_DETACH_ALL_ATTACHED_IDS 0x0000ffffu
#define NVSIM_GPU_MAX_LIST 32 /* NV0000_CTRL_GPU_MAX_ATTACHED_GPUS, NV_MAX_DEVICES */
#define NVSIM_GPU_PCI_SLOT0 6

unsigned int nvsim_gpu_pci_slot(unsigned int i)
{
	return NVSIM_GPU_PCI_SLOT0 + i;
}

/* gpuGenerate32BitId(0, 0, slot): (domain << 16) | (bus << 8) | device. */
u32 nvsim_gpu_id(unsigned int i)
{
	return nvsim_gpu_pci_slot(i);
}

/* The index of the GPU with @id, or -1. */
static int nvsim_gpu_index(u32 id)
{
	unsigned int i;

	for (i = 0; i < nvsim_num_gpus; i++)
		if (nvsim_gpu_id(i) == id)
			return i;
	return -1;
}

int nvsim_attach_gpus_to_fd(struct nvsim_file *nvf, const u32 *ids, size_t n)
{
	u32 mask = 0;
	size_t i;
	int g;

	if (!n)
		return -EINVAL;
	mutex_lock(&nvsim_rm_lock);
	if (nvf->fd_attached_set) {
		mutex_unlock(&nvsim_rm_lock);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (!ids[i])
			continue;
		g = nvsim_gpu_index(ids[i]);
		if (g < 0) {
			mutex_unlock(&nvsim_rm_lock);
			return -ENODEV; /* nvidia_dev_get: find_gpu_id found none */
		}
		mask |= 1u << g;
	}
	nvf->fd_attached_set = true;
	nvf->fd_attached = mask;
	for (g = 0; g < NVSIM_MAX_GPUS; g++)
		if (mask & (1u << g))
			gpu_fd_refs[g]++;
	mutex_unlock(&nvsim_rm_lock);
	return 0;
}

void nvsim_gpus_release(struct nvsim_file *nvf)
{
	int g;

	mutex_lock(&nvsim_rm_lock);
	for (g = 0; g < NVSIM_MAX_GPUS; g++)
		if (nvf->fd_attached & (1u << g))
			gpu_fd_refs[g]--;
	nvf->fd_attached = 0;
	mutex_unlock(&nvsim_rm_lock);
}

/* gpuIds[NVSIM_GPU_MAX_LIST], every GPU, then INVALID. */
static void nvsim_list_gpus(u32 *ids)
{
	unsigned int i;

	for (i = 0; i < NVSIM_GPU_MAX_LIST; i++)
		ids[i] = i < nvsim_num_gpus ? nvsim_gpu_id(i) : NV0000_CTRL_GPU_INVALID_ID;
}

/* NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS: gpuIds[32]. */
u32 nvsim_ctrl_gpu_attached_ids(struct nvsim_ctrl_ctx *x, void *buf)
{
	nvsim_list_gpus(buf);
	return NV_OK;
}

/* NV0000_CTRL_GPU_GET_PROBED_IDS_PARAMS: gpuIds[32], excludedGpuIds[32], gpuFlags[32]. */
u32 nvsim_ctrl_gpu_probed_ids(struct nvsim_ctrl_ctx *x, void *buf)
{
	u32 *p = buf;
	unsigned int i;

	nvsim_list_gpus(p);
	for (i = 0; i < NVSIM_GPU_MAX_LIST; i++) {
		p[NVSIM_GPU_MAX_LIST + i] = NV0000_CTRL_GPU_INVALID_ID;
		p[2 * NVSIM_GPU_MAX_LIST + i] = 0;
	}
	return NV_OK;
}

/* ATTACH_IDS {gpuIds[32], failedId} / DETACH_IDS {gpuIds[32]}: each id up to INVALID must be a
 * GPU (or, first, the ALL sentinel). */
static u32 nvsim_gpu_id_list(u32 *ids, bool attach)
{
	unsigned int i, n, g;

	if (ids[0] == NV0000_CTRL_GPU_ATTACH_ALL_PROBED_IDS) {
		if (attach)
			for (g = 0; g < nvsim_num_gpus; g++)
				gpu_attach_ids[g]++;
		return NV_OK;
	}
	for (n = 0; n < NVSIM_GPU_MAX_LIST && ids[n] != NV0000_CTRL_GPU_INVALID_ID; n++) {
		if (nvsim_gpu_index(ids[n]) < 0) {
			if (attach)
				ids[NVSIM_GPU_MAX_LIST] = ids[n]; /* failedId */
			return NV_ERR_INVALID_ARGUMENT;
		}
	}
	if (attach)
		for (i = 0; i < n; i++)
			gpu_attach_ids[nvsim_gpu_index(ids[i])]++;
	return NV_OK;
}

u32 nvsim_ctrl_gpu_attach_ids(struct nvsim_ctrl_ctx *x, void *buf)
{
	return nvsim_gpu_id_list(buf, true);
}

u32 nvsim_ctrl_gpu_detach_ids(struct nvsim_ctrl_ctx *x, void *buf)
{
	return nvsim_gpu_id_list(buf, false);
}

/* NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS: gpuId in; gpuFlags, deviceInstance, subDeviceInstance,
 * sliStatus, boardId, gpuInstance, numaId out (values as the H200 answered in the corpus). */
u32 nvsim_ctrl_gpu_id_info_v2(struct nvsim_ctrl_ctx *x, void *buf)
{
	u32 *p = buf;
	int g = nvsim_gpu_index(p[0]);

	if (g < 0)
		return NV_ERR_INVALID_ARGUMENT;
	p[1] = 1;	/* IN_USE */
	p[2] = g;	/* deviceInstance: probe order, as the minor */
	p[3] = 0;
	p[4] = 0x41;	/* sliStatus as recorded */
	p[5] = p[0];	/* boardId */
	p[6] = g;
	p[7] = (u32)-1; /* NV0000_CTRL_NO_NUMA_NODE */
	return NV_OK;
}

/* NV0000_CTRL_GPU_GET_PCI_INFO_PARAMS: gpuId in; domain (u32), bus, slot (u16) out. */
u32 nvsim_ctrl_gpu_pci_info(struct nvsim_ctrl_ctx *x, void *buf)
{
	u32 *p = buf;
	u16 *bs = (u16 *)(p + 2);
	int g = nvsim_gpu_index(p[0]);

	if (g < 0)
		return NV_ERR_INVALID_ARGUMENT;
	p[1] = 0;
	bs[0] = 0;
	bs[1] = nvsim_gpu_pci_slot(g);
	return NV_OK;
}

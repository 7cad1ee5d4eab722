// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim_uvm_ext.c - UVM external ranges and mappings: how libcuda maps every cuMemAlloc into the
 * GPU's address space (docs/nvidia-rm-abi.md §4.2), and how UVM keeps the memory alive.
 *
 * 580 driver (NVIDIA/open-gpu-kernel-modules, tag 580.142, kernel-open/nvidia-uvm/):
 * - UVM_CREATE_EXTERNAL_RANGE (uvm_map_external.c uvm_create_external_range): a VA range of the
 *   file's va_space, 4 KiB aligned, base and length not 0, no overflow (uvm_api.h
 *   uvm_api_range_invalid_4k, NV_ERR_INVALID_ADDRESS), not overlapping another
 *   (uvm_range_tree.c uvm_range_tree_add: NV_ERR_UVM_ADDRESS_IN_USE).
 * - UVM_MAP_EXTERNAL_ALLOCATION (uvm_map_external_allocation → _on_gpu): [base, base+length)
 *   inside an external range, 1..UVM_MAX_GPUS GPU attributes; per GPU the mappings of that GPU
 *   inside the span are unmapped first (uvm_unmap_external_in_range), then
 *   nvUvmInterfaceDupMemory dups (hClient, hMemory) into UVM's own RM client: "takes a ref count
 *   on the physical allocation so it can't go away under us". The tenant's RM_FREE of hMemory
 *   afterwards frees its handle, not the memory.
 * - The dup goes (uvm_ext_gpu_map_free_internal → uvm_release_rm_handle →
 *   nvUvmInterfaceFreeDupedHandle) when its mapping is destroyed: UVM_UNMAP_EXTERNAL of the span
 *   on that GPU (uvm_unmap_external), UVM_FREE of the external range, a later map over it, or
 *   the va_space's teardown when the UVM file is released.
 * - UVM_FREE (uvm_va_range.c uvm_free): only a span that is exactly an external range frees it,
 *   with every mapping in it (uvm_free_external cannot fail); any other span changes nothing
 *   and answers NV_ERR_INVALID_ADDRESS.
 * - UVM_UNMAP_EXTERNAL (uvm_map_external.c uvm_unmap_external): 4 KiB alignment, then a range
 *   containing the span (NV_ERR_INVALID_ADDRESS), then a registered GPU (NV_ERR_INVALID_DEVICE),
 *   in that order; then that GPU's mappings inside the span go.
 * Simplified: one mapping per span (a map that only partly overlaps an earlier one leaves the
 * earlier one whole, the driver splits it), the dups live in nvsim's internal client, and the
 * GPU attributes are checked for a known GPU only (mapping, caching and format types are not).
 * `uvm_ext_dups` (read-only) counts the dups UVM holds now.
 */
#include <linux/list.h>
#include <linux/sizes.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "nvsim.h"

#define NV_ERR_UVM_ADDRESS_IN_USE 0x68 /* nvstatuscodes.h */

struct nvsim_uvm_range {
	struct list_head node;
	u64 base, end; /* [base, end) */
	struct list_head maps;
};

struct nvsim_uvm_map {
	struct list_head node;
	u64 base, end;
	unsigned int gpu;
	u32 dup; /* handle of UVM's dup in the internal client */
};

/* One UVM file's external ranges (file->private_data, nvsim_uvm.c). nvsim_rm_lock. */
struct nvsim_uvm_file {
	struct list_head ranges;
};

static unsigned int uvm_ext_dups;
module_param(uvm_ext_dups, uint, 0444);
MODULE_PARM_DESC(uvm_ext_dups, "dups of RM memory UVM external mappings hold now");

static bool nvsim_uvm_span_bad(u64 base, u64 length)
{
	return !base || !length || (base | length) & (SZ_4K - 1) || base + length < base;
}

void *nvsim_uvm_ext_open(void)
{
	struct nvsim_uvm_file *uf = kzalloc(sizeof(*uf), GFP_KERNEL);

	if (uf)
		INIT_LIST_HEAD(&uf->ranges);
	return uf;
}

static void nvsim_uvm_map_free(struct nvsim_uvm_map *m)
{
	list_del(&m->node);
	nvsim_internal_dup_free(m->dup);
	uvm_ext_dups--;
	kfree(m);
}

static void nvsim_uvm_range_free(struct nvsim_uvm_range *r)
{
	while (!list_empty(&r->maps))
		nvsim_uvm_map_free(list_first_entry(&r->maps, struct nvsim_uvm_map, node));
	list_del(&r->node);
	kfree(r);
}

/* uvm_va_space_destroy: every external range and its mappings go with the file. */
void nvsim_uvm_ext_release(void *priv)
{
	struct nvsim_uvm_file *uf = priv;

	if (!uf)
		return;
	mutex_lock(&nvsim_rm_lock);
	while (!list_empty(&uf->ranges))
		nvsim_uvm_range_free(list_first_entry(&uf->ranges, struct nvsim_uvm_range, node));
	mutex_unlock(&nvsim_rm_lock);
	kfree(uf);
}

static struct nvsim_uvm_range *nvsim_uvm_range_find(struct nvsim_uvm_file *uf, u64 base, u64 end)
{
	struct nvsim_uvm_range *r;

	list_for_each_entry(r, &uf->ranges, node)
		if (base >= r->base && end <= r->end)
			return r;
	return NULL;
}

/* The mappings of @gpu (all GPUs: ~0u) that lie inside [base, end). */
static void nvsim_uvm_unmap_in(struct nvsim_uvm_range *r, u64 base, u64 end, unsigned int gpu)
{
	struct nvsim_uvm_map *m, *n;

	list_for_each_entry_safe(m, n, &r->maps, node)
		if (m->base >= base && m->end <= end && (gpu == ~0u || m->gpu == gpu))
			nvsim_uvm_map_free(m);
}

static u32 nvsim_uvm_create_range(struct nvsim_uvm_file *uf, u64 base, u64 length)
{
	struct nvsim_uvm_range *r;

	if (nvsim_uvm_span_bad(base, length))
		return NV_ERR_INVALID_ADDRESS;
	list_for_each_entry(r, &uf->ranges, node)
		if (base < r->end && r->base < base + length)
			return NV_ERR_UVM_ADDRESS_IN_USE;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NV_ERR_NO_MEMORY;
	r->base = base;
	r->end = base + length;
	INIT_LIST_HEAD(&r->maps);
	list_add(&r->node, &uf->ranges);
	return NV_OK;
}

static u32 nvsim_uvm_map(struct nvsim_uvm_file *uf, const struct uvm_map_external_allocation_params *p)
{
	u64 end = p->base + p->length;
	struct nvsim_uvm_range *r;
	u64 i;

	if (nvsim_uvm_span_bad(p->base, p->length))
		return NV_ERR_INVALID_ADDRESS;
	if (!p->gpuAttributesCount || p->gpuAttributesCount > UVM_MAX_GPUS)
		return NV_ERR_INVALID_ARGUMENT;
	r = nvsim_uvm_range_find(uf, p->base, end);
	if (!r)
		return NV_ERR_INVALID_ADDRESS;
	for (i = 0; i < p->gpuAttributesCount; i++) {
		struct nvsim_gpu *gpu = nvsim_gpu_by_uuid(p->perGpuAttributes[i].gpuUuid);
		struct nvsim_uvm_map *m;
		u32 status;

		if (!gpu)
			return NV_ERR_INVALID_DEVICE;
		nvsim_uvm_unmap_in(r, p->base, end, gpu->minor);
		m = kzalloc(sizeof(*m), GFP_KERNEL);
		if (!m)
			return NV_ERR_NO_MEMORY;
		status = nvsim_internal_dup(p->hClient, p->hMemory, &m->dup);
		if (status != NV_OK) {
			kfree(m);
			return status;
		}
		m->base = p->base;
		m->end = end;
		m->gpu = gpu->minor;
		list_add(&m->node, &r->maps);
		uvm_ext_dups++;
	}
	return NV_OK;
}

/* uvm_free (uvm_va_range.c): the external range that starts at base, with its mappings. */
static u32 nvsim_uvm_free(struct nvsim_uvm_file *uf, u64 base, u64 length)
{
	struct nvsim_uvm_range *r;

	list_for_each_entry(r, &uf->ranges, node) {
		if (r->base == base && r->end == base + length) {
			nvsim_uvm_range_free(r);
			return NV_OK;
		}
	}
	return NV_ERR_INVALID_ADDRESS;
}

static u32 nvsim_uvm_unmap(struct nvsim_uvm_file *uf, const struct uvm_unmap_external_params *p)
{
	struct nvsim_gpu *gpu = nvsim_gpu_by_uuid(p->gpuUuid);
	struct nvsim_uvm_range *r;

	if (nvsim_uvm_span_bad(p->base, p->length))
		return NV_ERR_INVALID_ADDRESS;
	r = nvsim_uvm_range_find(uf, p->base, p->base + p->length);
	if (!r)
		return NV_ERR_INVALID_ADDRESS;
	if (!gpu)
		return NV_ERR_INVALID_DEVICE;
	nvsim_uvm_unmap_in(r, p->base, p->base + p->length, gpu->minor);
	return NV_OK;
}

/* Copy in, run under nvsim_rm_lock, store rmStatus, copy back (then the sibling's test hook). */
#define NVSIM_UVM_CALL(type, up, call)                                                             \
	({                                                                                         \
		type *p_ = kvzalloc(sizeof(type), GFP_KERNEL);                                     \
		long ret_ = -ENOMEM;                                                               \
		if (p_) {                                                                          \
			ret_ = -EFAULT;                                                            \
			if (!copy_from_user(p_, up, sizeof(type))) {                               \
				mutex_lock(&nvsim_rm_lock);                                        \
				p_->rmStatus = call(p_);                                           \
				mutex_unlock(&nvsim_rm_lock);                                      \
				ret_ = copy_to_user(up, p_, sizeof(type)) ? -EFAULT : 0;           \
				if (!ret_)                                                         \
					nvsim_rewrite_uvm_status(cmd, up, sizeof(type));           \
			}                                                                          \
			kvfree(p_);                                                                \
		}                                                                                  \
		ret_;                                                                              \
	})

long nvsim_uvm_ext_ioctl(void *priv, unsigned int cmd, void __user *up)
{
	struct nvsim_uvm_file *uf = priv;

	if (!uf)
		return -ENOIOCTLCMD;
	switch (cmd) {
	case UVM_CREATE_EXTERNAL_RANGE:
#define CREATE(p) nvsim_uvm_create_range(uf, (p)->base, (p)->length)
		return NVSIM_UVM_CALL(struct uvm_create_external_range_params, up, CREATE);
#undef CREATE
	case UVM_MAP_EXTERNAL_ALLOCATION:
#define MAP(p) nvsim_uvm_map(uf, p)
		return NVSIM_UVM_CALL(struct uvm_map_external_allocation_params, up, MAP);
#undef MAP
	case UVM_FREE:
#define FREE(p) nvsim_uvm_free(uf, (p)->base, (p)->length)
		return NVSIM_UVM_CALL(struct uvm_free_params, up, FREE);
#undef FREE
	case UVM_UNMAP_EXTERNAL:
#define UNMAP(p) nvsim_uvm_unmap(uf, p)
		return NVSIM_UVM_CALL(struct uvm_unmap_external_params, up, UNMAP);
#undef UNMAP
	default:
		return -ENOIOCTLCMD;
	}
}

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
 * - Each mapping's page tables (below, "Page tables") are video memory of UVM's, held while a
 *   mapping needs them and charged to no RM client.
 * Simplified: one mapping per span (a map that only partly overlaps an earlier one leaves the
 * earlier one whole, the driver splits it), the dups live in nvsim's internal client, and the
 * GPU attributes are checked for a known GPU only (mapping, caching and format types are not).
 * `uvm_ext_dups` (read-only) counts the dups UVM holds now, `uvm_ptable_bytes` the page tables.
 *
 * Page tables (580.142 kernel-open/nvidia-uvm/, Hopper's format, uvm_hopper_mmu.c):
 * - uvm_va_range_map_rm_allocation (uvm_map_external.c) builds the mapping's tables with
 *   uvm_page_table_range_vec_init (uvm_mmu.c): one uvm_page_tree_get_ptes_async per piece of the
 *   span inside one page table's coverage; try_get_ptes walks from the root (depth 0, made with
 *   the tree, uvm_page_tree_init) and allocates each missing directory of depth 1 up to the
 *   mapping's page-table depth (allocate_directory); uvm_page_tree_put_ptes_async frees a
 *   directory when its last entry goes, up the tree. So each directory exists while at least
 *   one mapping lies under it: nvsim refcounts them per UVM file (its va_space) and GPU.
 * - Hopper's levels (the file's header table, va_base[], index_bits_hopper): depth 1 (PDE3)
 *   covers 2^56 B, depth 2 (PDE2) 2^47, depth 3 (PDE1) 2^38 = 256 GiB, depth 4 (PDE0) 2^29 =
 *   512 MiB, depth 5 (the PTEs) 2 MiB. page_table_depth_hopper: 2 MiB pages have their PTEs in
 *   the depth-4 directory, 512 MiB pages in depth 3, 4 KiB and 64 KiB pages in a depth-5 table.
 *   allocation_size_hopper: 4096 B for every directory and 4 KiB-page table, 256 B for a 64 KiB-
 *   page table; a PDE0 entry is dual (entries_per_index_hopper 2, entry_offset_hopper), so one
 *   2 MiB piece can have a 4 KiB-page and a 64 KiB-page table at once.
 * - The mapping's page size (uvm_map_external_allocation_on_gpu): the largest the GPU supports
 *   (page_sizes_ampere: 4 KiB, 64 KiB, 2 MiB, 512 MiB) not above the smallest alignment of the
 *   memory's page size, base, length and offset. nvsim's video memory has 2 MiB pages (it rounds
 *   every class 0x40 allocation to 2 MiB, nvsim_rm.c), other memory 4 KiB.
 * - Measured on the H200 (docs/results/rm-internal-memory-h200.md): a 2 MiB mapping alone in its
 *   1 GiB took 4 KiB (its PDE0), alone in its 512 GiB 8 KiB (PDE1 + PDE0), 2 MiB apart 0 more.
 * Not modelled: UVM's allocator (uvm_pmm_gpu.c) takes these pieces out of 2 MiB chunks it gets
 * from RM, so the driver's free memory moves in 2 MiB steps; nvsim counts the pieces.
 */
#include <linux/list.h>
#include <linux/sizes.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "nvsim.h"

#define NV_ERR_UVM_ADDRESS_IN_USE 0x68 /* nvstatuscodes.h */
#define NV_ERR_INVALID_OFFSET 0x37     /* nvstatuscodes.h */

struct nvsim_uvm_range {
	struct list_head node;
	u64 base, end; /* [base, end) */
	struct list_head maps;
};

struct nvsim_uvm_map {
	struct list_head node;
	u64 base, end;
	unsigned int gpu;
	u64 page_size; /* 0: no page tables taken yet */
	u32 dup; /* handle of UVM's dup in the internal client */
};

/* One UVM file's external ranges and page tables (file->private_data, nvsim_uvm.c).
 * nvsim_rm_lock. */
struct nvsim_uvm_file {
	struct list_head ranges;
	struct xarray ptables; /* nvsim_pt_key() -> xa_mk_value(mappings under it) */
};

static unsigned int uvm_ext_dups;
module_param(uvm_ext_dups, uint, 0444);
MODULE_PARM_DESC(uvm_ext_dups, "dups of RM memory UVM external mappings hold now");

static unsigned long uvm_ptable_bytes;
module_param(uvm_ptable_bytes, ulong, 0444);
MODULE_PARM_DESC(uvm_ptable_bytes, "video memory of UVM's page tables for external mappings");

#define NVSIM_PT_DEPTHS 6 /* Hopper: 0 (the root) .. 5 (4 KiB / 64 KiB PTEs) */

/* VA bits below each depth's directory entries: a depth-d directory covers 1 << shift[d - 1]
 * (va_base[] in uvm_hopper_mmu.c; depth 5: a 2 MiB piece). */
static const u8 nvsim_pt_shift[NVSIM_PT_DEPTHS] = { 56, 47, 38, 29, 21, 12 };

/* page_table_depth_hopper */
static unsigned int nvsim_pt_depth(u64 page_size)
{
	return page_size == SZ_2M ? 4 : page_size == SZ_512M ? 3 : 5;
}

/* A directory of @depth (or the depth-5 table of @page_size) on @gpu holding @va: its key. */
static unsigned long nvsim_pt_key(unsigned int gpu, unsigned int depth, u64 page_size, u64 va)
{
	u64 index = va >> nvsim_pt_shift[depth - 1]; /* < 2^36: 57-bit VAs */

	return (unsigned long)depth << 40 | (unsigned long)gpu << 37 |
	       (unsigned long)(depth == 5 && page_size == SZ_64K) << 36 | index;
}

/* allocation_size_hopper */
static u64 nvsim_pt_bytes(unsigned int depth, u64 page_size)
{
	return depth == 5 && page_size == SZ_64K ? 256 : SZ_4K;
}

/* Releases (@add < 0) or takes (@add > 0) one mapping's reference on every directory and table
 * its span [base, end) needs at @page_size: what try_get_ptes allocates and
 * uvm_page_tree_put_ptes_async frees. Taking fails with NV_ERR_NO_MEMORY (nothing taken) when the
 * heap has no room for the new ones. */
static u32 nvsim_pt_refs(struct nvsim_uvm_file *uf, unsigned int gpu, u64 base, u64 end,
			 u64 page_size, int add)
{
	struct nvsim_gpu *g = &nvsim_gpus[gpu];
	unsigned int depth, last = nvsim_pt_depth(page_size);
	u64 need = 0, va;

	for (depth = 1; add > 0 && depth <= last; depth++) {
		u64 cover = 1ULL << nvsim_pt_shift[depth - 1];

		for (va = round_down(base, cover); va < end; va += cover)
			if (!xa_load(&uf->ptables, nvsim_pt_key(gpu, depth, page_size, va)))
				need += nvsim_pt_bytes(depth, page_size);
	}
	if (need > g->heap_bytes - g->used_bytes)
		return NV_ERR_NO_MEMORY;
	for (depth = 1; depth <= last; depth++) {
		u64 cover = 1ULL << nvsim_pt_shift[depth - 1];

		for (va = round_down(base, cover); va < end; va += cover) {
			unsigned long key = nvsim_pt_key(gpu, depth, page_size, va);
			unsigned long refs = xa_to_value(xa_load(&uf->ptables, key) ?: xa_mk_value(0));
			u64 bytes = nvsim_pt_bytes(depth, page_size);

			if (add < 0 && !refs)
				continue; /* never taken: its store failed (below) */
			refs += add;
			if (!refs) {
				xa_erase(&uf->ptables, key);
			} else if (xa_is_err(xa_store(&uf->ptables, key, xa_mk_value(refs),
						      GFP_KERNEL)) &&
				   refs == 1) {
				continue; /* no memory for a new entry: not taken */
			}
			if (add > 0 && refs == 1) {
				g->used_bytes += bytes;
				uvm_ptable_bytes += bytes;
			} else if (add < 0 && !refs) {
				g->used_bytes -= bytes;
				uvm_ptable_bytes -= bytes;
			}
		}
	}
	return NV_OK;
}

/* The mapping page size (uvm_map_external_allocation_on_gpu): the largest of Hopper's not above
 * the smallest alignment of the memory's page size, base, length and offset. */
static u64 nvsim_uvm_page_size(u64 mem_page, u64 base, u64 length, u64 offset)
{
	u64 align = mem_page | base | length | offset;
	static const u64 sizes[] = { SZ_512M, SZ_2M, SZ_64K, SZ_4K };
	unsigned int i;

	align &= ~(align - 1);
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		if (sizes[i] <= align)
			return sizes[i];
	return 0;
}

static bool nvsim_uvm_span_bad(u64 base, u64 length)
{
	return !base || !length || (base | length) & (SZ_4K - 1) || base + length < base;
}

void *nvsim_uvm_ext_open(void)
{
	struct nvsim_uvm_file *uf = kzalloc(sizeof(*uf), GFP_KERNEL);

	if (uf) {
		INIT_LIST_HEAD(&uf->ranges);
		xa_init(&uf->ptables);
	}
	return uf;
}

static void nvsim_uvm_map_free(struct nvsim_uvm_file *uf, struct nvsim_uvm_map *m)
{
	if (m->page_size)
		nvsim_pt_refs(uf, m->gpu, m->base, m->end, m->page_size, -1);
	list_del(&m->node);
	nvsim_internal_dup_free(m->dup);
	uvm_ext_dups--;
	kfree(m);
}

static void nvsim_uvm_range_free(struct nvsim_uvm_file *uf, struct nvsim_uvm_range *r)
{
	while (!list_empty(&r->maps))
		nvsim_uvm_map_free(uf, list_first_entry(&r->maps, struct nvsim_uvm_map, node));
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
		nvsim_uvm_range_free(uf, list_first_entry(&uf->ranges, struct nvsim_uvm_range, node));
	mutex_unlock(&nvsim_rm_lock);
	xa_destroy(&uf->ptables);
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
static void nvsim_uvm_unmap_in(struct nvsim_uvm_file *uf, struct nvsim_uvm_range *r, u64 base,
			       u64 end, unsigned int gpu)
{
	struct nvsim_uvm_map *m, *n;

	list_for_each_entry_safe(m, n, &r->maps, node)
		if (m->base >= base && m->end <= end && (gpu == ~0u || m->gpu == gpu))
			nvsim_uvm_map_free(uf, m);
}

/* The page size of the memory (hClient, hMemory) as nvUvmInterfaceDupMemory reports it
 * (mem_info.pageSize): 2 MiB for nvsim's video memory, 4 KiB for system memory; and its size.
 * 0: no memory (approx: nvsim's dup takes any object, the driver's only memory). */
static u64 nvsim_uvm_mem_info(u32 hclient, u32 hmemory, u64 *size)
{
	const struct nvsim_caller kernel = { .kernel = true };
	u32 status;
	struct nvsim_client *cl = nvsim_client_get(&kernel, hclient, &status);
	struct nvsim_obj *obj = cl ? nvsim_obj_find(cl, hmemory) : NULL;

	*size = obj ? obj->vidmem ?: obj->sysmem : 0;
	return !*size ? 0 : obj->vidmem ? SZ_2M : SZ_4K;
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
	u64 end = p->base + p->length, page_size, mem_size;
	struct nvsim_uvm_range *r;
	u64 i;

	if (nvsim_uvm_span_bad(p->base, p->length))
		return NV_ERR_INVALID_ADDRESS;
	if (!p->gpuAttributesCount || p->gpuAttributesCount > UVM_MAX_GPUS)
		return NV_ERR_INVALID_ARGUMENT;
	/* uvm_gpu_can_address (per GPU in the driver): Hopper's 57-bit VAs (num_va_bits_hopper;
	 * approx: the driver also takes the upper half of a canonical address space). */
	if (end > 1ULL << 57)
		return NV_ERR_OUT_OF_RANGE;
	r = nvsim_uvm_range_find(uf, p->base, end);
	if (!r)
		return NV_ERR_INVALID_ADDRESS;
	for (i = 0; i < p->gpuAttributesCount; i++) {
		struct nvsim_gpu *gpu = nvsim_gpu_by_uuid(p->perGpuAttributes[i].gpuUuid);
		struct nvsim_uvm_map *m;
		u32 status;

		if (!gpu)
			return NV_ERR_INVALID_DEVICE;
		nvsim_uvm_unmap_in(uf, r, p->base, end, gpu->minor);
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
		/* uvm_va_range_map_rm_allocation: the span inside the memory (NV_ERR_INVALID_OFFSET),
		 * then the tables; on a failure the mapping goes again. */
		page_size = nvsim_uvm_mem_info(p->hClient, p->hMemory, &mem_size);
		status = NV_ERR_INVALID_OFFSET;
		if (page_size && p->offset <= mem_size && p->length <= mem_size - p->offset) {
			page_size = nvsim_uvm_page_size(page_size, p->base, p->length, p->offset);
			status = nvsim_pt_refs(uf, m->gpu, m->base, m->end, page_size, 1);
		}
		if (status != NV_OK) {
			nvsim_uvm_map_free(uf, m);
			return status;
		}
		m->page_size = page_size;
	}
	return NV_OK;
}

/* uvm_free (uvm_va_range.c): the external range that starts at base, with its mappings. */
static u32 nvsim_uvm_free(struct nvsim_uvm_file *uf, u64 base, u64 length)
{
	struct nvsim_uvm_range *r;

	list_for_each_entry(r, &uf->ranges, node) {
		if (r->base == base && r->end == base + length) {
			nvsim_uvm_range_free(uf, r);
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
	nvsim_uvm_unmap_in(uf, r, p->base, p->base + p->length, gpu->minor);
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

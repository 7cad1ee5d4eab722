// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim RM memory the CPU maps (docs/nvidia-rm-abi.md §4.2, §5.3, §9.4): VID_HEAP INFO,
 * NV_ESC_RM_ALLOC_MEMORY, RM_MAP_MEMORY / RM_UNMAP_MEMORY and the mmap context they hand a
 * file, RM_UPDATE_DEVICE_MAPPING_INFO. On the client table of nvsim_rm.c, under nvsim_rm_lock
 * (nvsim.h). Statuses as in nvsim_rm.c ("approx" where the real code path was not verified).
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/moduleparam.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/version.h>

#include "nvsim.h"

#define NVSIM_MAX_MAP_BYTES (4ULL << 30)

/* NVOS32 FUNCTION_INFO (§5.3): total = HEAP_SIZE + FB_TAX, free = HEAP_FREE, in bytes; and
 * ALLOC_SIZE (nvsim_rm.c). */
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
	if (p->function == NVOS32_FUNCTION_ALLOC_SIZE) {
		status = nvsim_rm_vid_heap_alloc_size(c, cl, dev, p);
		goto out;
	}
	status = NV_ERR_NOT_SUPPORTED; /* nvsim models INFO and ALLOC_SIZE; the rest are refused */
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

/* System memory the driver holds for class 0x3e objects (nvsim_alloc_class, nvsim_rm.c). */
unsigned long nvsim_sysmem_bytes;
module_param_named(sysmem_bytes, nvsim_sysmem_bytes, ulong, 0444);
MODULE_PARM_DESC(sysmem_bytes, "bytes of system memory held for NV01_MEMORY_SYSTEM objects");

/*
 * Class 0x40 objects ALLOC_MEMORY made as NV01_MEMORY_LOCAL_PHYSICAL (all of FB) since load: the
 * admin callers' path of the legacy heap query (nvsim_rm_alloc_memory).
 */
static unsigned int local_physical_allocs;
module_param(local_physical_allocs, uint, 0444);
MODULE_PARM_DESC(local_physical_allocs,
		 "ALLOC_MEMORY class 0x40 answered with a whole-FB NV01_MEMORY_LOCAL_PHYSICAL handle");

/*
 * NV_ESC_RM_ALLOC_MEMORY on a dev file (NVOS02 + fd): OS descriptors (0x71, host pinning),
 * sysmem with an mmap context in fd, and the legacy heap query of class 0x40 whose limit
 * leaks the heap size (§4.2, §5.3). An unregistered dev file owns no client: 0x23.
 *
 * Class 0x40 as the 580 driver does it (rmapi_deprecated_allocmemory.c,
 * _rmAllocMemoryLocalUser): first an RM_ALLOC of NV01_MEMORY_LOCAL_PHYSICAL, a handle on the
 * whole framebuffer that the caller can map, which succeeds for admin callers (the class is
 * RS_FLAGS_ALLOC_PRIVILEGED: alloc_free.c _serverAllocValidatePrivilege wants
 * RS_PRIV_LEVEL_USER_ROOT, which a user call has when osIsAdministrator(), i.e.
 * NV_IS_SUSER() = capable(CAP_SYS_ADMIN), nv-linux.h); else, on
 * NV_ERR_INSUFFICIENT_PERMISSIONS, a dummy NV01_MEMORY_SYSTEM_DYNAMIC handle. Both return the
 * heap's limit.
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
	if (p->hClass == NV01_MEMORY_LOCAL_USER)
		obj->hclass = capable(CAP_SYS_ADMIN) ? NV01_MEMORY_LOCAL_PHYSICAL
						     : NV01_MEMORY_SYSTEM_DYNAMIC;
	obj->gpu = parent->gpu;
	status = nvsim_obj_insert(cl, parent, obj, p->hObjectNew);
	if (status != NV_OK) {
		kfree(obj);
		goto out;
	}
	p->hObjectNew = obj->handle;
	if (p->hClass == NV01_MEMORY_LOCAL_USER)
		p->limit = obj->gpu->heap_bytes - 1;
	if (obj->hclass == NV01_MEMORY_LOCAL_PHYSICAL)
		WRITE_ONCE(local_physical_allocs, local_physical_allocs + 1);
	if (p->hClass == NV01_MEMORY_SYSTEM && p->fd >= 0) {
		status = nvsim_add_mmap_ctx(p->fd, false, obj->gpu, p->limit + 1, cl->handle, obj->handle);
		if (status != NV_OK)
			nvsim_obj_destroy(obj);
	}
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/* ---- mmap (nvidia-rm-abi.md §9.4) -------------------------------------------------------------------- */

/* Every callback finds its state through vma->vm_file, as nv_vm_ops does. */
static vm_fault_t nvsim_vm_fault(struct vm_fault *vmf)
{
	struct nvsim_file *nvf = nvsim_file_of(vmf->vma->vm_file);
	struct nvsim_mmap_ctx *ctx = smp_load_acquire(&nvf->mmap_ctx);
	struct page *page;
	vm_fault_t ret = 0;

	if (!ctx || vmf->pgoff >= (ctx->size >> PAGE_SHIFT))
		return VM_FAULT_SIGBUS;
	mutex_lock(&ctx->lock);
	page = xa_load(&ctx->pages, vmf->pgoff);
	if (!page) {
		page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!page) {
			ret = VM_FAULT_OOM;
			goto out;
		}
		if (xa_err(xa_store(&ctx->pages, vmf->pgoff, page, GFP_KERNEL))) {
			__free_page(page);
			ret = VM_FAULT_OOM;
			goto out;
		}
	}
	get_page(page);
	vmf->page = page;
out:
	mutex_unlock(&ctx->lock);
	return ret;
}

static const struct vm_operations_struct nvsim_vm_ops = {
	.fault = nvsim_vm_fault,
};

int nvsim_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct nvsim_file *nvf = nvsim_file_of(filp);
	struct nvsim_mmap_ctx *ctx;

	/* Lockless: the context is set once (cmpxchg_release) and lives until release. */
	ctx = smp_load_acquire(&nvf->mmap_ctx);
	/* nvidia_mmap_helper: a context is required, vm_pgoff 0, and the size must match. */
	if (!ctx || vma->vm_pgoff != 0 || vma->vm_end - vma->vm_start != ctx->size)
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &nvsim_vm_ops;
	return 0;
}

/* A file's mmap context, at the file's release (nvsim_main.c). */
void nvsim_mmap_ctx_free(struct nvsim_mmap_ctx *ctx)
{
	struct page *page;
	unsigned long idx;

	if (!ctx)
		return;
	xa_for_each(&ctx->pages, idx, page)
		put_page(page);
	xa_destroy(&ctx->pages);
	kfree(ctx);
}

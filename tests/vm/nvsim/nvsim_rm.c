// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim RM core: clients, the object tree, video memory, RM_ALLOC and RM_FREE (docs/
 * nvidia-rm-abi.md §3-§4, §9.2-§9.3). The controls are in nvsim_ctrl.c, the memory the CPU
 * maps (ALLOC_MEMORY, MAP/UNMAP) and VID_HEAP INFO in nvsim_mem.c; all three work on the
 * table here, under nvsim_rm_lock (nvsim.h). Statuses follow nvstatuscodes.h; where the real
 * code path was not verified the closest documented status is used and marked "approx".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "nvsim.h"

#define NVSIM_VIDMEM_ALIGN (2ULL << 20) /* class 0x40 rounds to 2 MiB (§4.2) */
#define NVSIM_MAX_OBJECTS_PER_CLIENT 65536

LIST_HEAD(nvsim_clients);
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
struct nvsim_client *nvsim_client_get(const struct nvsim_caller *c, u32 handle, u32 *status)
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

struct nvsim_obj *nvsim_obj_find(struct nvsim_client *cl, u32 handle)
{
	return xa_load(&cl->objects, handle);
}

/* Drops one reference to an allocation's video memory; the last returns it to the heap. */
void nvsim_mem_put(struct nvsim_gpu *gpu, struct nvsim_mem *mem)
{
	if (--mem->refs)
		return;
	gpu->used_bytes -= mem->bytes;
	kfree(mem);
}

/*
 * NV50_MEMORY_VIRTUAL, as virtmemConstruct_IMPL makes it (src/nvidia/src/kernel/mem_mgr/
 * virtual_mem.c at 580.142): stdmemValidateParams (standard_mem.c) clears LAZY from a SPARSE
 * range, and a range without LAZY or EXTERNALLY_MANAGED gets the page tables of its whole extent
 * reserved in video memory when it is made (vaspaceReserveMempool), until its free; a lazy one
 * gets them only as mappings need them (nvsim maps nothing). Their size is the one measured on the
 * H200 (docs/results/rm-internal-memory-h200.md: 273.0625 MiB for a 128 GiB range, 580.159.04):
 * 8 B per 4 KiB and per 64 KiB page and 16 B per 2 MiB (size/512 + size/8192 + size/131072), in
 * 64 KiB pieces, and 64 KiB more. No room: NV_ERR_NO_MEMORY (approx). The size is the
 * descriptor's, which GET_SURFACE_INFO reports (nvsim_surface.c).
 */
#define NVSIM_PTABLE_CHUNK 0x10000ULL

unsigned long nvsim_ptable_bytes;
module_param_named(ptable_bytes, nvsim_ptable_bytes, ulong, 0444);
MODULE_PARM_DESC(ptable_bytes, "bytes of video memory held as page tables of eager VA ranges");
/* The most ptable_bytes reached since it was last written (a test writes 0 to start a count). */
static unsigned long nvsim_ptable_peak;
module_param_named(ptable_peak, nvsim_ptable_peak, ulong, 0644);
MODULE_PARM_DESC(ptable_peak, "test counter: the most ptable_bytes held since last written");

static u32 nvsim_va_range(struct nvsim_gpu *gpu, struct nvsim_obj *obj,
			  struct nv_memory_allocation_params *mem)
{
	u64 size = mem->size, ptables;
	u32 flags = mem->flags;

	if (flags & NVOS32_ALLOC_FLAGS_SPARSE)
		flags &= ~NVOS32_ALLOC_FLAGS_LAZY;
	obj->va_bytes = size;
	if (!size || (flags & (NVOS32_ALLOC_FLAGS_LAZY | NVOS32_ALLOC_FLAGS_EXTERNALLY_MANAGED)))
		return NV_OK;
	ptables = round_up((size >> 9) + (size >> 13) + (size >> 17), NVSIM_PTABLE_CHUNK) +
		  NVSIM_PTABLE_CHUNK;
	if (ptables > gpu->heap_bytes - gpu->used_bytes)
		return NV_ERR_NO_MEMORY;
	gpu->used_bytes += ptables;
	nvsim_ptable_bytes += ptables;
	WRITE_ONCE(nvsim_ptable_peak, max(READ_ONCE(nvsim_ptable_peak), nvsim_ptable_bytes));
	obj->ptables = ptables;
	return NV_OK;
}

static void nvsim_va_range_release(struct nvsim_obj *obj)
{
	obj->gpu->used_bytes -= obj->ptables;
	nvsim_ptable_bytes -= obj->ptables;
	obj->ptables = 0;
}

/* Release what one object holds; its children are already gone. */
static void nvsim_obj_release(struct nvsim_obj *obj)
{
	struct nvsim_gpu *gpu = obj->gpu;

	if (obj->mem)
		nvsim_mem_put(gpu, obj->mem);
	if (obj->ptables)
		nvsim_va_range_release(obj);
	nvsim_sysmem_bytes -= obj->sysmem;
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
void nvsim_obj_destroy(struct nvsim_obj *root)
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
u32 nvsim_obj_insert(struct nvsim_client *cl, struct nvsim_obj *parent, struct nvsim_obj *obj,
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

/*
 * osIsGpuAccessible (§9.3.2): nv_match_dev_state (nv.c:5762-5776 at 580.142) over current's fd
 * table, i.e. a file whose f_op is the driver's, whose private_data is set and whose GPU is this
 * one. Unlike the lookup of an fd number, the driver does compare f_op here.
 */
static int nvsim_match_gpu(const void *gpu, struct file *f, unsigned int fd)
{
	return f->f_op == &nvsim_fops && f->private_data &&
	       ((struct nvsim_file *)f->private_data)->gpu == gpu;
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
		obj->mem = kzalloc(sizeof(*obj->mem), GFP_KERNEL);
		if (!obj->mem)
			return NV_ERR_NO_MEMORY;
		obj->mem->refs = 1;
		obj->mem->bytes = size;
		gpu->used_bytes += size;
		obj->vidmem = size;
		prm->mem.size = size; /* in/out: the size actually allocated */
		return NV_OK;
	case NV01_MEMORY_SYSTEM:
		/*
		 * sysmemConstruct_IMPL (src/nvidia/src/kernel/mem_mgr/system_mem.c): size 0 is
		 * refused, the size allocated is written back. The pages come from nv_alloc_pages
		 * -> nv_alloc_system_pages (kernel-open/nvidia/nv.c, nv-vm.c) with GFP_KERNEL and
		 * no __GFP_ACCOUNT: kernel memory no process and no memory cgroup is charged for.
		 * nvsim counts it (nvsim_sysmem_bytes) and allocates nothing.
		 */
		if (!gpu)
			return NV_ERR_INVALID_OBJECT_PARENT;
		if (!prm->mem.size)
			return NV_ERR_INVALID_ARGUMENT;
		size = PAGE_ALIGN(prm->mem.size);
		if (size < prm->mem.size)
			return NV_ERR_NO_MEMORY; /* approx */
		nvsim_sysmem_bytes += size;
		obj->sysmem = size;
		prm->mem.size = size;
		return NV_OK;
	case NV50_MEMORY_VIRTUAL: /* a VA reservation: page tables only when eager */
		return gpu ? nvsim_va_range(gpu, obj, &prm->mem) : NV_ERR_INVALID_OBJECT_PARENT;
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
	if (obj->mem)
		nvsim_mem_put(obj->gpu, obj->mem);
	if (obj->ptables)
		nvsim_va_range_release(obj);
	nvsim_sysmem_bytes -= obj->sysmem;
	if (obj->tsg)
		nvsim_sched_tsg_destroy(obj->gpu, obj->tsg);
	if (NVSIM_IS_CHANNEL_CLASS(obj->hclass) && parent && parent->tsg)
		nvsim_sched_channels(obj->gpu, parent->tsg, -1, 0);
}

/*
 * NVOS32 ALLOC_SIZE, as rmapi_deprecated_vidheapctrl.c does it in 580
 * (_nvos32FunctionAllocSize -> _rmVidHeapControlAllocCommon): an RM_ALLOC under hObjectParent of
 * NV50_MEMORY_VIRTUAL (flags VIRTUAL), NV01_MEMORY_LOCAL_USER (attr LOCATION VIDMEM) or
 * NV01_MEMORY_SYSTEM, whose handle is the caller's hMemory only with
 * NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED: otherwise "RmAlloc will generate a handle when
 * hMemory = 0". The handle and the size allocated are copied back into the struct. Called
 * under nvsim_rm_lock; returns the status.
 */
u32 nvsim_rm_vid_heap_alloc_size(const struct nvsim_caller *c, struct nvsim_client *cl,
				 struct nvsim_obj *dev, struct nvos32 *p)
{
	union nvsim_class_params prm = {};
	u32 flags, attr, handle, status;
	struct nvsim_obj *obj;
	u64 size;

	memcpy(&handle, p->data + NVOS32_ALLOCSIZE_HMEMORY_DOFF, sizeof(handle));
	memcpy(&flags, p->data + NVOS32_ALLOCSIZE_FLAGS_DOFF, sizeof(flags));
	memcpy(&attr, p->data + NVOS32_ALLOCSIZE_ATTR_DOFF, sizeof(attr));
	memcpy(&size, p->data + NVOS32_ALLOCSIZE_SIZE_DOFF, sizeof(size));
	if (!(flags & NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED))
		handle = 0;
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		return NV_ERR_NO_MEMORY;
	if (flags & NVOS32_ALLOC_FLAGS_VIRTUAL)
		obj->hclass = NV50_MEMORY_VIRTUAL;
	else if (NVOS32_ATTR_LOCATION(attr) == 0) /* VIDMEM */
		obj->hclass = NV01_MEMORY_LOCAL_USER;
	else
		obj->hclass = NV01_MEMORY_SYSTEM;
	prm.mem.size = size;
	prm.mem.flags = flags; /* the range's LAZY and SPARSE (nvsim_va_range) */
	status = nvsim_alloc_class(c, cl, dev, obj, &prm);
	if (status == NV_OK) {
		status = nvsim_obj_insert(cl, dev, obj, handle);
		if (status != NV_OK)
			nvsim_alloc_class_undo(dev, obj);
	}
	if (status != NV_OK) {
		kfree(obj);
		return status;
	}
	memcpy(p->data + NVOS32_ALLOCSIZE_HMEMORY_DOFF, &obj->handle, sizeof(obj->handle));
	if (obj->vidmem || obj->sysmem)
		memcpy(p->data + NVOS32_ALLOCSIZE_SIZE_DOFF, &prm.mem.size, sizeof(prm.mem.size));
	return NV_OK;
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

// SPDX-License-Identifier: GPL-2.0
/*
 * nvsim: objects shared between clients, as the 580 driver shares them (open-gpu-kernel-modules,
 * branch 580):
 *
 *   RM_DUP_OBJECT (NVOS55)  src/nvidia/src/kernel/rmapi/sharing.c _RmDupObject ->
 *                           resserv rs_client.c clientCopyResource_IMPL: a user client may dup
 *                           another client's object only if a share policy grants
 *                           RS_ACCESS_DUP_OBJECT; the default policy (sharing.c
 *                           serverInitGlobalSharePolicies) is RS_SHARE_TYPE_PID, the same
 *                           process. A Memory dup refers to the same memory descriptor
 *                           (mem_mgr/mem.c memCopyConstruct_IMPL: memdescAddRef), so the memory
 *                           lives while any dup does.
 *   RM_SHARE (NVOS57)       sharing.c rmapiShare -> rs_server.c serverShareResourceAccess: adds
 *                           a policy to the object (ALL, CLIENT target, PID target; REVOKE
 *                           removes it).
 *   export fds              arch/nvalloc/unix/src/os.c cliresCtrlCmdOsUnixExportObjectsToFd_IMPL,
 *                           ...ImportObjectsFromFd_IMPL, ...GetExportObjectInfo_IMPL and
 *                           arch/nvalloc/unix/src/rmobjexportimport.c RmExportObject /
 *                           RmImportObject: a ctl file (nv_get_file_private(fd, NV_TRUE)) gets an
 *                           array of export handles; exporting dups each object into the
 *                           driver's own export client (hObjExportRmClient), importing dups it
 *                           from there into the caller's client. The export client's dups go
 *                           when the export fd is closed (nv_free_file_private ->
 *                           RmFreeObjExportHandle), so an exported allocation outlives every
 *                           user handle of it until then.
 *
 * Simplified, marked "approx" where it matters: the export client keeps its dups under itself,
 * not under a device and subdevice of its own; only Memory classes can be duped (resCanCopy);
 * the MIG instance is always none. nvsim_rm_lock held throughout (nvsim.h).
 */
#include <linux/file.h>
#include <linux/slab.h>

#include "nvsim.h"

#define NV_MAX_DEVICES 32

/* The driver's export client: never on nvsim_clients, so no user call can name it. */
static struct nvsim_client *nvsim_export_client;

static bool nvsim_is_memory_class(u32 hclass)
{
	switch (hclass) {
	case NV01_MEMORY_LOCAL_USER:
	case NV01_MEMORY_SYSTEM:
	case NV01_MEMORY_SYSTEM_OS_DESCRIPTOR:
	case NV01_MEMORY_SYSTEM_DYNAMIC:
	case NV50_MEMORY_VIRTUAL:
		return true;
	default:
		return false;
	}
}

/* rsAccessCheckRights for RS_ACCESS_DUP_OBJECT: the object's policies, then the default. */
static bool nvsim_may_dup(const struct nvsim_obj *src, const struct nvsim_client *dst)
{
	return src->client == dst || src->share_all || src->share_client == dst->handle ||
	       (src->share_pid && src->share_pid == dst->pid) || src->client->pid == dst->pid;
}

/*
 * A dup of @src in @dst under @parent (NULL: the client itself, the export client's way),
 * handle *@handle (0: generated; written back). @privileged: an RM-internal dup
 * (RS_PRIV_LEVEL_KERNEL: no share check).
 */
static u32 nvsim_dup(struct nvsim_client *dst, struct nvsim_obj *parent, u32 *handle,
		     struct nvsim_obj *src, bool privileged)
{
	struct nvsim_obj *obj;
	u32 status;

	if (!privileged && !nvsim_may_dup(src, dst))
		return NV_ERR_INSUFFICIENT_PERMISSIONS;
	if (!nvsim_is_memory_class(src->hclass))
		return NV_ERR_NOT_SUPPORTED; /* approx: resCanCopy is false for the class */
	/* A Memory object lives under a device or subdevice of its own GPU. */
	if (parent ? parent->gpu != src->gpu : dst != nvsim_export_client)
		return NV_ERR_INVALID_OBJECT_PARENT;
	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		return NV_ERR_NO_MEMORY;
	obj->hclass = src->hclass;
	obj->gpu = src->gpu;
	obj->vidmem = src->vidmem;
	obj->va_bytes = src->va_bytes; /* the descriptor, not the page tables */
	obj->mem = src->mem;
	status = nvsim_obj_insert(dst, parent, obj, *handle);
	if (status != NV_OK) {
		kfree(obj);
		return status;
	}
	if (obj->mem)
		obj->mem->refs++;
	*handle = obj->handle;
	return NV_OK;
}

void nvsim_rm_dup(const struct nvsim_caller *c, struct nvos55 *p)
{
	struct nvsim_obj *parent = NULL, *src;
	struct nvsim_client *dst, *srccl;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	dst = nvsim_client_get(c, p->hClient, &status);
	if (!dst)
		goto out;
	if (p->hParent != p->hClient) {
		parent = nvsim_obj_find(dst, p->hParent);
		status = NV_ERR_INVALID_OBJECT_PARENT;
		if (!parent)
			goto out;
	}
	/* The source client is looked up server-wide: it need not be the caller's. */
	srccl = nvsim_client_get(&(struct nvsim_caller){ .kernel = true }, p->hClientSrc, &status);
	if (!srccl)
		goto out;
	src = nvsim_obj_find(srccl, p->hObjectSrc);
	status = NV_ERR_OBJECT_NOT_FOUND;
	if (!src)
		goto out;
	status = nvsim_dup(dst, parent, &p->hObject, src, c->kernel);
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

void nvsim_rm_share(const struct nvsim_caller *c, struct nvos57 *p)
{
	const struct rs_share_policy *sp = &p->sharePolicy;
	bool revoke = sp->action & RS_SHARE_ACTION_FLAG_REVOKE;
	struct nvsim_client *cl;
	struct nvsim_obj *obj;
	u32 status;

	mutex_lock(&nvsim_rm_lock);
	cl = nvsim_client_get(c, p->hClient, &status);
	if (!cl)
		goto out;
	obj = nvsim_obj_find(cl, p->hObject);
	status = NV_ERR_OBJECT_NOT_FOUND;
	if (!obj)
		goto out;
	status = NV_OK;
	switch (sp->type) {
	case RS_SHARE_TYPE_ALL:
		obj->share_all = !revoke;
		break;
	case RS_SHARE_TYPE_CLIENT:
		obj->share_client = revoke ? 0 : sp->target;
		break;
	case RS_SHARE_TYPE_PID:
		obj->share_pid = revoke ? 0 : sp->target;
		break;
	default:
		break; /* approx: the other types grant nothing nvsim models */
	}
out:
	p->status = status;
	mutex_unlock(&nvsim_rm_lock);
}

/* ---- export fds --------------------------------------------------------------------------- */

static void nvsim_export_handle_free(u32 handle)
{
	struct nvsim_obj *obj;

	if (handle && nvsim_export_client) {
		obj = nvsim_obj_find(nvsim_export_client, handle);
		if (obj)
			nvsim_obj_destroy(obj);
	}
}

/* RmExportObject: a dup of the caller's object in the export client. */
static u32 nvsim_export_object(struct nvsim_client *cl, u32 hobject, u32 *export, u32 *device)
{
	struct nvsim_obj *src = nvsim_obj_find(cl, hobject);

	if (!src)
		return NV_ERR_OBJECT_NOT_FOUND;
	if (!nvsim_export_client) {
		nvsim_export_client = kzalloc(sizeof(*nvsim_export_client), GFP_KERNEL);
		if (!nvsim_export_client)
			return NV_ERR_NO_MEMORY;
		xa_init(&nvsim_export_client->objects);
		INIT_LIST_HEAD(&nvsim_export_client->children);
		nvsim_export_client->handle = 0xcafe0000;
		nvsim_export_client->next_handle = 0xcafe0001;
	}
	*device = src->gpu ? src->gpu->minor : NV_MAX_DEVICES;
	*export = 0;
	return nvsim_dup(nvsim_export_client, NULL, export, src, true);
}

u32 nvsim_internal_dup(u32 hclient, u32 hobject, u32 *handle)
{
	const struct nvsim_caller kernel = { .kernel = true };
	struct nvsim_client *cl;
	u32 status, device;

	cl = nvsim_client_get(&kernel, hclient, &status);
	if (!cl)
		return status;
	/* nv_gpu_ops.c nvGpuOpsDupMemory: RS_PRIV_LEVEL_USER_ROOT rejected for kernel dups of
	 * another process's client (approx: the client's pid must be the caller's). */
	if (cl->pid != task_tgid_nr(current))
		return NV_ERR_INSUFFICIENT_PERMISSIONS;
	return nvsim_export_object(cl, hobject, handle, &device);
}

void nvsim_internal_dup_free(u32 handle)
{
	nvsim_export_handle_free(handle);
}

/* nv_get_file_private(fd, NV_TRUE): a ctl file of the driver in the caller's table. */
static struct nvsim_file *nvsim_export_file(s32 fd, struct file **filp)
{
	u32 status;

	return fd < 0 ? NULL : nvsim_fget_rm_file(fd, true, filp, &status);
}

u32 nvsim_ctrl_export_objects(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv0000_export_objects_to_fd_params *p = buf;
	u32 status = NV_ERR_INVALID_PARAMETER, device, handles[64], *h = handles;
	bool set_up = false;
	struct nvsim_file *nvf;
	struct nvsim_obj *dev;
	struct file *filp;
	unsigned int i;

	nvf = nvsim_export_file(p->fd, &filp);
	if (!nvf)
		return NV_ERR_INVALID_PARAMETER;
	if (!nvf->export_handles) {
		/* _initializeExportObjectFd: maxObjects, the device's instance, metadata. */
		if (!p->maxObjects)
			goto out;
		device = NV_MAX_DEVICES;
		if (p->hDevice) {
			dev = nvsim_obj_find(x->cl, p->hDevice);
			status = NV_ERR_OBJECT_NOT_FOUND;
			if (!dev)
				goto out;
			status = NV_ERR_INVALID_PARAMETER;
			if (dev->hclass != NV01_DEVICE_0)
				goto out;
			device = dev->gpu->minor;
		}
		status = NV_ERR_NO_MEMORY;
		nvf->export_handles = kcalloc(p->maxObjects, sizeof(u32), GFP_KERNEL);
		if (!nvf->export_handles)
			goto out;
		nvf->export_max = p->maxObjects;
		nvf->export_device = device;
		memcpy(nvf->export_metadata, p->metadata, sizeof(nvf->export_metadata));
		set_up = true;
	}
	status = NV_ERR_INVALID_PARAMETER;
	if (p->numObjects > NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS)
		goto out_setup;
	status = NV_ERR_OUT_OF_RANGE;
	if ((u32)p->numObjects + p->index > nvf->export_max)
		goto out_setup;
	status = NV_ERR_NO_MEMORY;
	if (p->numObjects > ARRAY_SIZE(handles))
		h = kcalloc(p->numObjects, sizeof(u32), GFP_KERNEL);
	if (!h)
		goto out_setup;
	memset(h, 0, p->numObjects * sizeof(u32));
	status = NV_OK;
	for (i = 0; i < p->numObjects && status == NV_OK; i++) {
		if (!p->objects[i])
			continue;
		status = nvsim_export_object(x->cl, p->objects[i], &h[i], &device);
		if (status == NV_OK && device != nvf->export_device)
			status = NV_ERR_INVALID_PARAMETER;
	}
	for (i = 0; i < p->numObjects; i++) {
		if (status != NV_OK) {
			nvsim_export_handle_free(h[i]);
			continue;
		}
		/* A handle already at this index is replaced (and so freed). */
		nvsim_export_handle_free(nvf->export_handles[p->index + i]);
		nvf->export_handles[p->index + i] = h[i];
	}
	if (h != handles)
		kfree(h);
out_setup:
	if (status != NV_OK && set_up) {
		kfree(nvf->export_handles);
		nvf->export_handles = NULL;
		nvf->export_max = 0;
	}
out:
	fput(filp);
	return status;
}

u32 nvsim_ctrl_import_objects(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv0000_import_objects_from_fd_params *p = buf;
	struct nvsim_obj *parent = NULL, *src;
	u32 status = NV_ERR_INVALID_PARAMETER, h;
	struct nvsim_file *nvf;
	struct file *filp;
	unsigned int i = 0;

	nvf = nvsim_export_file(p->fd, &filp);
	if (!nvf)
		return NV_ERR_INVALID_PARAMETER;
	if (!nvf->export_handles || p->numObjects > NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS)
		goto out;
	status = NV_ERR_OUT_OF_RANGE;
	if ((u32)p->numObjects + p->index > nvf->export_max)
		goto out;
	if (p->hParent != x->cl->handle)
		parent = nvsim_obj_find(x->cl, p->hParent);
	status = NV_OK;
	for (i = 0; i < p->numObjects; i++) {
		h = nvf->export_handles[p->index + i];
		if (!h) {
			p->objectTypes[i] = NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_NONE;
			continue;
		}
		/* RmImportObject: the export handle must still name an object. */
		src = nvsim_export_client ? nvsim_obj_find(nvsim_export_client, h) : NULL;
		status = NV_ERR_INVALID_ARGUMENT;
		if (!src)
			break;
		p->objectTypes[i] = src->hclass == NV01_MEMORY_LOCAL_USER
					    ? NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_VIDMEM
					    : NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECT_TYPE_SYSMEM;
		status = parent ? nvsim_dup(x->cl, parent, &p->objects[i], src, true)
				: NV_ERR_INVALID_OBJECT_PARENT;
		if (status != NV_OK)
			break;
	}
	/* On failure the objects imported before the failing one are freed again. */
	while (status != NV_OK && i-- > 0) {
		if (!nvf->export_handles[p->index + i])
			continue;
		src = nvsim_obj_find(x->cl, p->objects[i]);
		if (src)
			nvsim_obj_destroy(src);
	}
out:
	fput(filp);
	return status;
}

u32 nvsim_ctrl_export_info(struct nvsim_ctrl_ctx *x, void *buf)
{
	struct nv0000_get_export_object_info_params *p = buf;
	u32 status = NV_ERR_INVALID_PARAMETER;
	struct nvsim_file *nvf;
	struct file *filp;

	nvf = nvsim_export_file(p->fd, &filp);
	if (!nvf)
		return NV_ERR_INVALID_PARAMETER;
	if (nvf->export_handles) {
		p->maxObjects = nvf->export_max;
		p->deviceInstance = nvf->export_device;
		p->gpuInstanceId = U32_MAX; /* no MIG */
		memcpy(p->metadata, nvf->export_metadata, sizeof(p->metadata));
		status = NV_OK;
	}
	fput(filp);
	return status;
}

/* nv_free_file_private: an export fd's dups go with the file. */
void nvsim_export_release(struct nvsim_file *nvf)
{
	unsigned int i;

	if (!nvf->export_handles)
		return;
	mutex_lock(&nvsim_rm_lock);
	for (i = 0; i < nvf->export_max; i++)
		nvsim_export_handle_free(nvf->export_handles[i]);
	kfree(nvf->export_handles);
	nvf->export_handles = NULL;
	mutex_unlock(&nvsim_rm_lock);
}

void nvsim_share_exit(void)
{
	if (!nvsim_export_client)
		return;
	while (!list_empty(&nvsim_export_client->children))
		nvsim_obj_destroy(list_first_entry(&nvsim_export_client->children, struct nvsim_obj,
						   sibling));
	xa_destroy(&nvsim_export_client->objects);
	kfree(nvsim_export_client);
	nvsim_export_client = NULL;
}

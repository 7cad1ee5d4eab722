// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * export.c - export fds keep their objects' charge (issue 17, F3;
 * docs/security/kernel-lifetime-compute.md).
 *
 * NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD dups each named object into
 * the driver's export client and the export fd (a ctl file) holds the dup
 * until its last close (arch/nvalloc/unix/src/os.c
 * cliresCtrlCmdOsUnixExportObjectsToFd_IMPL, rmobjexportimport.c
 * RmExportObject): the memory outlives the tenant's RM_FREE of its handle.
 * So the core keeps, per exported object, a hold owned by the export file: a
 * dup of the object (objects.c passes a freed object's charge to a surviving
 * dup), not in the slot's table. IMPORT_OBJECTS_FROM_FD dups the export
 * objects into the importer's client: the imported handles are dups of the
 * holds. When the export file closes its holds go, and their charge passes to
 * an import or is refunded (vcore_export_holds_free_locked, from
 * vcore_file_close, which the kernel host calls after the driver released
 * the real file, kmod/file_release.c).
 *
 * The host names the export file (vcore_call_set_fd_file); without it (a
 * host that cannot tell, an fd of another process) nothing is held, as before.
 */
#include "vcore_internal.h"
#include "abi/ctrl.h"
#include "abi/nvstatus.h"
#include "rm_alloc_internal.h"

#define EXPORT_OBJECTS_OFF                                                     \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS, objects)
#define EXPORT_NUM_OFF                                                         \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS, numObjects)
#define EXPORT_INDEX_OFF                                                       \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_PARAMS, index)
#define IMPORT_PARENT_OFF                                                      \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS, hParent)
#define IMPORT_OBJECTS_OFF                                                     \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS, objects)
#define IMPORT_NUM_OFF                                                         \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS, numObjects)
#define IMPORT_INDEX_OFF                                                       \
	VCORE_OFF(NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_FROM_FD_PARAMS, index)

static const vcore_u8 *params_of(const struct vcore_call *call)
{
	return call->bufs[call->params_buf].priv;
}

/* Preallocate @n records as a chain on call->new_obj (freed by call_free
 * when post does not take them): post cannot refuse what the driver did. */
static enum vcore_verdict prealloc_chain(struct vcore_call *call, vcore_u32 n)
{
	struct vcore_slot *slot = call->slot;

	while (n--) {
		struct vcore_obj *o = slot->ops->zalloc(slot->priv, sizeof(*o));

		if (!o)
			return vcore_refuse_errno(
				call, -VCORE_ENOMEM,
				"no memory for export records");
		o->pid = call->ctx.pid;
		o->hnext = call->new_obj;
		call->new_obj = o;
	}
	return VCORE_FORWARD;
}

static struct vcore_obj *take_record(struct vcore_call *call)
{
	struct vcore_obj *o = call->new_obj;

	if (o) {
		call->new_obj = o->hnext;
		o->hnext = VCORE_NULL;
	}
	return o;
}

/* Common pre step: the fd field, the params' private copy, @n records. */
static enum vcore_verdict fd_control_pre(struct vcore_call *call,
					 vcore_u32 num_off, vcore_u32 max,
					 vcore_ctrl_post_fn post)
{
	enum vcore_verdict v = vcore_ctrl_unix_fd_at0(call);
	vcore_u32 n;

	if (v != VCORE_FORWARD || call->params_buf < 0 ||
	    call->bufs[call->params_buf].len < num_off + 4)
		return v;
	n = *(const vcore_u16 *)(params_of(call) + num_off);
	if (n > max)
		return v; /* the driver refuses it (NV_ERR_INVALID_PARAMETER) */
	v = prealloc_chain(call, n);
	if (v != VCORE_FORWARD)
		return v;
	call->post = VCORE_POST_CTRL;
	call->ctrl_post = post;
	return VCORE_FORWARD;
}

/* The export file the host named, if it is still open in this slot. */
static struct vcore_file *export_file_locked(struct vcore_call *call)
{
	struct vcore_file *want = call->fd_files[0], *f;

	if (!want || !call->n_fds)
		return VCORE_NULL;
	for (f = call->slot->files; f; f = f->next)
		if (f == want)
			return f;
	return VCORE_NULL;
}

/* Unlink and return @file's hold at @index, or NULL. */
static struct vcore_obj *unlink_hold(struct vcore_file *file, vcore_u32 index)
{
	struct vcore_obj **pp, *h;

	for (pp = &file->holds; (h = *pp) != VCORE_NULL; pp = &h->hnext) {
		if (h->hold_index == index) {
			*pp = h->hnext;
			return h;
		}
	}
	return VCORE_NULL;
}

static struct vcore_obj *find_hold(struct vcore_file *file, vcore_u32 index)
{
	struct vcore_obj *h;

	for (h = file->holds; h; h = h->hnext)
		if (h->hold_index == index)
			return h;
	return VCORE_NULL;
}

/*
 * Each export slot index @index+i now names objects[i] (the driver replaces,
 * and so frees, what an index held before; 0 leaves the index empty). The
 * hold's charge starts at 0: the object keeps its own until it is freed.
 */
static int export_post(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	const vcore_u8 *prm = params_of(call);
	vcore_u32 h_client = vcore_rd32(call->argbuf, 0), i, n, index;
	struct vcore_file *efile;

	if (!vcore_reply_ok(call))
		return 0;
	n = *(const vcore_u16 *)(prm + EXPORT_NUM_OFF);
	index = *(const vcore_u16 *)(prm + EXPORT_INDEX_OFF);
	vcore_lock(slot);
	efile = export_file_locked(call);
	for (i = 0; efile && i < n; i++) {
		vcore_u32 h = vcore_rd32(prm, EXPORT_OBJECTS_OFF + 4 * i);
		struct vcore_obj *old = unlink_hold(efile, index + i);
		struct vcore_obj *src =
			h ? vcore_obj_find_locked(slot, h_client, h)
			  : VCORE_NULL;
		struct vcore_obj *hold;

		if (old)
			vcore_obj_drop_hold_locked(slot, old);
		if (!src)
			continue; /* not recorded: nothing charged */
		hold = take_record(call);
		if (!hold)
			break;
		hold->h_client = h_client;
		hold->h_object = h;
		hold->cls = src->cls;
		hold->owner = efile;
		hold->hold_index = index + i;
		hold->dup_src = src;
		slot->n_dups++;
		hold->hnext = efile->holds;
		efile->holds = hold;
	}
	vcore_unlock(slot);
	return 0;
}

enum vcore_verdict vcore_ctrl_unix_export_objects(struct vcore_call *call)
{
	return fd_control_pre(
		call, EXPORT_NUM_OFF,
		NV0000_CTRL_OS_UNIX_EXPORT_OBJECTS_TO_FD_MAX_OBJECTS,
		export_post);
}

/*
 * objects[i] (chosen by the caller, or by the driver when 0: read from the
 * reply) is a dup, under hParent of the caller's client, of what the export
 * file holds at index+i: when the exporter's object and the export file are
 * gone, the charge follows it.
 */
static int import_post(struct vcore_call *call)
{
	struct vcore_slot *slot = call->slot;
	const vcore_u8 *prm = params_of(call);
	vcore_u32 h_client = vcore_rd32(call->argbuf, 0), i, n, index, h;
	vcore_u32 h_parent = vcore_rd32(prm, IMPORT_PARENT_OFF);
	struct vcore_file *efile;

	if (!vcore_reply_ok(call) || !vcore_own_client(call, h_client))
		return 0;
	n = *(const vcore_u16 *)(prm + IMPORT_NUM_OFF);
	index = *(const vcore_u16 *)(prm + IMPORT_INDEX_OFF);
	for (i = 0; i < n; i++) {
		struct vcore_obj *hold, *obj;

		h = vcore_rd32(prm, IMPORT_OBJECTS_OFF + 4 * i);
		if (!h && vcore_user_read(call, &h,
					  call->bufs[call->params_buf].uaddr +
						  IMPORT_OBJECTS_OFF + 4 * i,
					  4))
			continue;
		vcore_lock(slot);
		efile = export_file_locked(call);
		hold = efile ? find_hold(efile, index + i) : VCORE_NULL;
		if (h && hold && !vcore_obj_find_locked(slot, h_client, h) &&
		    vcore_obj_find_locked(slot, h_client, h_client) &&
		    (obj = take_record(call)) != VCORE_NULL) {
			obj->h_client = h_client;
			obj->h_object = h;
			obj->cls = hold->cls;
			obj->dup_src = hold;
			vcore_obj_insert_locked(slot, obj, h_parent,
						call->file);
		}
		vcore_unlock(slot);
	}
	return 0;
}

enum vcore_verdict vcore_ctrl_unix_import_objects(struct vcore_call *call)
{
	return fd_control_pre(
		call, IMPORT_NUM_OFF,
		NV0000_CTRL_OS_UNIX_IMPORT_OBJECTS_TO_FD_MAX_OBJECTS,
		import_post);
}

void vcore_export_holds_free_locked(struct vcore_slot *slot,
				    struct vcore_file *file)
{
	struct vcore_obj *h;

	while ((h = file->holds) != VCORE_NULL) {
		file->holds = h->hnext;
		h->hnext = VCORE_NULL;
		vcore_obj_drop_hold_locked(slot, h);
	}
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Closing the TOCTOU hole on memory charges (docs/nvidia-rm-abi.md §9.5,
 * kmod/core/vcore.h "TOCTOU"). The driver re-reads the allocation's size from
 * user memory after the core checked its private copy, and writes the size it
 * allocated back to user memory: a second thread of the tenant can change
 * either, so neither the request nor the reply can be trusted. After every
 * successful allocation of a charged class the core asks here instead, and
 * this file asks the driver itself, through its in-kernel RM entry (rmops.h):
 * no user memory is read, and the answer is the driver's own record.
 *
 * The query is NV0041_CTRL_CMD_GET_SURFACE_INFO on the new object,
 * with three entries: PHYS_SIZE_LO and _HI (indices 2 and 3, the memory
 * descriptor's size in bytes) and ADDR_SPACE_TYPE (index 9: INVALID 0, a VA
 * range; SYSMEM 1, VIDMEM 2, REGMEM 3, FABRIC 4).
 * One query for both kinds of memory: video memory is charged to the quota,
 * system memory (NV01_MEMORY_SYSTEM, the driver's own pages) to the slot's
 * system memory budget (issue 17, F10: the size a sibling raised and lowered
 * around the call is the descriptor's, never the reply's). Layouts from
 * NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/ctrl/ ctrl0041.h and
 * ctrl0000/ctrl0000client.h; the handler is memCtrlCmdGetSurfaceInfoLvm
 * (src/nvidia/src/kernel/mem_mgr/mem_ctrl.c), available on every Memory
 * subclass (NV01_MEMORY_LOCAL_USER, NV01_MEMORY_SYSTEM, NV_MEMORY_FABRIC, ...).
 * For a kernel caller RM copies the embedded list pointer as kernel memory.
 *
 * When the size is past the quota the core asks for the object to be freed.
 * Through the same entry, on kernel memory (vgpu_trusted_free), but only
 * under a client this slot holds the node-wide claim of: the core accepts an
 * object only under a client whose creation by the caller's file the driver
 * confirmed (kmod/core/rm_alloc_verify.c, vcore_own_client), and the claim
 * keeps any other tenant from taking its handle while the record lives. Any
 * other client (recorded when the driver could not be asked) is freed as
 * before: queued (overquota.c, vgpu_free_queue) and freed through the caller's
 * own real ctl file after vcore_post, where the driver frees only objects of
 * clients bound to that file, with an NVOS00 in user memory.
 *
 * Before the size, the object's existence: the core asks after EVERY
 * successful allocation (not only charged classes), because a sibling thread
 * can rewrite hClass, the VIRTUAL flag, hObjectNew or hRoot between the
 * core's copy and the driver's own copy-in
 * (docs/results/kmod-issue4-tamper.md): the core would then record an uncharged
 * object while the driver made charged memory elsewhere.
 * NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO (ctrl0000client.h, index CLASSID;
 * kmod/core/abi/ctrl.h) on (h_client, h_client) for h_object: the driver does
 * not have the object the core recorded -> -ENOENT, which the core treats as
 * tampering. The class it answers is the core's driver_class op too, for
 * objects that are not memory (vgpu_trusted_driver_class). The handler
 * (cliresCtrlCmdClientGetHandleInfo_IMPL,
 * src/nvidia/src/kernel/rmapi/client_resource.c) fails with the resource
 * server's lookup status (NV_ERR_OBJECT_NOT_FOUND; a missing client is
 * NV_ERR_INVALID_CLIENT before the handler runs).
 *
 * A client free (@h_object == @h_client, @bytes NULL) is asked only when the
 * core found tampering: the client and all under it is freed the same way,
 * and the calling task is killed (SIGKILL, after vcore_post: overquota.c):
 * whatever else it holds dies with its files.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include <linux/moduleparam.h>

#include "core/abi/ctrl.h"
#include "core/abi/nvstatus.h"
#include "core_host.h"
#include "driver_query.h"
#include "rmops.h"

/*
 * Off only to measure what the query costs (the guest suite times allocations
 * with it on and off in one run): without it the charge is read from the
 * reply again, and the race it closes is open.
 */
static bool trusted_charge = true;
module_param(trusted_charge, bool, 0600);
MODULE_PARM_DESC(trusted_charge,
		 "Charge allocations by the driver's own size (default on; "
		 "off reopens the TOCTOU race, for measurement only)");

/*
 * 0 when the driver holds (@h_client, @h_object), and its class in *@cls
 * (the resource's externalClassId: the hClass of the allocation the driver
 * ran, cliresCtrlCmdClientGetHandleInfo_IMPL); -ENOENT when it does not.
 */
static int vgpu_object_exists(u32 h_client, u32 h_object, u32 *cls)
{
	NV0000_CTRL_CLIENT_GET_HANDLE_INFO_PARAMS p = {
		.hObject = h_object,
		.index = NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_CLASSID,
	};
	u32 status;
	int err;

	err = vgpu_rm_control(h_client, h_client,
			      NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO, &p,
			      sizeof(p), &status);
	if (err)
		return err;
	switch (status) {
	case 0:
		*cls = (u32)p.data;
		return 0;
	case NV_ERR_INVALID_CLIENT:
	case NV_ERR_INVALID_OBJECT_HANDLE:
	case NV_ERR_OBJECT_NOT_FOUND:
		return -ENOENT;
	default:
		return -EIO; /* the driver cannot say: not proof of tampering */
	}
}

/*
 * Client handles (the core's client ops, kmod/core/vcore.h;
 * docs/results/kmod-issue4-tamper.md). RM keeps one client namespace for the
 * whole driver, and a client alloc with hObjectNew 0 gets a handle RM
 * generates: the core asks for ours instead, so that the handle is known before
 * the call rather than read from a reply a sibling thread can rewrite. The
 * shipped driver honours a caller's client handle as given, refusing only a
 * live duplicate (resserv rs_server.c, serverAllocClient under
 * RS_COMPATABILITY_MODE). Ours come from a range no RM generator uses
 * (resserv.h: RS_CLIENT_HANDLE_BASE 0xC1D00000 for the ones it picks for users,
 * RS_CLIENT_INTERNAL_HANDLE_BASE 0xC1E00000 for its own internal clients, some
 * at fixed handles re-made when the GPU state is rebuilt, RS_DOMAIN_HANDLE_BASE
 * 0xD0D00000, RS_CLIENT_VF_HANDLE_BASE 0xE0000000 and up; each range 2^20
 * handles), so that no handle of ours can stand in the way of a client RM makes
 * for itself. vgpu_client_claims maps each claimed handle to the claiming
 * slot's filter
 * (@priv): a handle a slot claimed or still records cannot be claimed by
 * another, so no tenant can create a client under a handle that another
 * slot's table names, and a record names a client its own call created.
 */
static DEFINE_XARRAY(vgpu_client_claims);
static atomic_t vgpu_client_seq = ATOMIC_INIT(0);

#define VGPU_CLIENT_HANDLE_BASE 0xcb000000u
#define VGPU_CLIENT_HANDLE_MASK 0x000fffffu
#define VGPU_CLIENT_CLAIM_TRIES 16

/*
 * 0 when the driver has client @h, -ENOENT when it has not, another errno
 * when it cannot say. A missing client fails any control with
 * NV_ERR_INVALID_CLIENT before a handler runs; any answer of the handler
 * itself (the client as its own object: NV_OK, or not found) means the
 * client resolved.
 */
static int vgpu_client_exists(u32 h)
{
	NV0000_CTRL_CLIENT_GET_HANDLE_INFO_PARAMS p = {
		.hObject = h,
		.index = NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO_INDEX_CLASSID,
	};
	u32 status;
	int err;

	err = vgpu_rm_control(h, h, NV0000_CTRL_CMD_CLIENT_GET_HANDLE_INFO, &p,
			      sizeof(p), &status);
	if (err)
		return err;
	switch (status) {
	case NV_ERR_INVALID_CLIENT:
		return -ENOENT;
	case 0:
	case NV_ERR_INVALID_OBJECT_HANDLE:
	case NV_ERR_OBJECT_NOT_FOUND:
		return 0;
	default:
		return -EIO;
	}
}

int vgpu_trusted_client_claim(void *priv, vcore_u32 *h_client)
{
	bool pick = !*h_client;
	int tries, err;

	for (tries = 0; tries < VGPU_CLIENT_CLAIM_TRIES; tries++) {
		u32 h = pick ? VGPU_CLIENT_HANDLE_BASE |
					((u32)atomic_inc_return(
						 &vgpu_client_seq) &
					 VGPU_CLIENT_HANDLE_MASK)
			     : *h_client;

		err = xa_insert(&vgpu_client_claims, h, priv, GFP_KERNEL);
		if (err == -EBUSY) {
			if (pick)
				continue;
			return -EEXIST; /* another call or slot holds it */
		}
		if (err)
			return err;
		err = vgpu_client_exists(h);
		if (err == -ENOENT) {
			*h_client = h;
			return 0;
		}
		xa_cmpxchg(&vgpu_client_claims, h, priv, NULL, 0);
		if (err)
			return err; /* the driver cannot say */
		if (!pick)
			return -EEXIST; /* the driver has it (not ours) */
	}
	return -EAGAIN;
}

/* Under the core's slot lock: xa_cmpxchg to NULL allocates nothing. */
void vgpu_trusted_client_release(void *priv, vcore_u32 h_client)
{
	xa_cmpxchg(&vgpu_client_claims, h_client, priv, NULL, 0);
}

int vgpu_trusted_driver_has(void *priv, vcore_u32 h_client, vcore_u32 h_object)
{
	u32 cls;

	if (h_object == h_client)
		return vgpu_client_exists(h_client);
	return vgpu_object_exists(h_client, h_object, &cls);
}

/*
 * A free the core asks for on the caller's behalf (an allocation past the
 * quota, or the clients of a tampered call). Through the in-kernel entry,
 * on kernel memory: nothing a sibling thread can rewrite between the
 * request and the driver's read (docs/results/kmod-issue4-tamper.md: the NVOS00
 * of the old path sat in a page of the caller's mm). The in-kernel entry frees
 * any tenant's object, so only under a client this slot holds the claim of: one
 * whose creation by this slot's call the driver confirmed, whose handle no
 * other tenant can have taken since (the claim lives as long as the core's
 * record). -EAGAIN when the client is not such a one (the driver could not be
 * asked when it was recorded): the caller then frees through the caller's real
 * ctl file (overquota.c), where the driver frees only clients bound to it.
 */
static int vgpu_trusted_free(void *priv, u32 h_client, u32 h_parent,
			     u32 h_object)
{
	u32 status;
	int err;

	if (xa_load(&vgpu_client_claims, h_client) != priv)
		return -EAGAIN;
	err = vgpu_rm_free(h_client, h_parent, h_object, &status);
	if (err)
		return err;
	if (status) {
		pr_warn_ratelimited("object 0x%x/0x%x: the driver refused the "
				    "free (0x%x)\n",
				    h_client, h_object, status);
		return -EIO;
	}
	return 0;
}

/* Module exit: every slot is gone, and with it every claim. */
void vgpu_trusted_exit(void)
{
	WARN_ON_ONCE(!xa_empty(&vgpu_client_claims));
	xa_destroy(&vgpu_client_claims);
}

int vgpu_trusted_driver_memory(void *priv, vcore_u32 h_client,
			       vcore_u32 h_parent, vcore_u32 h_object,
			       struct vcore_driver_mem *bytes)
{
	/*
	 * The size in bytes, as two halves: PHYS_SIZE (4 KiB units, 32 bits)
	 * is NV_ERR_OUT_OF_RANGE from 16 TiB on (mem_ctrl.c), a size a VA
	 * range can have (issue 17 F11.1).
	 */
	NV0041_CTRL_SURFACE_INFO list[3] = {
		{.index = NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_LO},
		{.index = NV0041_CTRL_SURFACE_INFO_INDEX_PHYS_SIZE_HI},
		{.index = NV0041_CTRL_SURFACE_INFO_INDEX_ADDR_SPACE_TYPE},
	};
	u64 size;
	NV0041_CTRL_GET_SURFACE_INFO_PARAMS p = {
		.surfaceInfoListSize = ARRAY_SIZE(list),
		.surfaceInfoList = (u64)(uintptr_t)list,
	};
	u32 status;
	int err;

	if (!bytes && h_object == h_client) {
		pr_warn_ratelimited("pid %d (%s): RM allocation parameters "
				    "changed during the call: client 0x%x to "
				    "be freed, process to be killed\n",
				    task_pid_nr(current), current->comm,
				    h_client);
		if (!h_client)
			return vgpu_free_queue(0, 0, 0, true); /* only kill */
		/* The kill waits for vcore_post's end (overquota.c). */
		err = vgpu_trusted_free(priv, h_client, h_client, h_client);
		if (err != -EAGAIN) {
			vgpu_free_queue(0, 0, 0, true);
			return err;
		}
		return vgpu_free_queue(h_client, h_client, h_client, true);
	}
	if (!bytes) { /* past the quota */
		err = vgpu_trusted_free(priv, h_client, h_parent, h_object);
		if (err != -EAGAIN)
			return err;
		return vgpu_free_queue(h_client, h_parent, h_object, false);
	}
	if (!READ_ONCE(trusted_charge))
		return -EOPNOTSUPP;
	*bytes = (struct vcore_driver_mem){};
	err = vgpu_object_exists(h_client, h_object, &bytes->cls);
	if (err)
		return err;
	err = vgpu_rm_control(h_client, h_object,
			      NV0041_CTRL_CMD_GET_SURFACE_INFO, &p, sizeof(p),
			      &status);
	if (err)
		return err;
	if (status) {
		pr_debug("surface info of 0x%x/0x%x: status 0x%x\n", h_client,
			 h_object, status);
		return -EIO;
	}
	size = (u64)list[1].data << 32 | list[0].data;
	switch (list[2].data) {
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_VIDMEM:
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_FABRIC:
		bytes->gpu = size;
		break;
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_SYSMEM:
		bytes->sys = size;
		break;
	case NV0000_CTRL_CMD_CLIENT_GET_ADDR_SPACE_TYPE_INVALID:
		/* A VA range's ADDR_VIRTUAL descriptor of its size
		 * (virtual_mem.c): the core charges its page tables. */
		bytes->va = size;
		break;
	default:
		break; /* register space and the rest: no memory of ours */
	}
	return 0;
}

/*
 * The class of any object, memory or not (the core's driver_class op): a
 * sibling thread can rewrite hClass into a TSG, a channel or a VA space,
 * which GET_SURFACE_INFO does not answer for (memCtrlCmdGetSurfaceInfoLvm is
 * a Memory control), so the size query above cannot name them (issue 17,
 * F11.1). GET_HANDLE_INFO's CLASSID is the resource's externalClassId: the
 * hClass of the allocation the driver ran (resserv sets it from the
 * allocation's parameters, cliresCtrlCmdClientGetHandleInfo_IMPL reads it).
 * Off with trusted_charge, like the size: that switch measures what asking
 * the driver costs.
 */
int vgpu_trusted_driver_class(void *priv, vcore_u32 h_client,
			      vcore_u32 h_object, vcore_u32 *cls)
{
	if (!READ_ONCE(trusted_charge))
		return -EOPNOTSUPP;
	return vgpu_object_exists(h_client, h_object, cls);
}

/*
 * A control the core checked, issued with the core's private copy of its
 * params through the driver's in-kernel entry (vcore.h, control_copy): the
 * driver reads no user memory, so a sibling thread cannot change what it
 * runs after the check (issue 17, F7). The core asks only for objects it
 * recorded under the caller's own client.
 */
int vgpu_trusted_control_copy(void *priv, vcore_u32 h_client,
			      vcore_u32 h_object, vcore_u32 cmd, void *params,
			      vcore_u32 size, vcore_u32 *status)
{
	return vgpu_rm_control(h_client, h_object, cmd, params, size, status);
}

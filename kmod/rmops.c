// SPDX-License-Identifier: GPL-2.0
/*
 * The in-kernel RM client (rmops.h): nvidia_get_rm_ops() resolved at run time,
 * the version handshake, one nvidia_stack_t per call.
 *
 * Layouts from NVIDIA/open-gpu-kernel-modules (580 branch):
 * kernel-open/common/inc/nv-modeset-interface.h (nvidia_modeset_rm_ops_t),
 * kernel-open/common/inc/nv-kernel-rmapi-ops.h (nvidia_kernel_rmapi_ops_t),
 * src/common/sdk/nvidia/inc/nvos.h (NVOS00/54/64 and the RM function numbers
 * NV01_FREE, NV04_ALLOC, NV04_CONTROL: kmod/core/abi/nvos.h).
 * nvidia_get_rm_ops() (kernel-open/nvidia/
 * nv-modeset-interface.c) refuses any version string but its own with
 * NV_ERR_GENERIC and writes its own into the caller's struct, then on a match
 * copies its whole ops struct over the caller's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include "core/abi/nvos.h"
#include "core/abi/nvstatus.h"
#include "rmops.h"

#define NV_VERSION_MAX 64

struct nvidia_stack_s; /* opaque, as nvidia-modeset treats it */

/* nvidia_modeset_rm_ops_t. Members vgpu.ko never calls are untyped. */
struct vgpu_nv_rm_ops {
	const char *version_string;
	struct {
		u8 allow_write_combining; /* NvBool */
	} system_info;
	int (*alloc_stack)(struct nvidia_stack_s **sp);
	void (*free_stack)(struct nvidia_stack_s *sp);
	void *enumerate_gpus;
	void *open_gpu;
	void *close_gpu;
	void (*op)(struct nvidia_stack_s *sp, void *ops_cmd);
	void *set_callbacks;
	/* The driver assigns its whole struct over ours: room for members a
	 * later release appends. */
	void *reserved[8];
};

/* nvidia_kernel_rmapi_ops_t: the driver writes only the member of @op. */
struct vgpu_nv_kernel_op {
	u32 op;
	union {
		NVOS00_PARAMETERS free;
		NVOS64_PARAMETERS alloc;
		NVOS54_PARAMETERS control;
		u8 room[256]; /* the real union's larger members */
	} params;
};

static_assert(offsetof(struct vgpu_nv_kernel_op, params) == 8);
static_assert(offsetof(struct vgpu_nv_rm_ops, op) == 7 * sizeof(void *));

typedef u32 (*vgpu_get_rm_ops_fn)(struct vgpu_nv_rm_ops *ops);

/*
 * vgpu_rm_lock protects the binding's setup and teardown. Calls read it
 * without the lock once vgpu_rm_ready is set (release/acquire): the ops never
 * change while bound.
 */
static DEFINE_MUTEX(vgpu_rm_lock);
static bool vgpu_rm_ready;
static void *vgpu_rm_sym; /* holds the nvidia.ko reference (symbol_put_addr) */
static struct vgpu_nv_rm_ops vgpu_rm;
static char vgpu_rm_ver[NV_VERSION_MAX];

/* Driver ABI generations whose structs above were checked. */
static bool vgpu_rm_version_known(const char *v)
{
	return !strncmp(v, "580.", 4);
}

static int vgpu_rm_issue(const struct vgpu_nv_rm_ops *ops,
			 struct vgpu_nv_kernel_op *op)
{
	struct nvidia_stack_s *sp = NULL;

	/* alloc_stack may leave sp NULL and succeed: check the return only. */
	if (ops->alloc_stack(&sp))
		return -ENOMEM;
	ops->op(sp, op);
	ops->free_stack(sp);
	return 0;
}

static int vgpu_rm_bind_locked(void)
{
	struct vgpu_nv_rm_ops ops = {.version_string = ""};
	vgpu_get_rm_ops_fn get;
	void *sym;
	int err;

	lockdep_assert_held(&vgpu_rm_lock);
	if (vgpu_rm_ready)
		return 0;
	/* Takes a reference on nvidia.ko; pairs with symbol_put_addr below or
	 * in vgpu_rm_unbind. */
	sym = __symbol_get("nvidia_get_rm_ops");
	if (!sym)
		return -ENODEV;
	get = (vgpu_get_rm_ops_fn)sym;
	/* First call: the driver refuses "" and names its own version. */
	err = -EPROTO;
	if (get(&ops) != NV_ERR_GENERIC || !ops.version_string)
		goto err_put;
	strscpy(vgpu_rm_ver, ops.version_string, sizeof(vgpu_rm_ver));
	if (!vgpu_rm_version_known(vgpu_rm_ver)) {
		pr_warn("in-kernel RM: driver version %s has an unknown ABI, "
			"not bound\n",
			vgpu_rm_ver);
		goto err_put;
	}
	memset(&ops, 0, sizeof(ops));
	ops.version_string = vgpu_rm_ver;
	if (get(&ops) != NV_OK || !ops.alloc_stack || !ops.free_stack ||
	    !ops.op) {
		pr_warn("in-kernel RM: driver %s refused its own version\n",
			vgpu_rm_ver);
		goto err_put;
	}
	vgpu_rm = ops;
	vgpu_rm_sym = sym;
	/* Pairs with smp_load_acquire in vgpu_rm_get. */
	smp_store_release(&vgpu_rm_ready, true);
	pr_info("in-kernel RM: bound to driver %s\n", vgpu_rm_ver);
	return 0;

err_put:
	symbol_put_addr(sym);
	return err;
}

int vgpu_rm_bind(void)
{
	int err;

	if (smp_load_acquire(&vgpu_rm_ready))
		return 0;
	mutex_lock(&vgpu_rm_lock);
	err = vgpu_rm_bind_locked();
	mutex_unlock(&vgpu_rm_lock);
	return err;
}

void vgpu_rm_unbind(void)
{
	mutex_lock(&vgpu_rm_lock);
	if (vgpu_rm_ready) {
		WRITE_ONCE(vgpu_rm_ready, false);
		symbol_put_addr(vgpu_rm_sym);
		vgpu_rm_sym = NULL;
		vgpu_rm_ver[0] = '\0';
	}
	mutex_unlock(&vgpu_rm_lock);
}

bool vgpu_rm_bound(void)
{
	return smp_load_acquire(&vgpu_rm_ready);
}

const char *vgpu_rm_version(void)
{
	return vgpu_rm_bound() ? vgpu_rm_ver : "";
}

/* The bound ops, binding first if needed. */
static int vgpu_rm_get(void)
{
	int err = vgpu_rm_bind();

	if (err)
		pr_debug("in-kernel RM not available (%d)\n", err);
	return err;
}

/*
 * Issues @op, filled by the caller; *@status is the RM status the driver wrote
 * into @op (at @op_status), or VGPU_RM_STATUS_UNSET when the call could not be
 * issued (rmops.h).
 */
static int vgpu_rm_call(struct vgpu_nv_kernel_op *op, const u32 *op_status,
			u32 *status)
{
	int err;

	*status = VGPU_RM_STATUS_UNSET;
	err = vgpu_rm_get();
	if (!err)
		err = vgpu_rm_issue(&vgpu_rm, op);
	if (!err)
		*status = *op_status;
	return err;
}

int vgpu_rm_control(u32 hclient, u32 hobject, u32 cmd, void *params, u32 size,
		    u32 *status)
{
	struct vgpu_nv_kernel_op op = {
		.op = NV04_CONTROL,
		.params.control.hClient = hclient,
		.params.control.hObject = hobject,
		.params.control.cmd = cmd,
		.params.control.params = (u64)(uintptr_t)params,
		.params.control.paramsSize = size,
		.params.control.status = VGPU_RM_STATUS_UNSET,
	};

	return vgpu_rm_call(&op, &op.params.control.status, status);
}

int vgpu_rm_free(u32 hclient, u32 hparent, u32 hobject, u32 *status)
{
	struct vgpu_nv_kernel_op op = {
		.op = NV01_FREE,
		.params.free.hRoot = hclient,
		.params.free.hObjectParent = hparent,
		.params.free.hObjectOld = hobject,
		.params.free.status = VGPU_RM_STATUS_UNSET,
	};

	return vgpu_rm_call(&op, &op.params.free.status, status);
}

int vgpu_rm_alloc(u32 hclient, u32 hparent, u32 *hobject, u32 hclass,
		  void *params, u32 *status)
{
	struct vgpu_nv_kernel_op op = {
		.op = NV04_ALLOC,
		.params.alloc.hRoot = hclient,
		.params.alloc.hObjectParent = hparent,
		.params.alloc.hObjectNew = *hobject,
		.params.alloc.hClass = hclass,
		.params.alloc.pAllocParms = (u64)(uintptr_t)params,
		.params.alloc.status = VGPU_RM_STATUS_UNSET,
	};
	int err = vgpu_rm_call(&op, &op.params.alloc.status, status);

	if (!err && *status == NV_OK)
		*hobject = op.params.alloc.hObjectNew;
	return err;
}

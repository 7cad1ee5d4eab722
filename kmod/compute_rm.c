// SPDX-License-Identifier: GPL-2.0
/*
 * The compute share controller's RM access (compute.c, compute_gate.c,
 * compute_meter.c): the control wrapper that counts a slot's failed controls,
 * and the module's own client, device and subdevice on each GPU.
 *
 * FIFO_DISABLE_CHANNELS is a subdevice control: the module allocates its own
 * client, device and subdevice per GPU and lists the tenants' clients in
 * hClientList (a kernel-privileged caller may name any client). That saves a
 * per-tenant subdevice lookup; nvsim accepts it, the real driver on GSP is
 * unverified (compute-kernel-host.md says what to try if it refuses).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/printk.h>

#include "slot.h"
#include "compute.h"
#include "core/abi/classes.h"
#include "rmops.h"

int vgpu_compute_rm_control(struct vgpu_compute_gpu *g,
			    struct vgpu_compute_slot *cs, u32 hclient,
			    u32 hobject, u32 cmd, void *params, u32 size)
{
	u32 status = VGPU_RM_STATUS_UNSET;
	int err = vgpu_rm_control(hclient, hobject, cmd, params, size, &status);

	if (!err && status == VGPU_NV_OK)
		return 0;
	if (cs)
		cs->errors++;
	pr_debug("gpu %u: control 0x%08x on 0x%x/0x%x: err %d status 0x%x\n",
		 g->gpu, cmd, hclient, hobject, err, status);
	return err ?: -EIO;
}

/* ---- the module's own RM objects on this GPU ------------------------- */

void vgpu_compute_rm_teardown(struct vgpu_compute_gpu *g)
{
	u32 status;

	if (g->h_client)
		vgpu_rm_free(g->h_client, g->h_client, g->h_client, &status);
	g->h_client = g->h_device = g->h_subdevice = 0;
	g->rm_ready = false;
}

/*
 * Client, device (deviceId = the GPU's minor: equal to RM's device instance
 * on nvsim and on single-partition GPUs), subdevice 0.
 */
int vgpu_compute_rm_setup(struct vgpu_compute_gpu *g)
{
	NV0080_ALLOC_PARAMETERS dp = {.deviceId = g->gpu};
	NV2080_ALLOC_PARAMETERS sub = {.subDeviceId = 0};
	u32 h = 0, status = VGPU_RM_STATUS_UNSET;
	int err;

	err = vgpu_rm_bind();
	if (err)
		return err;
	err = vgpu_rm_alloc(0, 0, &h, NV01_ROOT_CLIENT, NULL, &status);
	if (err || status)
		goto fail; /* nothing to free */
	g->h_client = h;
	err = vgpu_rm_alloc(g->h_client, g->h_client, &g->h_device,
			    NV01_DEVICE_0, &dp, &status);
	if (err || status)
		goto fail;
	err = vgpu_rm_alloc(g->h_client, g->h_device, &g->h_subdevice,
			    NV20_SUBDEVICE_0, &sub, &status);
	if (err || status)
		goto fail;
	g->rm_ready = true;
	return 0;
fail:
	pr_warn_ratelimited("gpu %u: compute control client: err %d status "
			    "0x%x\n",
			    g->gpu, err, status);
	vgpu_compute_rm_teardown(g); /* frees the client if it was made */
	return err ?: -EIO;
}

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_registry.h - what a slot holds, for the hosts that follow its objects
 * (the compute controllers in kmod/compute*.c and shim/preload, the
 * recorder): the role of an RM class on the slot's driver branch, the
 * per-slot caps on TSGs, channels, VA spaces, UVM files and their page tables,
 * the TSG registry a controller walks, and the switch by which it takes over
 * the timeslices. Hosts include vcore.h, which includes this header; the core's
 * files get it through vcore_internal.h.
 */
#ifndef VCORE_REGISTRY_H
#define VCORE_REGISTRY_H

#include "vcore_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vcore_slot;
struct vcore_file;

/* ------------------------------------------------------------------ */
/* Driver classes, for hosts                                           */
/* ------------------------------------------------------------------ */

/*
 * What an RM class is on a slot's driver branch (the class rows of
 * tables_580.c and its deltas), so that a host that follows objects (the
 * shim's compute thread, the recorder) asks the core instead of testing class
 * numbers. @slot NULL: the newest branch the core knows.
 */
enum vcore_class_role {
	VCORE_CLASS_UNKNOWN = 0, /* not in the branch's tables */
	VCORE_CLASS_OTHER,
	VCORE_CLASS_CLIENT,    /* an RM client (NV01_ROOT*) */
	VCORE_CLASS_DEVICE,    /* NV01_DEVICE_0 */
	VCORE_CLASS_SUBDEVICE, /* NV20_SUBDEVICE_0 */
	VCORE_CLASS_MEMORY,    /* any memory class, counted or not */
	VCORE_CLASS_TSG,       /* KEPLER_CHANNEL_GROUP_A */
	VCORE_CLASS_CHANNEL,   /* a GPFIFO channel (0x??6f) */
};
enum vcore_class_role vcore_class_role_of(const struct vcore_slot *slot,
					  vcore_u32 cls);
/* Size of the class's allocation parameters (RM derives it from the class,
 * abi.md §3 NVOS64), 0 when the tables do not give one. */
vcore_u32 vcore_class_params_size(const struct vcore_slot *slot, vcore_u32 cls);

/* ------------------------------------------------------------------ */
/* TSG registry (for the time-slice scheduler, kmod/core/sched)        */
/* ------------------------------------------------------------------ */

/*
 * Per-slot limits on scheduling objects (F11.1): past them an allocation is
 * refused with NV_ERR_INSUFFICIENT_RESOURCES, as RM refuses when it runs out.
 * Channel ids are GPU-wide, so one tenant must not take them all, and every
 * TSG and channel a slot can have is one the compute controller measures and
 * gates (kmod/compute.h sizes its tables from these). libcuda makes 4 TSGs
 * and 20 channels per context, all channels under a TSG (every recorded
 * trace in tests/data/traces): 16 contexts per slot.
 */
#define VCORE_SLOT_MAX_TSGS	64
#define VCORE_SLOT_MAX_CHANNELS 1024
/*
 * VA spaces (FERMI_VASPACE_A) per slot (issue 17 F11.1): their page
 * directories are the driver's video memory, charged as a fixed estimate
 * each (tables_580.c). libcuda makes 2 per process and later contexts reuse
 * them (every recorded trace in tests/data/traces): twice what the 16
 * contexts of the TSG limit need as processes of their own.
 */
#define VCORE_SLOT_MAX_VASPACES (VCORE_SLOT_MAX_TSGS / 4 * 2 * 2)
/*
 * UVM files (/dev/nvidia-uvm opens) per slot (issue 17 F11.1): each is a
 * va_space of UVM's with page trees of its own per registered GPU, and its
 * external mappings are capped per file (VCORE_MAX_OBJECTS). libcuda opens
 * two per process (the va_space and the UVM_MM_INITIALIZE file), and the
 * recordings in tests/data/traces at most four (PyTorch); the VA-space cap
 * allows VCORE_SLOT_MAX_VASPACES / 2 processes, so four each. Past it an
 * open fails with EMFILE (vcore_file_open_err).
 */
#define VCORE_SLOT_MAX_UVM_FILES (VCORE_SLOT_MAX_VASPACES / 2 * 4)
/*
 * The most a slot's UVM page tables may be charged under a memory quota
 * (kmod/core/uvm_external.c says why there is a cap): a 32nd of the quota,
 * at least 16 MiB. Honest processes stay far below: libcuda's mappings are
 * charged 16 KiB + 4 KiB per 2 MiB each
 * (UvmPtables.WhatLibcudasAllocationsPay), about a 100th of a quota filled with
 * 2 MiB allocations, and a PyTorch process that filled 4 GiB on the H200 about
 * a 440th (9.35 MiB, docs/results/e2e-h200.md, run O).
 */
#define VCORE_UVM_PTABLES_QUOTA_SHARE 32
#define VCORE_UVM_PTABLES_FLOOR	      (16ull << 20)

static inline vcore_u64 vcore_uvm_ptables_cap(vcore_u64 quota)
{
	vcore_u64 share = quota / VCORE_UVM_PTABLES_QUOTA_SHARE;

	return share > VCORE_UVM_PTABLES_FLOOR ? share
					       : VCORE_UVM_PTABLES_FLOOR;
}

/*
 * A TSG (KEPLER_CHANNEL_GROUP_A 0xa06c or a successor) the slot's clients
 * allocated, with the engine type from NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS
 * @12 (abi.md §6.3) and the number of channels (class 0x??6f) under it.
 *
 * @scheduled: the app's NVA06C_CTRL_CMD_GPFIFO_SCHEDULE(bEnable=1) on this
 * TSG returned NV_OK, and no successful bEnable=0 came after it (bEnable read
 * from the core's private copy of the params). libcuda creates the TSG, its
 * channels, registers them with UVM and only then schedules the TSG (abi.md
 * §6.1): before that the TSG is not on the runlist. A controller must leave
 * an unscheduled TSG and its channels alone: on the H200 a PREEMPT(bWait=1)
 * of it waited 4 s for RM's timeout, and FIFO_DISABLE_CHANNELS on its
 * channels before the schedule left the tenant frozen for good
 * (docs/results/compute-h200.md, the lead's cap-from-the-first-kernel run).
 * A change of @scheduled bumps the registry generation.
 */
struct vcore_tsg_info {
	vcore_u32 h_client;
	vcore_u32 h_device; /* parent of the TSG */
	vcore_u32 h_tsg;
	vcore_u32 tsg_class;
	vcore_u32 engine_type; /* NV2080_ENGINE_TYPE_*: 1 = GR0 */
	vcore_u32 n_channels;
	vcore_u32 pid;		 /* process that allocated it */
	struct vcore_file *file; /* ctl file owning the client */
	vcore_bool scheduled;	 /* see above */
};

struct vcore_channel_info {
	vcore_u32 h_client;
	vcore_u32 h_tsg; /* 0 when allocated directly under a device */
	vcore_u32 h_channel;
	vcore_u32 channel_class;
	/* The parent TSG is scheduled (vcore_tsg_info.scheduled); always 0
	 * for a channel without a TSG parent in the table. */
	vcore_bool tsg_scheduled;
};

/* Visitors run under the slot lock: they must not call back into the core
 * and must not sleep long. A non-zero return stops the walk and is returned. */
typedef int (*vcore_tsg_fn)(void *arg, const struct vcore_tsg_info *tsg);
typedef int (*vcore_channel_fn)(void *arg, const struct vcore_channel_info *ch);
int vcore_slot_for_each_tsg(struct vcore_slot *slot, vcore_tsg_fn fn,
			    void *arg);
int vcore_slot_for_each_channel(struct vcore_slot *slot, vcore_channel_fn fn,
				void *arg);
/* Is (@h_client, @h_tsg) a TSG of this slot, scheduled now? Takes the slot
 * lock; for a host that acts on a TSG some time after its walk. */
vcore_bool vcore_slot_tsg_scheduled(struct vcore_slot *slot, vcore_u32 h_client,
				    vcore_u32 h_tsg);
/* Bumped on every TSG or channel added or removed, every TSG whose
 * scheduled state changed, and every app SET_TIMESLICE (cheap change check). */
vcore_u64 vcore_slot_tsg_generation(struct vcore_slot *slot);

/*
 * The host's compute controller owns the timeslices of this slot's TSGs (weight
 * mode): from now on the app's NVA06C SET_TIMESLICE is recorded and answered
 * NV_OK without reaching the driver, so a tenant cannot re-issue its own value
 * between the controller's (docs/security/kernel-lifetime-compute.md, F7).
 */
void vcore_slot_set_host_owns_timeslice(struct vcore_slot *slot, vcore_bool on);

#ifdef __cplusplus
}
#endif

#endif /* VCORE_REGISTRY_H */

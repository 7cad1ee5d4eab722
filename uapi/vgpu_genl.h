/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/* clang-format off */
/*
 * vgpu control ABI: the generic-netlink family between vgpu-manager (or vgpuctl) and vgpu.ko.
 *
 * Documentation
 * =============
 *
 * The family is VGPU_GENL_NAME, version VGPU_GENL_VERSION. It exists only in the initial
 * network namespace (a slot is a node resource, not a container's). Every mutating command
 * needs CAP_SYS_ADMIN in the initial user namespace (GENL_ADMIN_PERM); reads and the event
 * group are open to everyone. Every request is validated strictly against one policy: an
 * unknown attribute, a wrong length, a value out of range or an unknown bit in a flags word
 * fails the request with -EINVAL and an extended-ack message naming the attribute.
 *
 * A *slot* is one tenant's view of one GPU. It owns character devices
 *   /dev/vgpuctl<ID>  standing in for /dev/nvidiactl,
 *   /dev/vgpu<ID>     standing in for /dev/nvidia<GPU>,
 *   /dev/vgpu-uvm<ID> standing in for /dev/nvidia-uvm (only with VGPU_SLOT_F_UVM),
 * a memory quota, a compute share, policies and counters. Every open file of those nodes
 * holds its own real file of the driver node it stands for, and each ioctl is filtered by the
 * core (kmod/core) with the slot's limits and forwarded in the caller's task.
 *
 * VGPU_CMD_SLOT_NEW (admin)
 *   Creates a slot. Attributes in:
 *     VGPU_A_SLOT_GPU            u32, required: minor N of the real /dev/nvidiaN
 *     VGPU_A_SLOT_NAME           string < VGPU_SLOT_NAME_LEN, optional label (e.g. pod/container)
 *     VGPU_A_SLOT_MEM_QUOTA      u64 bytes of video memory, optional; 0 (default) = unlimited
 *     VGPU_A_SLOT_COMPUTE_SHARE  u32 percent 1..100, optional, default 100
 *     VGPU_A_SLOT_COMPUTE_MODE   u32 enum vgpu_compute_mode, optional, default CAP
 *     VGPU_A_SLOT_COMPUTE_REF_CLOCK_MHZ u32 MHz 0..10000, optional, default 0: carried,
 *                                not used by the module (uapi/vgpu_slot_fields.h)
 *     VGPU_A_SLOT_MANAGED_POLICY u32 enum vgpu_managed_policy, optional, default
 *                                REFUSE when a memory quota is set, else ALLOW_UNCOUNTED
 *     VGPU_A_SLOT_UNKNOWN_POLICY u32 enum vgpu_unknown_policy, optional, default REFUSE
 *     VGPU_A_SLOT_FLAGS          u32 of enum vgpu_slot_flag, optional
 *   The reply is a VGPU_CMD_SLOT_NEW message carrying the slot as VGPU_CMD_SLOT_GET does.
 *
 * VGPU_CMD_SLOT_SET (admin)
 *   Changes a slot. VGPU_A_SLOT_ID is required; every other attribute of SLOT_NEW except
 *   VGPU_A_SLOT_GPU and VGPU_A_SLOT_FLAGS may be given and replaces the value. Lowering the
 *   quota below the memory already charged is allowed: nothing is revoked, new allocations
 *   are refused until usage falls below the quota.
 *
 * VGPU_CMD_SLOT_DEL (admin)
 *   Destroys slot VGPU_A_SLOT_ID. With open files the request fails with -EBUSY, unless
 *   VGPU_A_DEL_FLAGS has VGPU_DEL_F_DEFER: then the nodes disappear at once, the open files
 *   are revoked (further ioctl/mmap fail with -ENODEV; close still releases everything) and
 *   the slot's memory is freed when its last file is closed.
 *
 * VGPU_CMD_SLOT_GET
 *   With VGPU_A_SLOT_ID: one slot. As a dump (NLM_F_DUMP): every slot, in id order, possibly
 *   across several messages; each message carries VGPU_A_GENERATION, and a dump that spanned
 *   a change is flagged NLM_F_DUMP_INTR (retry it). A slot is described by:
 *     VGPU_A_SLOT_ID, VGPU_A_SLOT_GPU, VGPU_A_SLOT_NAME, VGPU_A_SLOT_MEM_QUOTA,
 *     VGPU_A_SLOT_COMPUTE_SHARE, VGPU_A_SLOT_COMPUTE_MODE, VGPU_A_SLOT_MANAGED_POLICY,
 *     VGPU_A_SLOT_UNKNOWN_POLICY, VGPU_A_SLOT_COMPUTE_REF_CLOCK_MHZ,
 *     VGPU_A_SLOT_FLAGS, VGPU_A_SLOT_STATE (enum vgpu_slot_state),
 *     VGPU_A_SLOT_NODE_CTL, VGPU_A_SLOT_NODE_DEV, VGPU_A_SLOT_NODE_UVM (node names under /dev),
 *     VGPU_A_SLOT_OPEN_FILES u32, VGPU_A_SLOT_PROCS (nested: VGPU_A_PROC_PID u32 repeated),
 *     VGPU_A_SLOT_STATS (nested, enum vgpu_stat_attr, every value u64).
 *
 * VGPU_CMD_DRIVER_GET
 *   The module's view of the real driver: VGPU_A_DRIVER_BOUND u8, VGPU_A_DRIVER_CTL_PATH and
 *   VGPU_A_DRIVER_DEV_FMT strings, VGPU_A_GENERATION, VGPU_A_DRIVER_SLOTS u32.
 *
 * VGPU_CMD_DRIVER_BIND (admin)
 *   Resolves the real driver's nodes now (in the initial mount namespace of the module's
 *   creator: the request is served in the sender's task, so send it from the host). Loading
 *   the module without the driver is allowed; slots can only be opened once bound.
 *
 * VGPU_CMD_EVENT (multicast group VGPU_GENL_MCGRP_EVENTS, never a request)
 *   VGPU_A_EVENT_TYPE u32 (enum vgpu_event), VGPU_A_SLOT_ID, VGPU_A_EVENT_PID u32,
 *   VGPU_A_EVENT_COMM string, and for quota denials VGPU_A_EVENT_SIZE u64 (bytes asked),
 *   VGPU_A_EVENT_CHARGED u64, VGPU_A_SLOT_MEM_QUOTA u64, VGPU_A_EVENT_DETAIL string.
 *
 * Enums run from _UNSPEC (0, never valid) to __X_MAX; X_MAX = __X_MAX - 1. Everything is
 * append-only: values never change meaning and new attributes are added before the sentinel.
 */
/* clang-format on */
#ifndef _UAPI_VGPU_GENL_H
#define _UAPI_VGPU_GENL_H

#include <linux/types.h>

#define VGPU_GENL_NAME	       "vgpu"
#define VGPU_GENL_VERSION      1
#define VGPU_GENL_MCGRP_EVENTS "events"

#define VGPU_SLOT_NAME_LEN 64
#define VGPU_MAX_SLOTS	   64

enum vgpu_cmd {
	VGPU_CMD_UNSPEC,
	VGPU_CMD_SLOT_NEW,
	VGPU_CMD_SLOT_SET,
	VGPU_CMD_SLOT_DEL,
	VGPU_CMD_SLOT_GET,
	VGPU_CMD_DRIVER_GET,
	VGPU_CMD_DRIVER_BIND,
	VGPU_CMD_EVENT,
	__VGPU_CMD_MAX
};
#define VGPU_CMD_MAX (__VGPU_CMD_MAX - 1)

enum vgpu_attr {
	VGPU_A_UNSPEC,
	VGPU_A_SLOT_ID,		    /* u32 */
	VGPU_A_SLOT_GPU,	    /* u32 */
	VGPU_A_SLOT_NAME,	    /* NUL-terminated string */
	VGPU_A_SLOT_MEM_QUOTA,	    /* u64 bytes, 0 = unlimited */
	VGPU_A_SLOT_COMPUTE_SHARE,  /* u32 percent */
	VGPU_A_SLOT_MANAGED_POLICY, /* u32 enum vgpu_managed_policy */
	VGPU_A_SLOT_UNKNOWN_POLICY, /* u32 enum vgpu_unknown_policy */
	VGPU_A_SLOT_FLAGS,	    /* u32 enum vgpu_slot_flag */
	VGPU_A_SLOT_STATE,	    /* u32 enum vgpu_slot_state */
	VGPU_A_SLOT_NODE_CTL,	    /* string */
	VGPU_A_SLOT_NODE_DEV,	    /* string */
	VGPU_A_SLOT_NODE_UVM,	    /* string */
	VGPU_A_SLOT_OPEN_FILES,	    /* u32 */
	VGPU_A_SLOT_PROCS,	    /* nested: VGPU_A_PROC_PID */
	VGPU_A_SLOT_STATS,	    /* nested: enum vgpu_stat_attr */
	VGPU_A_DEL_FLAGS,	    /* u32 enum vgpu_del_flag */
	VGPU_A_GENERATION,	    /* u32 */
	VGPU_A_DRIVER_BOUND,	    /* u8 */
	VGPU_A_DRIVER_CTL_PATH,	    /* string */
	VGPU_A_DRIVER_DEV_FMT,	    /* string */
	VGPU_A_DRIVER_SLOTS,	    /* u32 */
	VGPU_A_EVENT_TYPE,	    /* u32 enum vgpu_event */
	VGPU_A_EVENT_PID,	    /* u32 */
	VGPU_A_EVENT_COMM,	    /* string */
	VGPU_A_EVENT_SIZE,	    /* u64 */
	VGPU_A_EVENT_CHARGED,	    /* u64 */
	VGPU_A_EVENT_DETAIL,	    /* string */
	VGPU_A_PAD,		    /* alignment padding for u64 attributes */
	VGPU_A_SLOT_COMPUTE_MODE,   /* u32 enum vgpu_compute_mode */
	VGPU_A_SLOT_COMPUTE_REF_CLOCK_MHZ, /* u32 MHz, 0 = unknown */
	__VGPU_A_MAX
};
#define VGPU_A_MAX (__VGPU_A_MAX - 1)

enum vgpu_proc_attr {
	VGPU_A_PROC_UNSPEC,
	VGPU_A_PROC_PID, /* u32, repeated */
	__VGPU_A_PROC_MAX
};
#define VGPU_A_PROC_MAX (__VGPU_A_PROC_MAX - 1)

/* Per-slot counters; every value is a u64 and counts since slot creation. */
enum vgpu_stat_attr {
	VGPU_STAT_UNSPEC,
	VGPU_STAT_MEM_CHARGED,	  /* bytes of video memory charged now */
	VGPU_STAT_MEM_PEAK,	  /* highest VGPU_STAT_MEM_CHARGED seen */
	VGPU_STAT_MEM_DENIALS,	  /* allocations refused for the quota */
	VGPU_STAT_IOCTLS,	  /* ioctls seen */
	VGPU_STAT_IOCTL_REFUSED,  /* ioctls refused (any reason) */
	VGPU_STAT_UNKNOWN_IOCTLS, /* escapes/controls/classes the ABI table does
				     not know */
	VGPU_STAT_MANAGED_DENIALS, /* managed-memory (UVM) requests refused by
				      policy */
	VGPU_STAT_FD_REFUSED, /* fd fields naming a file that is not this slot's
			       */
	VGPU_STAT_OPENS,      /* files opened */
	VGPU_STAT_MMAPS,      /* mappings forwarded */
	VGPU_STAT_ATTACHES,   /* processes that attached (VGPU_EVENT_ATTACH) */
	VGPU_STAT_PAD,	      /* alignment padding */
	VGPU_STAT_VIEWS_REWRITTEN, /* replies rewritten to the slot's view */
	VGPU_STAT_OVERQUOTA, /* driver allocated past the reservation (raced) */
	VGPU_STAT_MALFORMED, /* bad sizes, faults, bad XFER nesting */
	VGPU_STAT_OBJECTS,   /* live RM objects of the slot (gauge) */
	VGPU_STAT_CLIENTS,   /* live RM clients of the slot (gauge) */
	VGPU_STAT_TSGS,	     /* live channel groups of the slot (gauge) */
	/*
	 * Compute share (the controller, kmod/core/sched); all 0 while the
	 * slot is not under control (share 100 in cap mode).
	 */
	VGPU_STAT_GPU_BUSY_NS,	   /* GPU time the slot's TSGs used, measured */
	VGPU_STAT_THROTTLED_NS,	   /* time the slot's channels were gated off */
	VGPU_STAT_OVERSHOOT_NS,	   /* GPU time measured while gated off */
	VGPU_STAT_DEBT_NS,	   /* cap: GPU time owed now (gauge) */
	VGPU_STAT_SHARE_1S_PM,	   /* achieved share of the GPU, last 1 s,
				      permille (gauge) */
	VGPU_STAT_SHARE_10S_PM,	   /* same over the last 10 s (gauge) */
	VGPU_STAT_GATE_ACTIONS,	   /* gate off + gate on edges issued */
	VGPU_STAT_TIMESLICE_US,	   /* weight: last timeslice set (gauge) */
	VGPU_STAT_COMPUTE_ERRORS,  /* RM controls of the controller that
				      failed */
	VGPU_STAT_CONTROL_LATE_NS, /* how late the controller thread woke
				      for its edges, when more than 10 ms
				      late (a stalled thread), summed:
				      time it could not act */
	__VGPU_STAT_MAX
};
#define VGPU_STAT_MAX (__VGPU_STAT_MAX - 1)

/*
 * How VGPU_A_SLOT_COMPUTE_SHARE is enforced
 * (docs/results/compute-kernel-host.md). CAP: a hard limit, never more than the
 * share even on an idle GPU (channels are duty-cycled off). WEIGHT:
 * work-conserving, the share applies under contention and idle time is lent out
 * (timeslices). A slot in CAP mode with share 100 is not controlled at all.
 */
enum vgpu_compute_mode {
	VGPU_COMPUTE_UNSPEC,
	VGPU_COMPUTE_CAP,
	VGPU_COMPUTE_WEIGHT,
	__VGPU_COMPUTE_MAX
};

enum vgpu_slot_flag {
	VGPU_SLOT_F_UVM = 1U << 0, /* also create /dev/vgpu-uvm<ID> */
	__VGPU_SLOT_F_ALL = VGPU_SLOT_F_UVM
};

enum vgpu_del_flag {
	VGPU_DEL_F_DEFER = 1U << 0, /* revoke open files, free at last close */
	__VGPU_DEL_F_ALL = VGPU_DEL_F_DEFER
};

enum vgpu_slot_state {
	VGPU_SLOT_STATE_UNSPEC,
	VGPU_SLOT_STATE_ACTIVE,
	VGPU_SLOT_STATE_DYING, /* destroyed with VGPU_DEL_F_DEFER, files still
				  open */
	__VGPU_SLOT_STATE_MAX
};

/*
 * Managed memory (cudaMallocManaged) never reaches RM: UVM allocates it in the
 * kernel, so a memory quota cannot count it (docs/nvidia-rm-abi.md §7). A
 * slot either refuses it or allows it uncounted, explicitly.
 */
enum vgpu_managed_policy {
	VGPU_MANAGED_UNSPEC,
	VGPU_MANAGED_REFUSE,
	VGPU_MANAGED_ALLOW_UNCOUNTED,
	__VGPU_MANAGED_MAX
};

/* What to do with an escape, control or class the ABI table does not know. */
enum vgpu_unknown_policy {
	VGPU_UNKNOWN_UNSPEC,
	VGPU_UNKNOWN_REFUSE,	/* -EINVAL / NV_ERR_NOT_SUPPORTED, logged */
	VGPU_UNKNOWN_ALLOW_LOG, /* forwarded, logged and counted */
	__VGPU_UNKNOWN_MAX
};

enum vgpu_event {
	VGPU_EVENT_UNSPEC,
	VGPU_EVENT_QUOTA_DENIED, /* an allocation was refused for the memory
				    quota */
	VGPU_EVENT_ATTACH,    /* a process opened its first file of the slot */
	VGPU_EVENT_EXIT,      /* a process closed its last file of the slot */
	VGPU_EVENT_SLOT_GONE, /* a deferred-destroyed slot released its last
				 file */
	VGPU_EVENT_REFUSED, /* an ioctl was refused for a reason other than the
			       quota */
	__VGPU_EVENT_MAX
};

#endif /* _UAPI_VGPU_GENL_H */

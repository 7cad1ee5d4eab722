/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/* clang-format off */
/*
 * The settings of one slot: the one definition every reader and writer derives from.
 *
 *   vgpu.ko           netlink policy, parse and reply (kmod/genl_slot.c), sysfs files (kmod/sysfs.c)
 *   vgpu-manager      kmodclient (PutSlotConfig, ParseSlot), the slot config file the shim reads
 *                     (daemon/slots/slot_config_file.cc), the JSON of the checkpoint, the control
 *                     API and vgpuctl (daemon/common/slot_settings.cc)
 *   libvgpu-shim.so   its config reader (shim/preload/config.cc)
 *
 * A setting has ONE name: the C member of every slot config struct, the sysfs file under
 * /sys/class/vgpu/<node>/, the key of the slot config file and the JSON key. Adding a setting is
 * one row here (plus its netlink attribute in vgpu_genl.h, append-only) and whatever enforces it.
 *
 * VGPU_SLOT_NUMBERS(X): X(field, wire, unit, def, min, max, attr, env)
 *   wire  u32 | u64: the netlink type and the width of the C member
 *   unit  what the number counts (docs/operator-guide.md "Slot settings")
 *   def   the value when the setting is not given (netlink: attribute absent; shim: key absent)
 *   min, max  the valid range, inclusive (netlink policy, config readers)
 *   attr  the netlink attribute (enum vgpu_attr)
 *   env   the environment variable the shim reads when it runs without a slot config
 *         ($VGPU_CONFIG unset); ignored when a slot config is in force
 *
 * VGPU_SLOT_ENUMS(X): X(field, cxx_type, values, def, max, attr, env)
 *   cxx_type  the C++ enum class (daemon/common/include/vgpu/slot_settings.h)
 *   values    a list V(value, "name") of the valid values; the name is what the config file,
 *             the JSON, sysfs and the command lines say; 0 (_UNSPEC) is never on the wire
 *   max       the enum's sentinel (__X_MAX): valid values are 1 .. max - 1
 */
#ifndef _UAPI_VGPU_SLOT_FIELDS_H
#define _UAPI_VGPU_SLOT_FIELDS_H

#include "vgpu_genl.h"

#define VGPU_SLOT_NUMBERS(X)                                                   \
	X(mem_quota, u64, "bytes of video memory, 0 = unlimited", 0, 0,        \
	  0xffffffffffffffffULL, VGPU_A_SLOT_MEM_QUOTA, "VGPU_MEMORY_QUOTA")   \
	X(compute_share, u32, "percent of the GPU's compute time", 100, 1,     \
	  100, VGPU_A_SLOT_COMPUTE_SHARE, "VGPU_COMPUTE_SHARE")                 \
	X(compute_ref_clock_mhz, u32,                                          \
	  "MHz, the GPU's saturated SM clock; 0 = unknown", 0, 0, 10000,       \
	  VGPU_A_SLOT_COMPUTE_REF_CLOCK_MHZ, "VGPU_COMPUTE_REF_CLOCK_MHZ")

#define VGPU_SLOT_ENUMS(X)                                                     \
	X(compute_mode, ComputeMode, VGPU_COMPUTE_MODE_VALUES,                 \
	  VGPU_COMPUTE_CAP, __VGPU_COMPUTE_MAX, VGPU_A_SLOT_COMPUTE_MODE,      \
	  "VGPU_COMPUTE_MODE")                                                 \
	X(managed_policy, ManagedPolicy, VGPU_MANAGED_POLICY_VALUES,           \
	  VGPU_MANAGED_UNSPEC, __VGPU_MANAGED_MAX,                             \
	  VGPU_A_SLOT_MANAGED_POLICY, "VGPU_MANAGED")                          \
	X(unknown_policy, UnknownPolicy, VGPU_UNKNOWN_POLICY_VALUES,           \
	  VGPU_UNKNOWN_REFUSE, __VGPU_UNKNOWN_MAX,                             \
	  VGPU_A_SLOT_UNKNOWN_POLICY, "VGPU_POLICY")

/*
 * compute_ref_clock_mhz: the SM clock this slot's GPU sustains when saturated
 * at its power limit, which the shim's clock weighting measures work against
 * (shim/compute/compute_measure.cc, "Clock weighting"). Written by the manager
 * from what it measured on that GPU (daemon/reference_clock); 0: not known,
 * the shim learns it with its start-up probe (shim/compute/ref_clock_probe.h).
 * vgpu.ko carries it like every setting but does not use it: its controller
 * caps GPU time, not work.
 */

/*
 * compute_mode: cap = a hard limit of compute_share, even on an idle GPU (what
 * tencent.com/vcuda-core means); weight = work-conserving, the share holds
 * under contention and idle time is lent out.
 */
#define VGPU_COMPUTE_MODE_VALUES(V)                                            \
	V(VGPU_COMPUTE_CAP, "cap")                                             \
	V(VGPU_COMPUTE_WEIGHT, "weight")

/*
 * managed_policy: managed memory (cudaMallocManaged) never reaches RM, so a
 * quota cannot count it. Default (_UNSPEC, "default"): the filter core decides,
 * refuse under a memory quota, allow uncounted without one.
 */
#define VGPU_MANAGED_POLICY_VALUES(V)                                          \
	V(VGPU_MANAGED_REFUSE, "refuse")                                       \
	V(VGPU_MANAGED_ALLOW_UNCOUNTED, "allow-uncounted")

/* unknown_policy: an escape, control or class the ABI table does not know. */
#define VGPU_UNKNOWN_POLICY_VALUES(V)                                          \
	V(VGPU_UNKNOWN_REFUSE, "refuse")                                       \
	V(VGPU_UNKNOWN_ALLOW_LOG, "allow-log")

/* The name of an enum setting's _UNSPEC value (the default decided elsewhere). */
#define VGPU_SLOT_ENUM_DEFAULT_NAME "default"

#endif /* _UAPI_VGPU_SLOT_FIELDS_H */

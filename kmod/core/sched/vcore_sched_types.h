/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Short names for the core's scalar types (vcore_types.h) inside the share
 * controller. The controller is freestanding C11 like the rest of the core:
 * compiled into vgpu.ko (no libc headers) and into userspace (no kernel
 * headers). Error values are the core's Linux errno numbers, negated on
 * return, so both hosts pass them on unchanged.
 */
#ifndef VCORE_SCHED_TYPES_H
#define VCORE_SCHED_TYPES_H

#include "../vcore_types.h"

typedef vcore_u8 vcs_u8;
typedef vcore_u16 vcs_u16;
typedef vcore_u32 vcs_u32;
typedef vcore_s32 vcs_s32;
typedef vcore_u64 vcs_u64;
typedef vcore_s64 vcs_s64;

#define VCS_ENOENT VCORE_ENOENT
#define VCS_EEXIST VCORE_EEXIST
#define VCS_EINVAL VCORE_EINVAL
#define VCS_ENOSPC VCORE_ENOSPC
#define VCS_NULL   VCORE_NULL

#endif /* VCORE_SCHED_TYPES_H */

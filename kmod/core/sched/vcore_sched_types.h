/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Fixed-width types for the share controller, from the compiler's own
 * predefined macros: the controller is freestanding C11 and is compiled both
 * into vgpu.ko (no libc headers) and into userspace (no kernel headers).
 * Once the core's common vcore_types.h exists, these become aliases of it.
 *
 * Error values are Linux errno numbers (asm-generic/errno-base.h), negated
 * on return, so both hosts pass them on unchanged.
 */
#ifndef VCORE_SCHED_TYPES_H
#define VCORE_SCHED_TYPES_H

typedef __UINT8_TYPE__ vcs_u8;
typedef __UINT16_TYPE__ vcs_u16;
typedef __UINT32_TYPE__ vcs_u32;
typedef __INT32_TYPE__ vcs_s32;
typedef __UINT64_TYPE__ vcs_u64;
typedef __INT64_TYPE__ vcs_s64;

#define VCS_ENOENT 2
#define VCS_EEXIST 17
#define VCS_EINVAL 22
#define VCS_ENOSPC 28

#endif /* VCORE_SCHED_TYPES_H */

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vcore_types.h - the filter core's scalar types and error numbers.
 *
 * The core is freestanding C11: it includes no kernel header and no libc
 * header, so the same files build into vgpu.ko (kbuild) and into userspace
 * (CMake, the shim and the tests). Types come from the compiler's predefined
 * macros; error numbers are our own constants with Linux's values, so a host
 * returns them unchanged (as -VCORE_EFAULT == -EFAULT).
 */
#ifndef VCORE_TYPES_H
#define VCORE_TYPES_H

typedef __UINT8_TYPE__ vcore_u8;
typedef __UINT16_TYPE__ vcore_u16;
typedef __UINT32_TYPE__ vcore_u32;
typedef __UINT64_TYPE__ vcore_u64;
typedef __INT8_TYPE__ vcore_s8;
typedef __INT16_TYPE__ vcore_s16;
typedef __INT32_TYPE__ vcore_s32;
typedef __INT64_TYPE__ vcore_s64;
typedef __SIZE_TYPE__ vcore_size_t;

#ifdef __cplusplus
typedef bool vcore_bool;
/* The abi/ headers assert layouts with C11 _Static_assert; C++ users
 * (shim, tests) get the same checks through static_assert. */
#ifndef _Static_assert
#define _Static_assert static_assert
#endif
#else
typedef _Bool vcore_bool;
#endif

/*
 * A user-space address, as an integer. The core never dereferences it: it
 * hands it back to the host's copy_from_user/copy_to_user. Keeping it an
 * integer (not a pointer) keeps sparse quiet without __user annotations in a
 * header that cannot include the kernel's compiler attributes; the kernel
 * host converts with u64_to_user_ptr().
 */
typedef vcore_u64 vcore_uptr_t;

/* Linux errno values (include/uapi/asm-generic/errno-base.h, errno.h). */
#define VCORE_EPERM	 1
#define VCORE_ENOENT	 2
#define VCORE_EINTR	 4
#define VCORE_E2BIG	 7
#define VCORE_ENOMEM	 12
#define VCORE_EACCES	 13
#define VCORE_EFAULT	 14
#define VCORE_EBUSY	 16
#define VCORE_EEXIST	 17
#define VCORE_EINVAL	 22
#define VCORE_ENODEV	 19
#define VCORE_EMFILE	 24
#define VCORE_ENOTTY	 25
#define VCORE_ENOSPC	 28
#define VCORE_ERANGE	 34
#define VCORE_EOVERFLOW	 75
#define VCORE_EOPNOTSUPP 95

#define VCORE_NULL ((void *)0)

#endif /* VCORE_TYPES_H */

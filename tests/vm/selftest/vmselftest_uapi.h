/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/* ioctl of /dev/vmselftest, shared by the module and its in-guest test programs. */
#ifndef VMSELFTEST_UAPI_H
#define VMSELFTEST_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct vmselftest_echo {
	__u64 in;
	__u64 out;
	__u64 calls;
};

#define VMSELFTEST_IOC_ECHO _IOWR('S', 1, struct vmselftest_echo)

#endif

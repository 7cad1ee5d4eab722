/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Decoy files: what this module puts in a caller's fd table where the driver
 * looks a file up during one call (docs/security/kernel-call-path.md, F4). A
 * decoy resolves, for the driver's lookups, to the real file it stands for,
 * and does nothing for anyone who calls it: a copy that a sibling thread
 * makes, forks or sends away while the call runs is inert.
 */
#ifndef VGPU_KMOD_DECOY_H
#define VGPU_KMOD_DECOY_H

#include <linux/fs.h>

int vgpu_decoy_init(void);
void vgpu_decoy_exit(void);

enum vgpu_decoy_kind {
	/* An fd field the driver resolves by device number and private_data
	 * alone (nv_get_file_private): refusing file operations for life. */
	VGPU_DECOY_FD,
	/* The driver's fd-table scan (nv_is_gpu_accessible), which compares
	 * f_op: an O_PATH file (no syscall reaches its f_op) with the real
	 * file's f_op until vgpu_decoy_end(). */
	VGPU_DECOY_WITNESS,
};

/*
 * A decoy of @real: a new file with @real's device number and private_data.
 * It holds a reference to @real until its own last reference goes (the
 * driver may keep it: REGISTER_FD). ERR_PTR on failure.
 */
struct file *vgpu_decoy_open(struct file *real, enum vgpu_decoy_kind kind);
/* The call is over: refusing f_op from now on; drops @decoy's reference. */
void vgpu_decoy_end(struct file *decoy);

#endif /* VGPU_KMOD_DECOY_H */

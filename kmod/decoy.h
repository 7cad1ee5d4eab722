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

/*
 * A decoy of @real for an fd field (nv_get_file_private): a new file with
 * @real's device number and private_data and refusing file operations. It
 * holds a reference to @real until its last reference goes (the driver may
 * keep it: REGISTER_FD). ERR_PTR on failure.
 */
struct file *vgpu_decoy_open(struct file *real);

/*
 * A decoy of @real for the driver's fd-table scan (nv_is_gpu_accessible),
 * which also compares f_op: an O_PATH file (no syscall reaches its f_op) that
 * carries @real's f_op until vgpu_decoy_witness_end(), which drops the
 * caller's reference. ERR_PTR on failure.
 */
struct file *vgpu_decoy_witness(struct file *real);
void vgpu_decoy_witness_end(struct file *witness);

#endif /* VGPU_KMOD_DECOY_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nvsim: a simulated NVIDIA driver for the test guest (tests/vm/nvsim/README.md).
 *
 * Locking (two locks, always taken in this order):
 *   nvsim_rm_lock (mutex)  - every RM client and object, vidmem accounting, each file's
 *                            REGISTER_FD link and mmap context pointer. Like RM's global API
 *                            lock, one RM call runs at a time; user copies happen outside it
 *                            where the params are private copies, inside it only for nested
 *                            control params (the lock is a mutex, faults may sleep).
 *   gpu->sched.lock (spin) - the GPU-time model of one GPU (nvsim_sched.c); taken under
 *                            nvsim_rm_lock or alone (debugfs, runtime queries).
 *   ctx->lock (mutex)      - the pages of one mmap context (fault path only).
 */
#ifndef NVSIM_H
#define NVSIM_H

#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include "nvsim_abi.h"
#include "nvsim_rmops.h"

#define NVSIM_MAX_GPUS 8

struct nvsim_tsg;

/* One perfmon utilisation sample as nvsim_perfmon.c takes it. */
struct nvsim_perfmon_sample {
	u64 ts_real;               /* the period's end, real-time ns; 0: never written */
	u32 util;                  /* GR busy over the period, 0.01 % units */
	pid_t pid;                 /* on the GPU at the period's end (init namespace), 0: none */
};

/* The perfmon sample ring of one GPU (nvsim_perfmon.c), under the scheduler's lock. */
struct nvsim_perfmon {
	ktime_t start;             /* the period being sampled began here */
	ktime_t next;              /* ... and ends here */
	u64 busy_start;            /* nvsim_sched.busy_ns at start */
	unsigned int head;         /* ring entry the next sample goes to */
	struct nvsim_perfmon_sample ring[NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL];
};

/* The simulated GPU time of one GPU: round-robin over runnable TSGs by timeslice. */
struct nvsim_sched {
	spinlock_t lock;
	struct list_head tsgs;     /* nvsim_tsg.node */
	struct nvsim_tsg *cur;     /* TSG on the GPU, NULL when idle */
	u64 slice_left_ns;         /* of cur's current timeslice */
	ktime_t last;              /* model advanced up to here */
	u64 busy_ns;
	u64 idle_ns;
	struct nvsim_perfmon pm;
};

struct nvsim_tsg {
	struct list_head node;
	u32 hclient;
	u32 htsg;
	pid_t pid;
	u32 engine_type;
	u64 timeslice_us;
	bool scheduled;            /* GPFIFO_SCHEDULE(bEnable) */
	unsigned int channels;
	unsigned int disabled_channels;
	u64 consumed_ns;
	u32 preemptions;
};

struct nvsim_gpu {
	unsigned int minor;
	u64 heap_bytes;            /* allocatable video memory (HEAP_SIZE) */
	u64 reserved_bytes;        /* TOTAL_RAM_SIZE - HEAP_SIZE */
	u64 used_bytes;            /* nvsim_rm_lock */
	struct nvsim_sched sched;
	struct dentry *debugfs;
};

/* One mmap context per file (nvidia-rm-abi.md §9.4), created by RM_MAP_MEMORY / RM_ALLOC_MEMORY. */
struct nvsim_mmap_ctx {
	u64 size;                  /* page aligned; mmap must map exactly this */
	u32 hclient;
	u32 hmemory;
	struct mutex lock;
	struct xarray pages;       /* page index -> struct page, allocated on fault */
};

/* file->private_data of every nvsim node. */
/* struct nvsim_file's first field: what nvsim_fget_rm_file checks in a private_data the real
 * driver would trust blindly. */
#define NVSIM_FILE_MAGIC 0x6e76736d /* "nvsm" */

struct nvsim_file {
	u32 magic; /* NVSIM_FILE_MAGIC; first, so that any private_data can be read for it */
	struct file *filp;
	struct nvsim_gpu *gpu;     /* NULL: the ctl node */
	struct file *ctl_filp;     /* REGISTER_FD target, reference held until release */
	struct nvsim_mmap_ctx *mmap_ctx;
	/*
	 * An export fd (a ctl file, nvsim_share.c; nv_file_private_t's handles, maxHandles,
	 * deviceInstance, metadata in the 580 driver): handles of the export client's dups,
	 * 0 = empty slot; freed with the file. nvsim_rm_lock.
	 */
	u32 *export_handles;
	u16 export_max;
	u32 export_device;
	u8 export_metadata[NV0000_OS_UNIX_EXPORT_OBJECT_FD_BUFFER_SIZE];
	/* NV_ESC_ATTACH_GPUS_TO_FD done (once per file) and the GPUs it holds (bit i: GPU i),
	 * nvsim_gpuid.c; nvsim_rm_lock. */
	bool fd_attached_set;
	u32 fd_attached;
};

struct nvsim_client {
	struct list_head node;     /* nvsim_clients */
	u32 handle;
	const void *owner;         /* clientOSInfo: the creating ctl nvsim_file (strict validation) */
	pid_t pid;
	char comm[TASK_COMM_LEN];
	struct xarray objects;     /* handle -> nvsim_obj */
	struct list_head children; /* objects whose parent is the client */
	u32 next_handle;
	unsigned int nobjects;
};

/*
 * The video memory of one allocation. Every Memory object that refers to it (the allocation
 * and each dup, export and import of it) holds a reference; it returns to the heap with the
 * last one, as the 580 driver's memory descriptor does (mem_mgr/mem.c memCopyConstruct_IMPL:
 * memdescAddRef, DupCount).
 */
struct nvsim_mem {
	unsigned int refs;
	u64 bytes;
};

struct nvsim_obj {
	u32 handle;
	u32 hclass;
	struct nvsim_client *client;
	struct nvsim_obj *parent;  /* NULL: child of the client */
	struct list_head children;
	struct list_head sibling;
	struct nvsim_gpu *gpu;     /* set for NV01_DEVICE_0 and everything below it */
	u64 vidmem;                /* bytes of video memory it refers to (class 0x40) */
	struct nvsim_mem *mem;     /* that memory, shared with its dups */
	/* RM_SHARE policies granting RS_ACCESS_DUP_OBJECT beyond the default (same pid). */
	bool share_all;
	u32 share_client;          /* a client handle, 0: none */
	pid_t share_pid;           /* 0: none */
	u64 sysmem;                /* bytes of nvsim_sysmem_bytes (class 0x3e) */
	u64 va_bytes;              /* a VA range's size (class 0x50a0), shared with its dups */
	u64 ptables;               /* video memory of its eager page tables (nvsim_va_range) */
	struct nvsim_tsg *tsg;     /* KEPLER_CHANNEL_GROUP_A */
	bool channel_disabled;     /* channels: FIFO_DISABLE_CHANNELS */
};

extern struct mutex nvsim_rm_lock;
extern struct nvsim_gpu nvsim_gpus[NVSIM_MAX_GPUS];
extern unsigned int nvsim_num_gpus;
extern unsigned long nvsim_sysmem_bytes; /* nvsim_rm_lock */
extern unsigned long nvsim_ptable_bytes; /* nvsim_rm_lock */
extern const struct file_operations nvsim_fops;

/* Where the params of one RM call live: the caller's user memory, or kernel memory
 * (the in-kernel entry point, nvsim_rmops.h). */
struct nvsim_caller {
	const void *os_info;       /* ctl nvsim_file the call acts for; NULL = kernel (no checks) */
	bool kernel;
};

int nvsim_copy_in(const struct nvsim_caller *c, void *dst, u64 src, size_t n);
int nvsim_copy_out(const struct nvsim_caller *c, u64 dst, const void *src, size_t n);

/* One RM control as the table in nvsim_ctrl.c hands it to its handler (nvsim_rm_lock held). */
struct nvsim_ctrl_ctx {
	const struct nvsim_caller *c;
	struct nvsim_client *cl;
	struct nvsim_obj *obj;
	struct nvsim_gpu *gpu;
};

/* nvsim_surface.c: NV0041_CTRL_CMD_GET_SURFACE_INFO (ctrl0041.h) on a class 0x40 object. */
#define NV0041_CTRL_CMD_GET_SURFACE_INFO 0x410110
#define NV0041_GET_SURFACE_INFO_PARAMS_SIZE 16
u32 nvsim_ctrl_surface_info(struct nvsim_ctrl_ctx *x, void *buf);

/* nvsim_rm.c, nvsim_ctrl.c, nvsim_mem.c: RM calls on normalized params; each sets the struct's
 * status. */
void nvsim_rm_alloc(const struct nvsim_caller *c, struct nvos64 *p);
void nvsim_rm_free(const struct nvsim_caller *c, struct nvos00 *p);
void nvsim_rm_control(const struct nvsim_caller *c, struct nvos54 *p);
void nvsim_rm_vid_heap(const struct nvsim_caller *c, struct nvos32 *p);
u32 nvsim_rm_vid_heap_alloc_size(const struct nvsim_caller *c, struct nvsim_client *cl,
				 struct nvsim_obj *dev, struct nvos32 *p);
void nvsim_rm_map_memory(const struct nvsim_caller *c, struct nvos33_with_fd *p);
void nvsim_rm_unmap_memory(const struct nvsim_caller *c, struct nvos34 *p);
void nvsim_rm_update_mapping_info(const struct nvsim_caller *c, struct nvos56 *p);
void nvsim_rm_alloc_memory(const struct nvsim_caller *c, struct nvos02_with_fd *p);
void nvsim_rm_free_file_clients(const void *os_info);
u32 nvsim_rm_check_client(const struct nvsim_caller *c, u32 hclient);

/*
 * nvsim_rm.c: the client table and object tree that nvsim_ctrl.c and nvsim_mem.c serve RM calls
 * on. nvsim_rm_lock held for all of them.
 */
extern struct list_head nvsim_clients;
struct nvsim_client *nvsim_client_get(const struct nvsim_caller *c, u32 handle, u32 *status);
struct nvsim_obj *nvsim_obj_find(struct nvsim_client *cl, u32 handle);
u32 nvsim_obj_insert(struct nvsim_client *cl, struct nvsim_obj *parent, struct nvsim_obj *obj,
		     u32 handle);
void nvsim_obj_destroy(struct nvsim_obj *root);

void nvsim_mem_put(struct nvsim_gpu *gpu, struct nvsim_mem *mem);

/* nvsim_share.c: objects shared between clients (RM_DUP_OBJECT, RM_SHARE, export fds). */
void nvsim_rm_dup(const struct nvsim_caller *c, struct nvos55 *p);
void nvsim_rm_share(const struct nvsim_caller *c, struct nvos57 *p);
u32 nvsim_ctrl_export_objects(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_import_objects(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_export_info(struct nvsim_ctrl_ctx *x, void *buf);

/* nvsim_fabric.c: NV00FD ATTACH_GPU and NV00E0 EXPORT_MEM (ctrl00fd.h, ctrl00e0.h). */
#define NV00FD_CTRL_CMD_ATTACH_GPU 0x00fd0104
#define NV00E0_CTRL_CMD_EXPORT_MEM 0x00e00101
struct nv00fd_attach_gpu_params {
	u32 hSubdevice;
	u32 flags;
	u64 devDescriptor;
};
struct nv00e0_export_mem_params {
	u16 index;
	u32 hParent;
	u32 handles[256];
	u16 numHandles;
	u64 devDescriptor;
};
_Static_assert(sizeof(struct nv00fd_attach_gpu_params) == 16, "ctrl00fd.h");
_Static_assert(offsetof(struct nv00e0_export_mem_params, devDescriptor) == 1040, "ctrl00e0.h");
u32 nvsim_ctrl_attach_gpu(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_export_mem(struct nvsim_ctrl_ctx *x, void *buf);
void nvsim_export_release(struct nvsim_file *nvf);
/* nvUvmInterfaceDupMemory / FreeDupedHandle: an RM-internal dup of the calling process's own
 * memory object (REJECT_KERNEL_DUP_PRIVILEGE), kept in the export client. nvsim_rm_lock. */
u32 nvsim_internal_dup(u32 hclient, u32 hobject, u32 *handle);
void nvsim_internal_dup_free(u32 handle);

/* nvsim_gpuid.c: GPU ids (PCI-derived, as the driver's), the NV0000 GPU controls,
 * NV_ESC_ATTACH_GPUS_TO_FD. */
unsigned int nvsim_gpu_pci_slot(unsigned int i);
u32 nvsim_gpu_id(unsigned int i);
int nvsim_attach_gpus_to_fd(struct nvsim_file *nvf, const u32 *ids, size_t n);
void nvsim_gpus_release(struct nvsim_file *nvf);
u32 nvsim_ctrl_gpu_attached_ids(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_gpu_probed_ids(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_gpu_attach_ids(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_gpu_detach_ids(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_gpu_id_info_v2(struct nvsim_ctrl_ctx *x, void *buf);
u32 nvsim_ctrl_gpu_pci_info(struct nvsim_ctrl_ctx *x, void *buf);
void nvsim_share_exit(void);

/* osIsGpuAccessible (§9.3.2), nvsim_rm.c */
bool nvsim_gpu_accessible(struct nvsim_gpu *gpu);
/* The nvsim_file of an open ctl or dev node (nvsim_open). */
static inline struct nvsim_file *nvsim_file_of(struct file *filp)
{
	return filp->private_data;
}

/* nvsim_mem.c: mmap of an RM node (nvidia-rm-abi.md §9.4); the context is freed at the file's release. */
int nvsim_mmap(struct file *filp, struct vm_area_struct *vma);
void nvsim_mmap_ctx_free(struct nvsim_mmap_ctx *ctx);

/* nvsim_hook.c: the tamper test hook around nvsim_ioctl's copy-in and copy-out (README.md). */
/* A store the hook made into the caller's memory, taken back after the copy-out. */
struct nvsim_undo {
	u32 __user *at; /* NULL: nothing to take back */
	u32 old;
};
bool nvsim_rewrite_alloc(unsigned int nr, void __user *uptr, size_t size, struct nvsim_undo *undo);
void nvsim_rewrite_alloc_after(void __user *uptr, size_t size);
void nvsim_rewrite_undo(const struct nvsim_undo *undo);
void nvsim_rewrite_xfer(void __user *uptr);
void nvsim_rewrite_uvm_status(unsigned int cmd, void __user *uptr, size_t size);
/* nvsim_sibling.c: a sibling's store into, or replacement of, a UVM map's params or an RM
 * escape's argument or nested params, just before nvsim copies them in. */
void nvsim_sibling_uvm(unsigned int cmd, void __user *uptr);
void nvsim_sibling_rm(unsigned int nr, void __user *uptr, size_t size);

/* nvsim_main.c: fd lookups (nvidia-rm-abi.md §9.3). */
struct nvsim_file *nvsim_fget_rm_file(int fd, bool want_ctl, struct file **filp, u32 *status);

/* nvsim_sched.c */
void nvsim_sched_init(struct nvsim_gpu *gpu);
struct nvsim_tsg *nvsim_sched_tsg_create(struct nvsim_gpu *gpu, u32 hclient, u32 htsg,
					 pid_t pid, u32 engine_type);
void nvsim_sched_tsg_destroy(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg);
void nvsim_sched_set_timeslice(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg, u64 us);
void nvsim_sched_set_scheduled(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg, bool on);
void nvsim_sched_channels(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg, int add, int disabled);
void nvsim_sched_preempt(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg);
void nvsim_sched_runtime(struct nvsim_gpu *gpu, struct nvsim_tsg *tsg,
			 struct nvsim_tsg_runtime_params *out);
void nvsim_sched_perfmon_copy(struct nvsim_gpu *gpu, struct nvsim_perfmon_sample *ring);
int nvsim_debugfs_init(void);
/* nvsim_perfmon.c: the perfmon utilisation samples, taken by nvsim_sched.c's clock. */
void nvsim_perfmon_init(struct nvsim_sched *s);
bool nvsim_perfmon_due(struct nvsim_sched *s, ktime_t now, ktime_t *at);
void nvsim_perfmon_take(struct nvsim_sched *s, ktime_t at, pid_t pid);
u32 nvsim_ctrl_perfmon_samples(struct nvsim_ctrl_ctx *x, void *buf);
/* nvsim_uvm.c */
struct class;
struct nvsim_gpu *nvsim_gpu_by_uuid(const u8 *uuid);
/* nvsim_uvm_ext.c: a UVM file's external ranges (its private data) */
void *nvsim_uvm_ext_open(void);
void nvsim_uvm_ext_release(void *priv);
long nvsim_uvm_ext_ioctl(void *priv, unsigned int cmd, void __user *up);
int nvsim_uvm_init(struct class *cls);
void nvsim_uvm_exit(struct class *cls);
void nvsim_debugfs_exit(void);

#endif /* NVSIM_H */

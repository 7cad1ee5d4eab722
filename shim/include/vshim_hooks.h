/*
 * vshim_hooks.h - what libvgpu-shim.so offers the compute-share thread (shim/compute).
 *
 * The compute part is linked into libvgpu-shim.so. The shim calls vshim_compute_start() once,
 * after the slot configuration is loaded and the filter core's slot exists, if that symbol is
 * linked in (it is weak here), and vshim_compute_stop() at process exit and in a fork child
 * before it re-initializes. From then on the compute part may:
 *   - get TSG and channel lifecycle callbacks (after the driver created or freed the object,
 *     outside every shim lock; the callback runs in the thread that issued the ioctl and must
 *     not block),
 *   - find the ctl fd that owns an RM client (the only file through which RM accepts controls
 *     on that client's TSGs, nvidia-rm-abi.md §9.2),
 *   - issue RM controls on it that bypass the filter (the shim's own traffic, never charged or
 *     refused), and
 *   - read the core's slot (TSG registry: vcore_slot_for_each_tsg, kmod/core/vcore.h).
 * All functions are thread-safe. C linkage, so C and C++ both use them.
 */
#ifndef VSHIM_HOOKS_H
#define VSHIM_HOOKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vcore_slot;

enum vshim_obj_event {
  VSHIM_TSG_CREATED = 1,     /* KEPLER_CHANNEL_GROUP_A and successors */
  VSHIM_TSG_FREED = 2,       /* explicit RM_FREE of the TSG (not client teardown) */
  VSHIM_CHANNEL_CREATED = 3, /* class 0x??6f */
  VSHIM_CHANNEL_FREED = 4,
  VSHIM_CLIENT_GONE = 5,       /* the ctl file owning h_client closed, or RM_FREE of the client */
  VSHIM_SUBDEVICE_CREATED = 6, /* NV20_SUBDEVICE_0; h_parent is its device */
  /*
   * NVA06C_CTRL_CMD_GPFIFO_SCHEDULE on a TSG succeeded with bEnable=1 / bEnable=0: the TSG went
   * onto / off the runlist. libcuda schedules a TSG at the end of context setup, after every
   * channel is UVM-bound (nvidia-rm-abi.md §6.1); until then it must not be gated or preempted
   * (docs/results/compute-h200.md, run 6).
   */
  VSHIM_TSG_SCHEDULED = 7,
  VSHIM_TSG_UNSCHEDULED = 8,
};

struct vshim_obj_info {
  enum vshim_obj_event event;
  uint32_t h_client;
  uint32_t h_parent; /* device for a TSG, TSG for a channel */
  uint32_t h_object;
  uint32_t h_class;
  uint32_t engine_type; /* TSG: NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS.engineType; else 0 */
  int ctl_fd;           /* the ctl fd the call came through */
};

typedef void (*vshim_obj_hook_fn)(void* arg, const struct vshim_obj_info* info);

/* Install (fn != NULL) or remove (fn == NULL) the single object hook. Returns 0. */
int vshim_set_obj_hook(vshim_obj_hook_fn fn, void* arg);

/* The open ctl fd through which h_client was allocated, or -1. */
int vshim_ctl_fd_for_client(uint32_t h_client);

/*
 * RM_CONTROL (NVOS54) on h_client's ctl fd, bypassing the filter. Returns the ioctl's result
 * (0 or -errno) and stores the RM status in *status (may be NULL).
 */
int vshim_rm_control(uint32_t h_client, uint32_t h_object, uint32_t cmd, void* params,
                     uint32_t params_size, uint32_t* status);

/* The core's slot of this process (NULL before the first NVIDIA open). */
struct vcore_slot* vshim_core_slot(void);

/* Slot configuration values not known to the shim (config-file keys), or NULL. */
const char* vshim_config_get(const char* key);

/*
 * Slot membership (docs/results/compute-h200.md): a slot may hold several processes, each with its
 * own shim, sharing the slot's ledger (shim/preload/ledger.h). 1 if `pid` (in this process's pid
 * namespace, as RM's perfmon samples name processes) is a live member of this process's slot, 0 if
 * it is not, -1 if the slot has no shared ledger (then this process is the whole slot). Takes the
 * ledger's process-shared lock and may read /proc (at most once a second): call it per perfmon
 * read and distinct pid, not per launch or sample.
 */
int vshim_slot_member(uint32_t pid);

/* One perfmon sample that named no process: its RM timestamp and GR busy time. */
struct vshim_busy_sample {
  uint64_t ts;
  uint64_t busy_ns;
};

/*
 * The compute controller's counters for this process, cumulative over its life, for the
 * manager's per-slot metrics: busy_ns (perfmon samples naming this process), throttled_ns (time
 * its gate held the channels off), the slot's achieved share over the last 1 s and 10 s as it
 * measured it, and the unattributed samples read since the last call (cap mode; oldest first).
 * Written into this process's ledger entry (SharedLedger::PublishCompute); call about once a second
 * from the control thread. 0, or -1 if the slot has no shared ledger.
 */
struct vshim_compute_counters {
  uint64_t busy_ns;
  uint64_t throttled_ns;
  uint32_t achieved_share_1s_pm;
  uint32_t achieved_share_10s_pm;
  uint32_t n_unattributed;
  const struct vshim_busy_sample* unattributed;
};
int vshim_publish_compute(const struct vshim_compute_counters* c);

/* Provided by shim/compute when linked in (weak references here). */
void vshim_compute_start(void) __attribute__((weak));
void vshim_compute_stop(void) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif /* VSHIM_HOOKS_H */

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vgpu_ledger.h - the on-disk format of a shim-mode slot's ledger: the file
 * that libvgpu-shim.so keeps the slot's memory charges and compute counters
 * in, and that vgpu-manager, `vgpuctl diagnose` and `vgpu-shim-ledger` read.
 *
 * One file per slot, sizeof(struct vgpu_ledger) bytes, native byte order (it
 * never leaves the node). Every process of the slot maps it MAP_SHARED and
 * updates it under `lock`. Readers never take the lock (a tenant could hold
 * it forever); they read a private copy:
 *
 * 1. `magic` 0, or a file shorter than the header: a shim is creating it.
 * 2. `magic` other than VGPU_LEDGER_MAGIC: not a ledger. `version` other
 *    than VGPU_LEDGER_VERSION: a shim of another release wrote it; the
 *    layout below does not apply.
 * 3. Copy the whole file, then read `seq` again. Even and unchanged: the
 *    copy is consistent. Odd: a member is moving its counters into the
 *    reaped_* totals; retry. Odd and unchanged for many tries: a member died
 *    mid-move; its counters count twice until the next writer evens `seq`
 *    (a jump up, never down).
 *
 * Every field a reader uses is written with single aligned 32- or 64-bit
 * stores, so a copy is at worst a moment stale, never torn.
 * shim/ledger/ledger_reader.h implements these rules; shim/preload/ledger.h
 * is the writer.
 *
 * The slot's figures from one consistent copy:
 * - charged: the sum of entries[i].charged over entries in use;
 * - peak: max(peak, charged);
 * - busy: the entries' gpu_busy_ns + reaped_busy_ns + unattributed_busy_ns;
 * - throttled: the entries' throttled_ns + reaped_throttled_ns (summed over
 *   processes);
 * - achieved share: achieved_share_1s_pm and achieved_share_10s_pm.
 * Busy and throttled never go down while the file exists (they are
 * Prometheus counters).
 *
 * Versions: 1 the first; 2 added high_water; 3 added the compute counters
 * (entries grew from 32 to 48 bytes: a version-2 shim cannot share a
 * version-3 file); 4 appended `clients` and `dups`, the memory the slot's
 * processes share with each other (CUDA IPC, torch.multiprocessing).
 */
#ifndef _UAPI_VGPU_LEDGER_H
#define _UAPI_VGPU_LEDGER_H

#include <stdint.h>

#define VGPU_LEDGER_MAGIC                                                      \
	0x31524447444c4756ULL /* "VGLDGDR1", little-endian                     \
			       */
#define VGPU_LEDGER_VERSION	4
#define VGPU_LEDGER_MAX_ENTRIES 1024
#define VGPU_LEDGER_MAX_CLIENTS 1024
#define VGPU_LEDGER_MAX_DUPS	1024
/* Bytes reserved for the writers' process-shared robust mutex (a glibc
 * pthread_mutex_t on x86_64 and arm64 fits). Opaque to readers. */
#define VGPU_LEDGER_LOCK_BYTES 40
/* The name of the ledger file inside a slot's shim directory. */
#define VGPU_LEDGER_FILE_NAME "ledger"

/*
 * One process of the slot, keyed by (pid, start_time).
 *   pid           in the slot's PID namespace (not the reader's)
 *   in_use        0: free
 *   start_time    field 22 of /proc/PID/stat: tells a reused pid apart
 *   charged       bytes of video memory this process's RM objects hold
 *   peak          highest `charged` of this process
 *   gpu_busy_ns   GPU busy in perfmon samples naming this process (cumulative)
 *   throttled_ns  time its compute gate held its channels off (cumulative)
 */
struct vgpu_ledger_entry {
	uint32_t pid;
	uint32_t in_use;
	uint64_t start_time;
	uint64_t charged;
	uint64_t peak;
	uint64_t gpu_busy_ns;
	uint64_t throttled_ns;
};

/*
 * Version 4: an RM client of a member, so that another member's
 * RM_DUP_OBJECT of its memory is known to stay inside the slot.
 *   pid       the member (0: free)
 *   h_client  its RM client handle
 */
struct vgpu_ledger_client {
	uint32_t pid;
	uint32_t h_client;
};
/*
 * Version 4: a dup one member holds of another member's object. The memory
 * stays charged once, to its owner; when the owner lets go first, its charge
 * moves to a holder (`bytes`), and from there to the next holder or out of
 * the slot when that dup goes.
 *   pid                 the holder (0: free)
 *   h_client, h_object  the owner's client and object
 *   bytes               the owner's charge, passed to this holder
 */
struct vgpu_ledger_dup {
	uint32_t pid;
	uint32_t h_client;
	uint32_t h_object;
	uint32_t pad;
	uint64_t bytes;
};
/*
 * The file.
 *   magic                  VGPU_LEDGER_MAGIC, stored last by the creator
 *   version, max_entries   VGPU_LEDGER_VERSION, VGPU_LEDGER_MAX_ENTRIES
 *   lock                   the writers' mutex; guards everything below
 *   last_reap_ns, reaped   writers' bookkeeping: when dead members were last
 *                          removed, and how many were
 *   peak                   highest slot total seen
 *   high_water             entries[high_water..] are all free
 *   achieved_share_10s_pm  the slot's share of the GPU over 10 s, permille,
 *                          as last written by any member
 *   seq                    odd while counters move from an entry to reaped_*
 *   reaped_busy_ns, reaped_throttled_ns  counters of members that left
 *   unattributed_busy_ns   cap mode: busy in samples naming no process, each
 *                          counted once
 *   unattributed_last_ts   newest such sample added (perfmon timestamp)
 *   achieved_share_1s_pm   the same over 1 s
 *   share_pid              the member that wrote it (0: none; the shares read
 *                          0 once it has left)
 *   clients, dups          version 4, above
 */
struct vgpu_ledger {
	uint64_t magic;
	uint32_t version;
	uint32_t max_entries;
	uint64_t lock[VGPU_LEDGER_LOCK_BYTES / 8];
	uint64_t last_reap_ns;
	uint64_t reaped;
	uint64_t peak;
	uint32_t high_water;
	uint32_t achieved_share_10s_pm;
	uint64_t seq;
	uint64_t reaped_busy_ns;
	uint64_t reaped_throttled_ns;
	uint64_t unattributed_busy_ns;
	uint64_t unattributed_last_ts;
	uint32_t achieved_share_1s_pm;
	uint32_t share_pid;
	struct vgpu_ledger_entry entries[VGPU_LEDGER_MAX_ENTRIES];
	struct vgpu_ledger_client clients[VGPU_LEDGER_MAX_CLIENTS];
	struct vgpu_ledger_dup dups[VGPU_LEDGER_MAX_DUPS];
};

/* The layout is a file format: pin it. */
#ifdef __cplusplus
#define VGPU_LEDGER_ASSERT static_assert
#else
#define VGPU_LEDGER_ASSERT _Static_assert
#endif
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger_entry) == 48,
		   "ledger entry layout");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, lock) == 16,
		   "ledger lock offset");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, seq) == 88,
		   "ledger seq offset");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, entries) == 136,
		   "ledger entries");
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger_client) == 8,
		   "ledger client layout");
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger_dup) == 24, "ledger dup layout");
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger) ==
			   136 + 48 * VGPU_LEDGER_MAX_ENTRIES +
				   8 * VGPU_LEDGER_MAX_CLIENTS +
				   24 * VGPU_LEDGER_MAX_DUPS,
		   "ledger size");
#undef VGPU_LEDGER_ASSERT

#endif /* _UAPI_VGPU_LEDGER_H */

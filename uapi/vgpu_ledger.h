/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vgpu_ledger.h - the on-disk format of a shim-mode slot's ledger: the file that
 * libvgpu-shim.so keeps the slot's memory charges and compute counters in, and that
 * vgpu-manager (metrics, control API), `vgpuctl diagnose` and `vgpu-shim-ledger` read.
 *
 * One file per slot, `sizeof(struct vgpu_ledger)` bytes, native byte order (it never leaves
 * the node). Every process of the slot maps it MAP_SHARED and updates it under `lock`;
 * readers never take the lock (a tenant could hold it forever) and read a copy instead:
 *
 *   1. `magic` 0 (or a file shorter than the header): a shim is creating it; nothing yet.
 *   2. `magic` other than VGPU_LEDGER_MAGIC: not a ledger. `version` other than
 *      VGPU_LEDGER_VERSION: a shim of another release; the layout below does not apply.
 *   3. Copy the whole file, then read `seq` again: if it is even and unchanged, the copy is
 *      consistent. Odd means a member is moving its counters into the reaped_* totals; retry.
 *      Odd and unchanged for many tries means a member died mid-move (its counters are then
 *      counted twice until the next writer evens `seq`, a jump up, never down).
 *
 * Every field a reader uses is written with single aligned 64- or 32-bit stores, so a copy
 * is at worst a moment stale, never torn. shim/ledger/ledger_reader.h implements these rules;
 * shim/preload/ledger.h is the writer.
 *
 * The slot's figures from one consistent copy:
 *   charged   = sum of entries[i].charged over in_use entries
 *   peak      = max(peak, charged)
 *   busy_ns   = sum of entries' gpu_busy_ns + reaped_busy_ns + unattributed_busy_ns
 *   throttled = sum of entries' throttled_ns + reaped_throttled_ns   (process-seconds)
 *   achieved  = achieved_share_1s_pm, achieved_share_10s_pm (permille of the GPU)
 * busy_ns and throttled never go down while the file exists (Prometheus counters).
 *
 * Versions: 1 first release; 2 added high_water; 3 added the compute counters (entries grew
 * from 32 to 48 bytes, so a version-2 shim cannot share a version-3 file).
 */
#ifndef _UAPI_VGPU_LEDGER_H
#define _UAPI_VGPU_LEDGER_H

#include <stdint.h>

#define VGPU_LEDGER_MAGIC 0x31524447444c4756ULL /* "VGLDGDR1", little-endian */
#define VGPU_LEDGER_VERSION 3
#define VGPU_LEDGER_MAX_ENTRIES 1024
/* Bytes reserved for the writers' process-shared robust mutex (a glibc pthread_mutex_t on
 * x86_64 and arm64 fits). Opaque to readers. */
#define VGPU_LEDGER_LOCK_BYTES 40
/* The name of the ledger file inside a slot's shim directory. */
#define VGPU_LEDGER_FILE_NAME "ledger"

/* One process of the slot, keyed by (pid, start_time). */
struct vgpu_ledger_entry {
	uint32_t pid;           /* in the slot's PID namespace (not the reader's) */
	uint32_t in_use;        /* 0: free */
	uint64_t start_time;    /* field 22 of /proc/PID/stat: tells a reused pid apart */
	uint64_t charged;       /* bytes of video memory this process's RM objects hold */
	uint64_t peak;          /* highest `charged` of this process */
	uint64_t gpu_busy_ns;   /* GPU busy in perfmon samples naming this process, cumulative */
	uint64_t throttled_ns;  /* time its compute gate held its channels off, cumulative */
};

struct vgpu_ledger {
	uint64_t magic;        /* VGPU_LEDGER_MAGIC, stored last by the creator */
	uint32_t version;      /* VGPU_LEDGER_VERSION */
	uint32_t max_entries;  /* VGPU_LEDGER_MAX_ENTRIES */
	uint64_t lock[VGPU_LEDGER_LOCK_BYTES / 8]; /* writers' mutex; guards all below */
	uint64_t last_reap_ns; /* writers' bookkeeping: when dead members were last removed */
	uint64_t reaped;       /* how many dead members were removed */
	uint64_t peak;         /* highest slot total seen */
	uint32_t high_water;   /* entries[high_water..] are all free (<= max_entries) */
	uint32_t achieved_share_10s_pm; /* slot's share of the GPU over 10 s, last written */
	uint64_t seq;          /* odd while counters move from an entry to reaped_* */
	uint64_t reaped_busy_ns;       /* gpu_busy_ns of members that left */
	uint64_t reaped_throttled_ns;  /* throttled_ns of members that left */
	uint64_t unattributed_busy_ns; /* cap mode: busy in samples naming no process, once each */
	uint64_t unattributed_last_ts; /* newest such sample added (perfmon timestamp) */
	uint32_t achieved_share_1s_pm; /* slot's share of the GPU over 1 s, last written */
	uint32_t share_pid;            /* the member that wrote it (0: none; reads 0 once gone) */
	struct vgpu_ledger_entry entries[VGPU_LEDGER_MAX_ENTRIES];
};

/* The layout is a file format: pin it. */
#ifdef __cplusplus
#define VGPU_LEDGER_ASSERT static_assert
#else
#define VGPU_LEDGER_ASSERT _Static_assert
#endif
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger_entry) == 48, "ledger entry layout");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, lock) == 16, "ledger lock offset");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, seq) == 88, "ledger seq offset");
VGPU_LEDGER_ASSERT(__builtin_offsetof(struct vgpu_ledger, entries) == 136, "ledger entries");
VGPU_LEDGER_ASSERT(sizeof(struct vgpu_ledger) == 136 + 48 * VGPU_LEDGER_MAX_ENTRIES,
		   "ledger size");
#undef VGPU_LEDGER_ASSERT

#endif /* _UAPI_VGPU_LEDGER_H */

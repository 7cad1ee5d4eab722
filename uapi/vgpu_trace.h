/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vgpu_trace.h - the ioctl trace record format of `vgpu-trace record` and
 * `vgpu-trace replay` (shim/trace/), and the replay summary.
 *
 * A recording is a text file (optionally gzip-compressed, ".jsonl.gz") with
 * one JSON object per line, in completion order. Two kinds of line:
 *
 * 1. An ioctl on an NVIDIA device file:
 *
 *    {"seq":N,"pid":N,"tid":N,"dev":"/dev/nvidiactl","fd":N,
 *     "req":"0xc030462b","rc":N,"errno":N,"in":"HEX","out":"HEX",
 *     "ptrs":[{"off":N,"in":"HEX","out":"HEX"}, ...]}
 *
 *    seq    position in the recording (shared by all recorded processes)
 *    pid    tgid of the caller; tid its thread
 *    dev    the path the fd was opened with (/dev/nvidiactl, /dev/nvidiaN,
 *           /dev/nvidia-uvm, ...); fd numbers are per pid
 *    req    the ioctl request word as issued, hex. For /dev/nvidia* RM
 *           nodes it is _IOC-encoded and only nr and size matter
 *           (nvidia-rm-abi.md §1.3); for /dev/nvidia-uvm it is the plain
 *           command number (§7)
 *    rc     ioctl's return value; errno: errno when rc < 0, else 0
 *    in     the top-level argument, _IOC_SIZE(req) bytes, before the call
 *    out    the same bytes after the call (RM writes its status there)
 *           Both are lowercase hex, two digits per byte. UVM lines may
 *           carry empty in/out: their sizes are implied by the command.
 *    ptrs   nested buffers the driver reads or writes through pointer
 *           fields of the argument: RM_ALLOC alloc params (@16) and
 *           rights mask (@24), RM_CONTROL params (@16), the XFER payload
 *           (@8), RM_GET_EVENT_DATA's event (@0). Each entry names its
 *           pointer field by "off", the offset in the top-level struct, and
 *           holds the buffer's bytes before ("in") and after ("out").
 *
 *    Deeper levels (disambiguation): a buffer whose pointer lives inside
 *    another nested buffer -- the params of an RM_CONTROL inside an XFER
 *    payload, the list of the deprecated FB_GET_INFO -- carries
 *    "parent":K, the index in "ptrs" of the buffer that holds its pointer,
 *    and "off" is then the pointer's offset inside that buffer. So an XFER
 *    wrapping RM_CONTROL records {"off":8,...} (the payload, index 0) and
 *    {"off":16,"parent":0,...} (the control params). Without "parent" the
 *    offset is in the top-level struct. An entry may instead give the
 *    buffer's address directly as "addr":N. A recorder built on the core
 *    can take the list from vcore_call_buffer(): its buffer i >= 1 is
 *    "ptrs" entry i - 1, and its parent p >= 1 is "parent": p - 1 (parent 0,
 *    the top-level struct, is written as no "parent"). Recorders that know no
 * deeper level simply omit those buffers; the core then sees a fault if it
 *    needs them.
 *
 * 2. An open or close of an NVIDIA device file (optional):
 *
 *    {"ev":"open"|"close","seq":N,"pid":N,"fd":N,"dev":PATH}
 *
 *    Replay works without them: a (pid, fd) first seen in an ioctl line is
 *    opened then, with the kind its "dev" names. The end of a recording is
 *    the exit of its processes: every file still open is closed, freeing
 *    what the driver frees on close (every RM client the file owns).
 *
 * Replay (`vgpu-trace replay [--quota BYTES] [--policy strict|permissive]
 * [--driver-version V] [-v] FILE...`) runs the filter core with the
 * recording as the driver: a call the core forwards gets the recorded "out"
 * bytes as the driver's reply; a call it refuses is not forwarded, so what
 * it would have created never exists. FILEs are replayed one after the
 * other into one slot. It prints exactly one line:
 *
 *    {"ioctls":N,"charged_peak_bytes":N,"charged_end_bytes":N,"denied":N,
 *     "unknown":{"escapes":["0x..",...],"controls":["0x..",...],
 *                "classes":["0x..",...]},"views_rewritten":N}
 *
 *    ioctls              calls the core decided (every line on an RM node)
 *    charged_peak_bytes  highest video-memory charge after any call
 *    charged_end_bytes   charge after the last file closed (0 unless leaked)
 *    denied              calls refused (quota, policy, malformed)
 *    unknown             escape numbers (UVM: command numbers), RM_CONTROL
 *                        commands and RM_ALLOC classes the 580 tables do not
 *                        know, as hex strings; at most 16 distinct of each
 *    views_rewritten     replies rewritten (memory totals, process lists)
 *
 * Exit status: 0 success, 1 unreadable or malformed recording, 2 usage.
 */
#ifndef VGPU_UAPI_TRACE_H
#define VGPU_UAPI_TRACE_H

/* Keys of a record line, for writers in C. */
#define VGPU_TRACE_KEY_SEQ    "seq"
#define VGPU_TRACE_KEY_PID    "pid"
#define VGPU_TRACE_KEY_TID    "tid"
#define VGPU_TRACE_KEY_DEV    "dev"
#define VGPU_TRACE_KEY_FD     "fd"
#define VGPU_TRACE_KEY_REQ    "req"
#define VGPU_TRACE_KEY_RC     "rc"
#define VGPU_TRACE_KEY_ERRNO  "errno"
#define VGPU_TRACE_KEY_IN     "in"
#define VGPU_TRACE_KEY_OUT    "out"
#define VGPU_TRACE_KEY_PTRS   "ptrs"
#define VGPU_TRACE_KEY_OFF    "off"
#define VGPU_TRACE_KEY_PARENT "parent"
#define VGPU_TRACE_KEY_ADDR   "addr"
#define VGPU_TRACE_KEY_EV     "ev"
#define VGPU_TRACE_EV_OPEN    "open"
#define VGPU_TRACE_EV_CLOSE   "close"

/* Offsets of the pointer fields recorders save (nvidia-rm-abi.md §3). */
#define VGPU_TRACE_PTR_ALLOC_PARAMS   16 /* NVOS21/NVOS64 pAllocParms */
#define VGPU_TRACE_PTR_ALLOC_RIGHTS   24 /* NVOS64 pRightsRequested */
#define VGPU_TRACE_PTR_CONTROL_PARAMS 16 /* NVOS54 params */
#define VGPU_TRACE_PTR_XFER_PAYLOAD   8	 /* nv_ioctl_xfer_t ptr */
#define VGPU_TRACE_PTR_EVENT	      0	 /* NVOS41 pEvent */

#endif /* VGPU_UAPI_TRACE_H */

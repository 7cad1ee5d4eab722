#!/usr/bin/env python3
"""Writes synthetic RM ioctl recordings (format: uapi/vgpu_trace.h) that mirror the libcuda and
nvidia-smi sequences measured on the H200 (nvidia-rm-abi.md §4.2, §5.2, §6.1), built from the
struct layouts of §3 -- for replay tests of paths the real corpus lacks: NVOS21-sized allocs, a
second process that frees explicitly while the first relies on close, and a 32-bit-wide CUDA
context built without open/close events.

    tests/data/traces/synthetic/make_synthetic.py      (rewrites *.jsonl.gz beside it)
"""
import gzip, json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
NV_ERR_NO_MEMORY = 0x51


def iowr(nr, size):
    return (3 << 30) | (size << 16) | (ord("F") << 8) | nr


class Trace:
    def __init__(self):
        self.lines, self.seq, self.ptr = [], 0, 0x7F0000001000

    def emit(self, obj):
        obj = dict(seq=self.seq, **obj)
        self.seq += 1
        self.lines.append(json.dumps(obj, separators=(",", ":")))

    def ev(self, ev, pid, fd, dev):
        self.emit(dict(ev=ev, pid=pid, fd=fd, dev=dev))

    def ioctl(self, pid, fd, dev, nr, arg_in, arg_out, ptrs=(), rc=0):
        self.emit(dict(pid=pid, tid=pid, dev=dev, fd=fd, req="0x%x" % iowr(nr, len(arg_in)), rc=rc,
                       errno=0, **{"in": arg_in.hex(), "out": arg_out.hex()},
                       ptrs=[dict(off=o, **{"in": i.hex(), "out": x.hex()}) for o, i, x in ptrs]))

    def next_ptr(self):
        self.ptr += 0x10000
        return self.ptr

    def alloc(self, pid, fd, h_root, h_parent, h_new, cls, params_in, params_out=None,
              status=0, reply_handle=None, nvos21=False):
        p = self.next_ptr()
        if nvos21:
            a_in = struct.pack("<IIIIQII", h_root, h_parent, h_new, cls, p, 0, 0)
            a_out = struct.pack("<IIIIQII", h_root, h_parent, reply_handle or h_new, cls, p, 0, status)
        else:
            a_in = struct.pack("<IIIIQQIIII", h_root, h_parent, h_new, cls, p, 0, 0, 0, 0, 0)
            a_out = struct.pack("<IIIIQQIIII", h_root, h_parent, reply_handle or h_new, cls, p, 0, 0,
                                0, status, 0)
        self.ioctl(pid, fd, "/dev/nvidiactl", 0x2B, a_in, a_out,
                   [(16, params_in, params_out if params_out is not None else params_in)])

    def free(self, pid, fd, h_root, h_parent, h_obj):
        a = struct.pack("<IIII", h_root, h_parent, h_obj, 0)
        self.ioctl(pid, fd, "/dev/nvidiactl", 0x29, a, a)

    def control(self, pid, fd, h_client, h_obj, cmd, params_in, params_out):
        p = self.next_ptr()
        a = struct.pack("<IIIIQII", h_client, h_obj, cmd, 0, p, len(params_in), 0)
        self.ioctl(pid, fd, "/dev/nvidiactl", 0x2A, a, a, [(16, params_in, params_out)])


def mem_params(size, flags=0x1C101, out_size=None):
    def pack(sz):
        b = bytearray(128)
        struct.pack_into("<I", b, 8, flags)
        struct.pack_into("<Q", b, 64, sz)
        struct.pack_into("<Q", b, 72, 2 * MiB)
        return bytes(b)
    return pack(size), pack(size if out_size is None else out_size)


def fb_v2(indices, values):
    i = bytearray(1028)
    o = bytearray(1028)
    for b in (i, o):
        struct.pack_into("<I", b, 0, len(indices))
    for k, (idx, val) in enumerate(zip(indices, values)):
        struct.pack_into("<II", i, 4 + 8 * k, idx, 0)
        struct.pack_into("<II", o, 4 + 8 * k, idx, val)
    return bytes(i), bytes(o)


def cuda_context(t, pid, fd, client, nvos21=False, events=True):
    dev, sub = 0x5C000001, 0x5C000002
    if events:
        t.ev("open", pid, fd, "/dev/nvidiactl")
    t.alloc(pid, fd, 0, 0, 0, 0x41, bytes(120), reply_handle=client, nvos21=nvos21)
    t.alloc(pid, fd, client, client, dev, 0x80, bytes(56), nvos21=nvos21)
    t.alloc(pid, fd, client, dev, sub, 0x2080, bytes(4), nvos21=nvos21)
    h = 0x5C000100
    # 17 context allocations, 518 MiB: 6 MiB then 16 x 32 MiB (nvidia-rm-abi.md §4.2).
    for size in [6 * MiB] + [32 * MiB] * 16:
        t.alloc(pid, fd, client, dev, h, 0x40, *mem_params(size), nvos21=nvos21)
        h += 1
    # libcuda asks its VA range LAZY (0x8c415 in every recording of tests/data/traces): an eager
    # one is refused under a quota (issue 17 F11.1).
    va_in, va_out = mem_params(4211081216, flags=0x8c415)
    t.alloc(pid, fd, client, dev, h, 0x50A0, va_in, va_out, nvos21=nvos21)
    h += 1
    # 4 TSGs: GR (engine 1) with 8 channels carrying compute + copy; 3 copy TSGs with 4 each.
    for engine, nch in ((1, 8), (11, 4), (12, 4), (13, 4)):
        tsg = h
        t.alloc(pid, fd, client, dev, tsg, 0xA06C, struct.pack("<IIIII", 0, 0, 0, engine, 0),
                nvos21=nvos21)
        h += 1
        for _ in range(nch):
            ch = h
            t.alloc(pid, fd, client, tsg, ch, 0xC86F, bytes(368), nvos21=nvos21)
            h += 1
            if engine == 1:
                t.alloc(pid, fd, client, ch, h, 0xCBC0, bytes(16), nvos21=nvos21)
                h += 1
            t.alloc(pid, fd, client, ch, h, 0xC8B5, bytes(8), nvos21=nvos21)
            h += 1
        if engine == 1:
            ts = struct.pack("<Q", 2048)
            t.control(pid, fd, client, tsg, 0xA06C0103, ts, ts)
    heap = 146591680
    t.control(pid, fd, client, sub, 0x20801303,
              *fb_v2([0x16, 0x09, 0x10], [heap - 527 * 1024, heap, 0]))
    return client, dev, sub, h


def main():
    t = Trace()
    c, dev, sub, h = cuda_context(t, 1001, 5, 0xC1D00001)
    # cuMemAlloc(3 GiB), then cuMemAlloc(200 GiB) refused by the driver twice, cuMemFree(3 GiB).
    t.alloc(1001, 5, c, dev, 0x5C100000, 0x40, *mem_params(3 << 30))
    for _ in range(2):
        t.alloc(1001, 5, c, dev, 0x5C100001, 0x40, *mem_params(200 << 30), status=NV_ERR_NO_MEMORY)
    # nvidia-smi in a second process: its own client, the memory view, explicit frees.
    t.ev("open", 2002, 3, "/dev/nvidiactl")
    t.alloc(2002, 3, 0, 0, 0, 0x41, bytes(120), reply_handle=0xC1D00002)
    t.alloc(2002, 3, 0xC1D00002, 0xC1D00002, 0x5D000001, 0x80, bytes(56))
    t.alloc(2002, 3, 0xC1D00002, 0x5D000001, 0x5D000002, 0x2080, bytes(4))
    t.control(2002, 3, 0xC1D00002, 0x5D000002, 0x20801303,
              *fb_v2([0x16, 0x08, 0x09], [146591680 - 3590 * 1024, 147221504, 146591680]))
    pids_in = bytearray(3812)
    pids_out = bytearray(3812)
    struct.pack_into("<III", pids_out, 0, 0, 0xCBC0, 1)
    struct.pack_into("<I", pids_out, 12, 1001)
    t.control(2002, 3, 0xC1D00002, 0x5D000002, 0x2080018D, bytes(pids_in), bytes(pids_out))
    t.free(2002, 3, 0xC1D00002, 0x5D000001, 0x5D000002)
    t.free(2002, 3, 0xC1D00002, 0xC1D00002, 0x5D000001)
    t.free(2002, 3, 0xC1D00002, 0, 0xC1D00002)
    t.ev("close", 2002, 3, "/dev/nvidiactl")
    t.free(1001, 5, c, dev, 0x5C100000)
    # pid 1001 exits without freeing: its context goes with the ctl file.
    with gzip.open(os.path.join(HERE, "cuda-context-and-smi.jsonl.gz"), "wt") as f:
        f.write("\n".join(t.lines) + "\n")

    # The same context through 32-byte NVOS21 allocs and without open/close events.
    t2 = Trace()
    cuda_context(t2, 3003, 7, 0xC1D00003, nvos21=True, events=False)
    with gzip.open(os.path.join(HERE, "cuda-context-nvos21-noevents.jsonl.gz"), "wt") as f:
        f.write("\n".join(t2.lines) + "\n")


if __name__ == "__main__":
    main()

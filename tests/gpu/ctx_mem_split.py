#!/usr/bin/env python3
"""Splits a vgpu-trace recording at every FB_GET_INFO_V2 reply (cuMemGetInfo) and prints, for each
stretch between two of them: how far HEAP_FREE fell, the class-0x40 bytes the driver allocated for
user RM_ALLOCs (which the core charges anyway), the rest (RM-internal: what no RM_ALLOC accounts
for), and the TSGs (by engine type) and channels (by their TSG's engine type) allocated and freed.
Also prints every GR_GET_CTX_BUFFER_SIZE answer. docs/nvidia-rm-abi.md §4.2, tests/gpu/ctx-mem.sh.
usage: ctx_mem_split.py TRACE.jsonl[.gz]...
"""
import gzip
import json
import struct
import sys

RM_ALLOC, RM_FREE, RM_CONTROL = 0x2B, 0x29, 0x2A
FB_GET_INFO_V2, HEAP_FREE = 0x20801303, 0x16
GR_GET_CTX_BUFFER_SIZE = 0x20801218
TSG = 0xA06C
CHANNELS = {0xC36F, 0xC46F, 0xC56F, 0xC86F, 0xC96F, 0xCA6F}
VIDMEM, VIRTUAL_FLAG = 0x40, 0x80000
MIB = float(1 << 20)


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0] if len(b) >= o + 4 else 0


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0] if len(b) >= o + 8 else 0


def params(line, off=16):
    for p in line.get("ptrs", []):
        if p.get("off") == off and "parent" not in p:
            return bytes.fromhex(p.get("in", "")), bytes.fromhex(p.get("out", ""))
    return b"", b""


def split(path):
    opener = gzip.open if path.endswith(".gz") else open
    objs = {}  # (client, handle) -> ("tsg", engine) | ("ch", engine) | ("mem", bytes)
    seg = None
    last_free = None
    rows = []

    def fresh():
        return {"tsgs": {}, "channels": {}, "freed_tsgs": 0, "freed_channels": 0, "vidmem": 0,
                "vidmem_freed": 0}

    seg = fresh()
    with opener(path, "rt") as f:
        for text in f:
            j = json.loads(text)
            if "ev" in j or j.get("rc", 0) != 0 or "uvm" in j.get("dev", ""):
                continue
            req = int(j["req"], 16)
            nr, size = req & 0xFF, (req >> 16) & 0x3FFF
            a_in, a_out = bytes.fromhex(j.get("in", "")), bytes.fromhex(j.get("out", ""))
            if nr == RM_ALLOC and size in (32, 48) and len(a_out) == size:
                if u32(a_out, 40 if size == 48 else 28) != 0:
                    continue
                client, parent, cls, h = u32(a_in, 0), u32(a_in, 4), u32(a_in, 12), u32(a_out, 8)
                p_in, p_out = params(j)
                if cls == TSG:
                    eng = u32(p_in, 12)
                    objs[(client, h)] = ("tsg", eng, parent)
                    seg["tsgs"][eng] = seg["tsgs"].get(eng, 0) + 1
                elif cls in CHANNELS:
                    eng = objs.get((client, parent), ("?", "none"))[1]
                    objs[(client, h)] = ("ch", eng, parent)
                    seg["channels"][eng] = seg["channels"].get(eng, 0) + 1
                elif cls == VIDMEM and not (u32(p_in, 8) & VIRTUAL_FLAG):
                    objs[(client, h)] = ("mem", u64(p_out, 64), parent)
                    seg["vidmem"] += u64(p_out, 64)
            elif nr == RM_FREE and len(a_out) >= 16 and u32(a_out, 12) == 0:
                client, obj = u32(a_in, 0), u32(a_in, 8)
                gone = [k for k, v in objs.items()
                        if k[0] == client and (obj == client or k[1] == obj or v[2] == obj)]
                for k in gone:
                    kind, val, _ = objs.pop(k)
                    if kind == "tsg":
                        seg["freed_tsgs"] += 1
                    elif kind == "ch":
                        seg["freed_channels"] += 1
                    elif kind == "mem":
                        seg["vidmem_freed"] += val
            elif nr == RM_CONTROL and size == 32:
                cmd = u32(a_in, 8)
                _, p_out = params(j)
                if cmd == GR_GET_CTX_BUFFER_SIZE:
                    print(f"  seq {j['seq']}: GR context buffers of channel 0x{u32(p_out, 0):x}: "
                          f"{u64(p_out, 8)} B ({u64(p_out, 8) / MIB:.2f} MiB)")
                elif cmd == FB_GET_INFO_V2:
                    for k in range(min(u32(p_out, 0), 128)):
                        if u32(p_out, 4 + 8 * k) != HEAP_FREE:
                            continue
                        free = u32(p_out, 8 + 8 * k) * 1024
                        if last_free is not None:
                            drop = last_free - free
                            internal = drop - (seg["vidmem"] - seg["vidmem_freed"])
                            row = {"seq": j["seq"], "pid": j.get("pid"), "drop_mib": drop / MIB,
                                   "vidmem_mib": (seg["vidmem"] - seg["vidmem_freed"]) / MIB,
                                   "internal_mib": internal / MIB, "tsgs": seg["tsgs"],
                                   "channels": seg["channels"], "freed_tsgs": seg["freed_tsgs"],
                                   "freed_channels": seg["freed_channels"]}
                            rows.append(row)
                            print("  " + json.dumps(row))
                        last_free = free
                        seg = fresh()
    return rows


def main():
    for path in sys.argv[1:]:
        print(f"== {path}")
        split(path)


if __name__ == "__main__":
    main()

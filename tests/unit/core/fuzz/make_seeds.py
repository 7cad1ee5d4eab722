#!/usr/bin/env python3
"""Builds the fuzz seed corpus from the recorded traces (tests/data/traces/*.jsonl.gz).

Each seed is a run of consecutive recorded ioctls in vcore_fuzz.cc's input format, with the
nested-params pointer (RM_ALLOC/RM_CONTROL @16, XFER @8) pointed at the harness's 0x20000 and
the recorded replies as the "driver". Run from the repository root:
    tests/unit/core/fuzz/make_seeds.py
"""
import glob, gzip, json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
OUT = os.path.join(HERE, "corpus")
CHUNK = 48

def blob(b):
    b = b[:0xffff]
    return struct.pack("<H", len(b)) + b

def record(line):
    if "ev" in line:
        return None
    dev = line.get("dev", "")
    fileidx = 3 if "uvm" in dev else (0 if dev.endswith("ctl") else 2)
    req = int(line["req"], 16)
    arg = bytearray(bytes.fromhex(line.get("in", "")))
    out = bytearray(bytes.fromhex(line.get("out", "")))
    p0 = r0 = b""
    nr = req & 0xff
    ptr_off = {0x2a: 16, 0x2b: 16, 0xd3: 8}.get(nr)
    for p in line.get("ptrs", []):
        if p.get("off") == ptr_off and "parent" not in p:
            p0, r0 = bytes.fromhex(p["in"]), bytes.fromhex(p["out"])
            for b in (arg, out):
                if len(b) >= ptr_off + 8:
                    b[ptr_off:ptr_off + 8] = struct.pack("<Q", 0x20000)
    rc = 0 if line.get("rc", 0) >= 0 else 200
    return (struct.pack("<BI", fileidx, req) + blob(bytes(arg)) + blob(p0) + blob(b"") +
            struct.pack("<B", rc) + blob(bytes(out)) + blob(r0))

def main():
    os.makedirs(OUT, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/data/traces/*.jsonl.gz"))):
        name = os.path.basename(path).split(".")[0]
        recs = [r for r in (record(json.loads(l)) for l in gzip.open(path, "rt") if l.strip()) if r]
        for i in range(0, len(recs), CHUNK * 4):  # every 4th window keeps the corpus small
            for flags in (0, 1):
                with open(os.path.join(OUT, f"{name}-{i:04d}-q{flags}"), "wb") as f:
                    f.write(bytes([flags]) + b"".join(recs[i:i + CHUNK]))

if __name__ == "__main__":
    main()

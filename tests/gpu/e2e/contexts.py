#!/usr/bin/env python3
"""A second CUDA context inside a slot with a memory quota (tests/gpu/e2e.sh part "contexts").
libcuda maps 2 MiB of /dev/nvidia-uvm for every context after a process's first: charged to the
quota (docs/security.md, F6), where it was refused before. Through ctypes on libcuda: the primary
context allocates 256 MiB; cuCtxCreate makes a second, which allocates 256 MiB of its own; then
contexts are created until the quota refuses one (at most 8) and destroyed again. The view
(cuMemGetInfo's free) after each step; one JSON line; creates READY and holds everything for
HOLD seconds so the harness can read the manager's metrics.
usage: contexts.py READY HOLD_S"""
import ctypes
import json
import os
import sys
import time

cu = ctypes.CDLL("libcuda.so.1")
MiB = 1 << 20


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what}: CUresult {rc}")


def free_now():
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    return free.value


def alloc(nbytes):
    ptr = ctypes.c_uint64()
    return cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), ptr


def create():
    ctx = ctypes.c_void_p()
    return cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), ctx


check(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
primary = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(primary), dev), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
out = {"pid": os.getpid(), "free_primary": free_now()}
out["primary_alloc"], _p1 = alloc(256 * MiB)
out["free_primary_alloc"] = free_now()
out["second_create"], second = create()  # current once created
held = []
if out["second_create"] == 0:
    out["free_second"] = free_now()
    out["second_alloc"], p2 = alloc(256 * MiB)
    out["free_second_alloc"] = free_now()
    more, out["more_refused"] = [], None
    for _ in range(8):
        rc, ctx = create()
        if rc != 0:
            out["more_refused"] = rc
            break
        more.append(ctx)
    out["more_contexts"] = len(more)
    check(cu.cuCtxSetCurrent(second), "cuCtxSetCurrent")
    out["free_more"] = free_now()
    for ctx in more:
        check(cu.cuCtxDestroy_v2(ctx), "cuCtxDestroy")
    check(cu.cuCtxSetCurrent(second), "cuCtxSetCurrent")
    out["free_after_destroy"] = free_now()
print(json.dumps(out), flush=True)
open(sys.argv[1], "w").close()
time.sleep(float(sys.argv[2]))

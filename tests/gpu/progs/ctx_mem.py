#!/usr/bin/env python3
"""Video memory the driver uses per CUDA context beyond what libcuda allocates itself.

usage: ctx_mem.py N [launch] [until-refused]
Creates one context, then N more (cuCtxCreate), reading cuMemGetInfo's free memory after each;
then destroys them one by one, reading it again. With "launch", every context also loads an
empty kernel and runs it once. With "until-refused", a refused context ends the creating (under a
quota: how many fit) instead of the program. Prints one JSON object per step. Run under `vgpu-trace-record`
to split each step's drop into the driver's allocations of class 0x40 (charged anyway) and the
rest (RM-internal: channels, TSGs, GR context buffers), tests/gpu/ctx-mem.sh. Set
CUDA_DEVICE_MAX_CONNECTIONS to vary the number of compute channels per context.
"""
import ctypes
import json
import os
import sys

PTX = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry empty() { ret; }
"""


def main():
    n = int(sys.argv[1])
    launch = "launch" in sys.argv[2:]
    until_refused = "until-refused" in sys.argv[2:]
    cu = ctypes.CDLL("libcuda.so.1")

    def check(rc, what):
        if rc != 0:
            raise SystemExit(f"{what}: CUresult {rc}")

    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")

    def create():
        ctx = ctypes.c_void_p()
        if hasattr(cu, "cuCtxCreate_v2"):
            check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate_v2")
        else:
            check(cu.cuCtxCreate_v4(ctypes.byref(ctx), None, 0, dev), "cuCtxCreate_v4")
        if launch:
            mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
            check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
            check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"empty"), "cuModuleGetFunction")
            check(cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None), "cuLaunchKernel")
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        return ctx

    def free_now():
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
        return free.value

    conns = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "default")
    ctxs = [create()]
    last = free_now()
    print(json.dumps({"conns": conns, "launch": launch, "step": "first", "free": last}), flush=True)
    for i in range(n):
        try:
            ctxs.append(create())
        except SystemExit as e:
            if not until_refused:
                raise
            print(json.dumps({"conns": conns, "step": f"create{i + 1}", "refused": str(e)}), flush=True)
            check(cu.cuCtxSetCurrent(ctxs[-1]), "cuCtxSetCurrent")
            break
        f = free_now()
        print(json.dumps({"conns": conns, "launch": launch, "step": f"create{i + 1}", "free": f,
                          "drop_mib": (last - f) / 2**20}), flush=True)
        last = f
    while len(ctxs) > 1:
        check(cu.cuCtxDestroy_v2(ctxs.pop()), "cuCtxDestroy")
        check(cu.cuCtxSetCurrent(ctxs[0]), "cuCtxSetCurrent")
        f = free_now()
        print(json.dumps({"conns": conns, "launch": launch, "step": f"destroy{len(ctxs)}", "free": f,
                          "rise_mib": (f - last) / 2**20}), flush=True)
        last = f


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""CUDA IPC between two processes of one slot, as torch.multiprocessing does it (tests/gpu/e2e.sh).
The parent allocates SIZE_MIB on the GPU, fills it and writes STAGE_FILE "parent"; the harness reads
the slot's charge. The parent then sends the tensor to a spawned child (the child inherits the
slot's environment); the child maps it, checks it, adds 1 in place and writes "child"; the harness
reads the charge again, then creates GO; the child exits and the parent checks the child's write.
With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torch shares the memory as
cuMemExportToShareableHandle POSIX fds, otherwise as legacy cudaIpcMemHandle handles.
Prints one JSON line. usage: ipc.py SIZE_MIB STAGE_FILE GO_FILE"""
import json
import os
import sys
import time

import torch
import torch.multiprocessing as mp


def stage(path, what):
    with open(path + ".tmp", "w") as f:
        f.write(what)
    os.replace(path + ".tmp", path)


def wait(path, timeout=60):
    t = time.monotonic()
    while not os.path.exists(path) and time.monotonic() - t < timeout:
        time.sleep(0.05)


def holds(t, v):
    """Every byte of t is v, checked by reductions: (t == v).all() would allocate a bool tensor as
    large as t, 4 GiB more in the slot, and the harness's charged-once check would see it."""
    return t.min().item() == v and t.max().item() == v


def child(q, done, stage_file, go_file):
    t = q.get()
    ok = holds(t, 7)
    t.add_(1)
    torch.cuda.synchronize()
    stage(stage_file, "child")
    wait(go_file)
    done.put(ok)
    del t


def main():
    size_mib, stage_file, go_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    t = torch.full((size_mib << 20,), 7, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    stage(stage_file, "parent")
    p = ctx.Process(target=child, args=(q, done, stage_file, go_file))
    p.start()
    q.put(t)
    try:
        child_saw = done.get(timeout=45)
    except Exception:  # queue.Empty: the child died or could not map the memory
        child_saw = False
    p.join(15)
    if p.exitcode is None:
        p.kill()
    ok = child_saw and holds(t, 8)
    print(json.dumps({"child_exit": p.exitcode, "child_read_ok": child_saw, "shared_write_ok": ok,
                      "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}), flush=True)
    return 0 if ok and p.exitcode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

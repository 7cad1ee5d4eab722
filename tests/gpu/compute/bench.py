#!/usr/bin/env python3
"""Compute-share benchmark for one tenant process on a real GPU.

Runs a workload through phases; each phase sets the process's compute share by writing
"<share> <cap|weight>" to the preload's control file (VGPU_COMPUTE_CTL_FILE) and then measures
throughput in 1 s windows (and 100 ms bins for hand-over). Prints one JSON object per phase.

Workloads (the issue's acceptance loops):
  matmul  bf16 4096x4096x4096 torch.matmul, 8 per step
  graph   the same 8 matmuls captured once in a CUDA graph, replayed
  spin    one torch.cuda._sleep kernel of ~--spin-ms per step. NOT a measure of work: _sleep
          spins until clock64() has advanced by N cycles, and clock64 is a per-SM counter that
          keeps counting while the kernel is switched out ("threads are time sliced", CUDA C++
          Programming Guide, clock()), so a preempted _sleep kernel still ends on time.
  burn    one kernel of 528 blocks (4 per SM on the H200's 132, all resident at once) whose every
          thread runs a chain of dependent FMAs for ~--spin-ms: a long-running kernel with a
          fixed amount of work, so its completion rate drops if it is kept off the GPU (CuPy).

Steps are pipelined two deep (CUDA events), so the GPU never waits on Python, and each step's
completion time is taken when its event completes.
"""
import argparse
import json
import os
import sys
import time

import torch


def set_share(path, share, mode):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{share} {mode}")
    os.replace(tmp, path)


def make_step(kind, spin_ms, burn_iters=0):
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    if kind == "matmul":
        def step():
            for _ in range(8):
                torch.matmul(a, b, out=c)
        return step
    if kind == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.matmul(a, b, out=c)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(8):
                torch.matmul(a, b, out=c)
        return g.replay
    if kind == "spin":
        # Calibrate cycles per ms once (clocks differ between idle and busy).
        torch.cuda._sleep(1000000)
        torch.cuda.synchronize()
        t = time.monotonic()
        torch.cuda._sleep(200000000)
        torch.cuda.synchronize()
        cycles_per_ms = 200000000 / ((time.monotonic() - t) * 1000)
        n = int(cycles_per_ms * spin_ms)
        return lambda: torch.cuda._sleep(n)
    if kind == "burn":
        import cupy as cp
        k = cp.RawKernel(r"""
        extern "C" __global__ void burn(float* out, long long iters) {
          float a = threadIdx.x * 1e-6f;
          for (long long i = 0; i < iters; i++) a = fmaf(a, 0.999999f, 1e-7f);
          if (a == -1.0f) out[blockIdx.x] = a;  // never true; keeps the chain alive
        }""", "burn")
        out = cp.zeros(528, dtype=cp.float32)
        # On torch's stream, so the torch events of run_phase() order after the kernel.
        stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)

        def burn(iters):
            with stream:
                k((528,), (256,), (out, cp.int64(iters)))
        burn(1000)
        torch.cuda.synchronize()
        n = burn_iters
        if n == 0:
            # Calibrated here only when not given: a capped process calibrates under its cap and
            # would size its kernels to the cap (fullshim.sh passes the bare run's count).
            t = time.monotonic()
            burn(20_000_000)
            torch.cuda.synchronize()
            n = int(20_000_000 * spin_ms / ((time.monotonic() - t) * 1000))
        print(f"burn: {n} FMA iterations per thread for ~{spin_ms:.0f} ms", file=sys.stderr)
        make_step.iters = n
        return lambda: burn(n)
    raise SystemExit(f"unknown workload {kind}")


def run_phase(step, seconds, start_at=None):
    """Runs steps until the phase ends; returns completion times relative to the phase start."""
    if start_at is not None:
        while time.monotonic() < start_at:
            time.sleep(0.001)
    t0 = time.monotonic()
    done = []
    inflight = []
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        step()
        ev = torch.cuda.Event()
        ev.record()
        inflight.append(ev)
        if len(inflight) > 2:
            inflight.pop(0).synchronize()
            done.append(time.monotonic() - t0)
    for ev in inflight:
        ev.synchronize()
        done.append(time.monotonic() - t0)
    return t0, done


def bins(done, width, seconds):
    n = int(seconds / width + 1e-9)
    out = [0] * n
    for d in done:
        i = int(d / width)
        if i < n:
            out[i] += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="matmul")
    ap.add_argument("--phases", required=True, help="share:mode:seconds,...")
    ap.add_argument("--spin-ms", type=float, default=1000)
    ap.add_argument("--burn-iters", type=int, default=0,
                    help="burn: FMA iterations per thread (default: calibrated to --spin-ms)")
    ap.add_argument("--start-at", type=float, default=None,
                    help="CLOCK_MONOTONIC time at which the first phase starts")
    ap.add_argument("--tag", default="")
    ap.add_argument("--warmup-s", type=float, default=0,
                    help="warm up for this long (default: 20 steps, 2 for spin/burn)")
    args = ap.parse_args()
    ctl = os.environ.get("VGPU_COMPUTE_CTL_FILE", "")
    step = make_step(args.workload, args.spin_ms, args.burn_iters)
    for _ in range(2 if args.workload in ("spin", "burn") else 20):  # cuBLAS handles, clocks
        step()
    torch.cuda.synchronize()
    # A tenant capped from its first kernel runs uncapped while its context settles and then
    # pays that back (compute_objects.cc, "Scheduled TSGs only"): --warmup-s keeps that start out
    # of the measured phases, the same for the bare run it is compared with.
    t = time.monotonic()
    while time.monotonic() - t < args.warmup_s:
        step()
        torch.cuda.synchronize()
    first = True
    for ph in args.phases.split(","):
        share, mode, secs = ph.split(":")
        secs = float(secs)
        set_share(ctl, share, mode)
        t0, done = run_phase(step, secs, args.start_at if first else None)
        first = False
        rec = {
            "tag": args.tag, "workload": args.workload, "share": int(share), "mode": mode,
            "seconds": secs, "t0": t0, "steps": len(done),
            "per_s": bins(done, 1.0, secs), "per_100ms": bins(done, 0.1, secs),
        }
        if args.workload == "burn":
            rec["iters"] = make_step.iters  # the work of one step
        print(json.dumps(rec), flush=True)
    set_share(ctl, 100, "cap")


if __name__ == "__main__":
    sys.exit(main())

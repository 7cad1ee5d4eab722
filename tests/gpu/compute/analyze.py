#!/usr/bin/env python3
"""Summarizes results.jsonl from tests/gpu/compute/run.sh into the acceptance table.

Cap: throughput in every 1 s window after the first second of a phase, relative to the
uncapped (share 100) phase of the same process (median of its windows after the first).
Weight: A/(A+B) steps per 1 s window while both run (same workload, so steps are GPU time);
hand-over = first 100 ms bin after B's phase ended in which A runs at >= 95 % of its alone rate.
"""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def caps(recs, tag):
    phases = [r for r in recs if r["tag"] == tag]
    if not phases:
        return
    base_windows = [w for r in phases if r["share"] == 100 for w in r["per_s"][1:]]
    if not base_windows:
        print(f"{tag}: no uncapped phase")
        return
    base = statistics.median(base_windows)
    print(f"\n{tag}: uncapped {base:.1f} steps/s (median of {len(base_windows)} windows)")
    print(f"{'cap':>5} {'windows':>8} {'min %':>7} {'median %':>9} {'max %':>7} "
          f"{'worst err':>9}  within 5 pts")
    for r in phases:
        if r["share"] == 100:
            continue
        rel = [100.0 * w / base for w in r["per_s"][1:]]
        worst = max(abs(x - r["share"]) for x in rel)
        print(f"{r['share']:>5} {len(rel):>8} {min(rel):7.1f} {statistics.median(rel):9.1f} "
              f"{max(rel):7.1f} {worst:9.1f}  {'yes' if worst <= 5 else 'NO'}")
    return base


def spin(recs, tag):
    phases = [r for r in recs if r["tag"] == tag]
    if not phases:
        return
    free = [r for r in phases if r["share"] == 100]
    capped = [r for r in phases if r["share"] != 100]
    # Completions inside the phase only: `steps` also counts the in-flight kernels drained
    # after the phase ended, which for 1 s kernels is most of a short phase.
    rate = sum(free[0]["per_s"]) / free[0]["seconds"] if free else 0
    print(f"\n{tag} (long kernel): uncapped {rate:.2f} kernels/s")
    for r in capped:
        got = sum(r["per_s"]) / r["seconds"]
        print(f"  cap {r['share']}: {sum(r['per_s'])} kernels in {r['seconds']:.0f} s = "
              f"{100 * got / rate if rate else 0:.1f} % of uncapped; per 1 s: {r['per_s']}")


def weight(recs):
    a = [r for r in recs if r["tag"] == "weightA"]
    b = [r for r in recs if r["tag"] == "weightB"]
    if not a or not b:
        return
    a, b = a[0], b[0]
    off = b["t0"] - a["t0"]
    print(f"\nweight 30/70 (start offset {1000 * off:.0f} ms)")
    splits = []
    for i in range(1, int(b["seconds"])):
        x, y = a["per_s"][i], b["per_s"][i]
        if x + y:
            splits.append(100.0 * x / (x + y))
    if splits:
        worst = max(abs(s - 30) for s in splits)
        print(f"  A share per 1 s window (target 30): {[round(s, 1) for s in splits]}")
        print(f"  worst error {worst:.1f} points: {'within 5' if worst <= 5 else 'NOT within 5'}")
    stop = b["t0"] + b["seconds"] - a["t0"]
    bins = a["per_100ms"]
    alone = bins[int((stop + 1.5) / 0.1):]
    alone_rate = statistics.median(alone) if alone else 0
    took = None
    for i in range(int(stop / 0.1), len(bins)):
        if alone_rate and bins[i] >= 0.95 * alone_rate:
            took = (i + 1) * 0.1 - stop
            break
    print(f"  B stopped at {stop:.2f} s; A alone {alone_rate} steps/100 ms; "
          f"A at >= 95 % after {'%.0f ms' % (1000 * took) if took is not None else 'never'}")
    print(f"  A per 100 ms around the stop: {bins[max(0, int(stop / 0.1) - 5):int(stop / 0.1) + 10]}")


def main():
    recs = load(sys.argv[1])
    bare = [r for r in recs if r["tag"] == "bare"]
    base = caps(recs, "matmul")
    caps(recs, "graph")
    caps(recs, "timecap")
    if bare and base:
        b = statistics.median(bare[0]["per_s"][1:])
        print(f"\nuncapped overhead (matmul, preload at share 100 vs no preload): "
              f"{b:.1f} vs {base:.1f} steps/s = {100 * (b - base) / b:+.2f} %")
    spin(recs, "spin")
    spin(recs, "burn")
    weight(recs)


if __name__ == "__main__":
    main()

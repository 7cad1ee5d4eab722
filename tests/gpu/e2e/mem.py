#!/usr/bin/env python3
"""Memory and views inside a slot (tests/gpu/e2e.sh): what the process is told the GPU has
(torch.cuda.mem_get_info, the view the shim gives), then allocates 64 MiB blocks until CUDA
refuses, prints one JSON line, creates READY and holds the memory for HOLD seconds so the harness
can read the driver's own per-process figure and the manager's metrics.
usage: mem.py READY HOLD_S"""
import json
import os
import sys
import time

import torch

free0, total = torch.cuda.mem_get_info()
blocks, mib, err = [], 0, ""
try:
    while mib < 1 << 20:
        blocks.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
        mib += 64
except RuntimeError as e:  # torch.OutOfMemoryError is one
    err = str(e).splitlines()[0][:160]
torch.cuda.synchronize()
print(json.dumps({"pid": os.getpid(), "view_total": total, "view_free_at_start": free0,
                  "allocated_mib": mib, "refusal": err}), flush=True)
open(sys.argv[1], "w").close()
time.sleep(float(sys.argv[2]))

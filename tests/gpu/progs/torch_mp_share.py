# torch.multiprocessing with a CUDA tensor: the parent sends a tensor through a Queue, a spawned
# child adds 1 in place, the parent sees it. With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
# PyTorch shares the segment as a POSIX fd (cuMemExportToShareableHandle); without it, as a legacy
# IPC handle (cudaIpcGetMemHandle). Prints "RESULT torch-mp alloc=CONF ok" or "... FAIL".
import os
import sys

import torch
import torch.multiprocessing as mp

N = 1 << 20  # 4 MiB of fp32


def child(q, r):
    t = q.get()
    t += 1
    torch.cuda.synchronize()
    r.put(float(t.sum().item()))
    del t


if __name__ == "__main__":
    mp.set_start_method("spawn")
    q, r = mp.Queue(), mp.Queue()
    t = torch.ones(N, device="cuda")
    p = mp.Process(target=child, args=(q, r))
    p.start()
    q.put(t)
    seen = r.get(timeout=180)
    p.join(180)
    torch.cuda.synchronize()
    mine = float(t.sum().item())
    ok = seen == 2 * N and mine == 2 * N and p.exitcode == 0
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") or "default"
    print(f"child sum {seen} parent sum {mine} child exit {p.exitcode}")
    print(f"RESULT torch-mp alloc={conf} {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)

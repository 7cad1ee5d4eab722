# NCCL all_reduce with 2 ranks on ONE GPU (torchrun --nproc_per_node=2): NCCL normally refuses
# two ranks on the same device ("Duplicate GPU detected"); this records whether it does.
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(0)
t = torch.ones(1 << 20, device="cuda") * (dist.get_rank() + 1)
dist.all_reduce(t)
torch.cuda.synchronize()
ok = float(t[0]) == 3.0
print(f"RESULT nccl-one-gpu rank={dist.get_rank()} value={float(t[0])} {'ok' if ok else 'FAIL'}")
dist.destroy_process_group()
raise SystemExit(0 if ok else 1)

# A small PyTorch training step loop (MLP + AdamW), for the corpus and the overhead bench.
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 0
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)
).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=dev)
y = torch.randn(256, 1024, device=dev)


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(warmup):
    step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
ms = (time.perf_counter() - t0) * 1e3 / max(steps, 1)
free, total = torch.cuda.mem_get_info()
print(f"RESULT ms_per_step={ms:.4f}")
print(f"torch_train steps={steps} loss={loss.item():.4f} s={time.perf_counter() - t0:.3f} "
      f"mem_get_info free={free} total={total}")

# A small PyTorch training step loop (MLP + AdamW), for the corpus and the overhead bench.
# usage: torch_train.py [STEPS=5] [WARMUP=0] [BATCHES=1] [small|large]
# small (default): a 1024-4096-1024 fp32 MLP, batch 256: ~1 ms/step, bound by Python and launches.
# large: a 4096-16384-4096 bf16 MLP, batch 8192: ~10 ms/step on an H200, bound by the GPU, the
# kind of step a training job runs (its process-to-process spread is far below the small one's).
# Times BATCHES batches of STEPS steps after WARMUP steps (torch.cuda.synchronize around each
# batch) and prints "RESULT ms_per_step=MEDIAN ms_min=MIN ioctls_in_steps=K": the median and
# the fastest batch, and the ioctls the measured steps made through libvgpu-shim.so's wrapper
# when it runs with VGPU_SHIM_COUNT=1 (else n/a).
import ctypes
import statistics
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 0
batches = int(sys.argv[3]) if len(sys.argv) > 3 else 1
size = sys.argv[4] if len(sys.argv) > 4 else "small"
torch.manual_seed(0)
dev = torch.device("cuda")
width, hidden, batch, dtype = (1024, 4096, 256, torch.float32) if size == "small" else (
    4096, 16384, 8192, torch.bfloat16)
model = torch.nn.Sequential(
    torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, width)
).to(dev, dtype)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(batch, width, device=dev, dtype=dtype)
y = torch.randn(batch, width, device=dev, dtype=dtype)


class Counters(ctypes.Structure):  # struct vshim_counters, shim/include/vshim_diag.h
    _fields_ = [(n, ctypes.c_uint64) for n in ("ioctls", "nvidia_ioctls", "mmaps", "opens", "closes")] + [
        ("enabled", ctypes.c_uint32), ("reserved", ctypes.c_uint32)]


def counters():
    try:
        fn = ctypes.CDLL(None).vshim_get_counters
    except AttributeError:
        return None
    c = Counters()
    fn(ctypes.byref(c))
    return c if c.enabled else None


def step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return loss


for _ in range(warmup):
    step()
torch.cuda.synchronize()
c0 = counters()
t_all = time.perf_counter()
per_step = []
for _ in range(batches):
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    per_step.append((time.perf_counter() - t0) * 1e3 / max(steps, 1))
c1 = counters()
io = str(c1.ioctls - c0.ioctls) if c0 and c1 else "n/a"
free, total = torch.cuda.mem_get_info()
print(f"RESULT ms_per_step={statistics.median(per_step):.4f} ms_min={min(per_step):.4f} "
      f"ioctls_in_steps={io}")
print(f"torch_train steps={steps}x{batches} loss={loss.item():.4f} s={time.perf_counter() - t_all:.3f} "
      f"mem_get_info free={free} total={total}")

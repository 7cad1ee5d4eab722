# PyTorch under a quota: 256 MiB tensors until OOM, then 1 MiB tensors until OOM.
# Prints "RESULT exc=<type> allocated=N free=N total=N" (mem_get_info after the last OOM).
import torch

MiB = 1 << 20
held = []
allocated = 0
exc = "none"
# 1 MiB tensors come from 2 MiB segments (small pool), so the last success lands within one
# 2 MiB granule of the limit; 2 MiB tensors would use 20 MiB segments.
for step in (256 * MiB, 1 * MiB):
    while True:
        try:
            held.append(torch.empty(step, dtype=torch.uint8, device="cuda"))
            allocated += step
        except Exception as e:  # the type is what we check
            exc = type(e).__module__ + "." + type(e).__qualname__
            break
free, total = torch.cuda.mem_get_info()
print(f"RESULT exc={exc} allocated={allocated} free={free} total={total} "
      f"reserved={torch.cuda.memory_reserved()}")

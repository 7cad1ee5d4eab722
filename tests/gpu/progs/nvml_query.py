# NVML queries for the corpus and the view checks: memory (v1, v2), processes, utilization,
# BAR1. Prints one key=value line per query.
import os

import pynvml as n

n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
print("name", n.nvmlDeviceGetName(h))
m = n.nvmlDeviceGetMemoryInfo(h)
print(f"mem_v1 total={m.total} free={m.free} used={m.used}")
try:
    m2 = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
    print(f"mem_v2 total={m2.total} free={m2.free} used={m2.used} reserved={m2.reserved}")
except Exception as e:  # older bindings
    print("mem_v2 error", e)
for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
    try:
        procs = getattr(n, fn)(h)
        print(fn, [(p.pid, p.usedGpuMemory) for p in procs])
    except Exception as e:
        print(fn, "error", e)
try:
    u = n.nvmlDeviceGetUtilizationRates(h)
    print(f"util gpu={u.gpu} mem={u.memory}")
except Exception as e:
    print("util error", e)
try:
    b = n.nvmlDeviceGetBAR1MemoryInfo(h)
    print(f"bar1 total={b.bar1Total} free={b.bar1Free}")
except Exception as e:
    print("bar1 error", e)
try:
    print("procutil", len(n.nvmlDeviceGetProcessUtilization(h, 0)))
except Exception as e:
    print("procutil error", e)
n.nvmlShutdown()
print("nvml_query pid", os.getpid())

# CUDA graphs through PyTorch: capture a small MLP step once, replay it.
import torch

dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                            torch.nn.Linear(4096, 1024)).to(dev)
x = torch.randn(256, 1024, device=dev)
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = model(x)
for _ in range(10):
    g.replay()
torch.cuda.synchronize()
ref = model(x)
ok = torch.allclose(out, ref, atol=1e-4)
print(f"RESULT cuda-graph {'ok' if ok else 'FAIL'}")
raise SystemExit(0 if ok else 1)

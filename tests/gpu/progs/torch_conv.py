# cuBLAS and cuDNN through PyTorch: a conv net forward + backward (cuDNN, benchmark mode picks
# algorithms) and a linear layer (cuBLAS), a few steps.
import torch

torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")
net = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3, padding=1),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(32, 3, 64, 64, device=dev)
y = torch.randint(0, 10, (32,), device=dev)
for _ in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print(f"RESULT cudnn-conv loss={loss.item():.3f} cudnn={torch.backends.cudnn.version()} ok")

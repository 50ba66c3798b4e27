"""Deterministic PyTorch training for the gpu suite: prints the loss of every step, bit for bit
(float.hex), so that a run suspended and resumed mid-training can be compared with one that was
not. Between steps it reads nothing; the test suspends it from outside while it trains.

usage: torch_train.py STEPS [BALLAST_GIB] [PAUSE_MS]
  BALLAST_GIB  GiB allocated and freed first, so that PyTorch's caching allocator holds them
  PAUSE_MS     sleep after each step, so that a signal lands mid-training"""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

steps = int(sys.argv[1])
ballast = float(sys.argv[2]) if len(sys.argv) > 2 else 0
pause = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
dev = torch.device("cuda")

if ballast:
    blocks = [torch.empty(256 << 20, dtype=torch.uint8, device=dev) for _ in range(int(ballast * 4))]
    del blocks  # the caching allocator keeps the memory reserved

g = torch.Generator(device=dev).manual_seed(1)
x = torch.randn(4096, 512, device=dev, generator=g)
w_true = torch.randn(512, 10, device=dev, generator=g)
y = (x @ w_true).argmax(dim=1)
model = torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print("ready", os.getpid(), f"reserved_mib={torch.cuda.memory_reserved() >> 20}", flush=True)
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} {float(loss.item()).hex()}", flush=True)
    if pause:
        time.sleep(pause)
print("done", flush=True)

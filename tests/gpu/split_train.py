"""A PyTorch model split across two GPUs, half the layers on each, activations and gradients
copied between them (PyTorch turns peer access on at its first copy from one GPU to the other),
for tests/gpu/peer.sh. Deterministic: every step's loss is kept bit for bit (float.hex).

The first step turns peer access on. Run as training.py says (STEPS or --serve); served, it also
answers:
  bw        a 512 MiB copy cuda:0 -> cuda:1, timed: "bw GB/S"
  peer      "peer YES|NO": whether PyTorch may use peer access between them"""
import os
import time

import training

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
d0, d1 = torch.device("cuda:0"), torch.device("cuda:1")
g = torch.Generator(device=d0).manual_seed(1)
x = torch.randn(4096, 512, device=d0, generator=g)
y = (x @ torch.randn(512, 10, device=d0, generator=g)).argmax(dim=1).to(d1)
first = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 1024), torch.nn.ReLU()).to(d0)
second = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                             torch.nn.Linear(1024, 10)).to(d1)
opt = torch.optim.Adam(list(first.parameters()) + list(second.parameters()), lr=1e-3)
losses = []


def step():
    opt.zero_grad(set_to_none=True)
    h = first(x).to(d1)  # across: a copy cuda:0 -> cuda:1, and back in the backward pass
    loss = torch.nn.functional.cross_entropy(second(h), y)
    loss.backward()
    opt.step()
    losses.append(float(loss.item()).hex())


def bandwidth():
    a = torch.empty(512 << 20, dtype=torch.uint8, device=d0)
    b = torch.empty(512 << 20, dtype=torch.uint8, device=d1)
    b.copy_(a)
    torch.cuda.synchronize(d0)
    torch.cuda.synchronize(d1)
    t = time.perf_counter()
    for _ in range(10):
        b.copy_(a)
    torch.cuda.synchronize(d0)
    torch.cuda.synchronize(d1)
    return 10 * (512 << 20) / (time.perf_counter() - t) / 1e9


training.main(step, losses, {
    "bw": lambda: f"bw {bandwidth():.1f}",
    "peer": lambda: "peer " + ("YES" if torch.cuda.can_device_access_peer(0, 1) else "NO"),
})

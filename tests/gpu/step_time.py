"""One process training an MLP for the benchmarks: prints the median step time (each step ends in a
synchronisation, the first fifth are warm-up). Host-bound with small layers and batches (the time
is mostly launching kernels: what the gate's cost per call would show in), GPU-bound with large.

usage: step_time.py STEPS --width N --layers N --batch N [--bf16]"""
import argparse
import statistics
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("steps", type=int)
p.add_argument("--width", type=int, default=1024)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--bf16", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
dev = torch.device("cuda")
dt = torch.bfloat16 if a.bf16 else torch.float32
layers = []
for _ in range(a.layers):
    layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).to(dev, dt)
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
x = torch.randn(a.batch, a.width, device=dev, dtype=dt)
times = []
for _ in range(a.steps):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    model(x).float().pow(2).mean().backward()
    opt.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
print(f"time {statistics.median(times[a.steps // 5:]) * 1e3:.4f} ms", flush=True)

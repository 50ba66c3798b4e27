"""Holds GIB GiB of GPU memory on each of the GPUs listed, in allocations of CHUNK MiB (default
256; PyTorch's caching allocator keeps each as a segment of its own, one of cudaMalloc's), with
peer access on between the first two (a copy from one to the other turns it on), for
tools/bench/bench-peer.sh.

usage: hold_gpus.py GIB DEVICES [CHUNK]   e.g. hold_gpus.py 8 0,1; prints "ready PID", then
answers "verify" ("verify ok|bad": every 65536th byte as written), "bw" ("bw GB/S": a copy of
the first chunk into a scratch buffer on the last GPU, outside what is verified) and "quit\""""
import os
import sys
import time

import torch

gib, devices = float(sys.argv[1]), [int(d) for d in sys.argv[2].split(",")]
chunk = int(sys.argv[3]) if len(sys.argv) > 3 else 256
chunks = []
for d in devices:
    for i in range(int(gib * 1024 / chunk)):
        chunks.append(torch.full((chunk << 20,), (7 * i + d) % 251, dtype=torch.uint8,
                                 device=f"cuda:{d}"))
scratch = None
if len(devices) > 1:
    torch.ones(1024, device=f"cuda:{devices[0]}").to(f"cuda:{devices[1]}")
    scratch = torch.empty(min(chunk, 256) << 20, dtype=torch.uint8, device=f"cuda:{devices[-1]}")
sums = [int(c[::65536].sum()) for c in chunks]  # sampled: a whole sum would take a big temporary


def bandwidth():
    if scratch is None:
        return 0.0
    a, b = chunks[0], scratch
    n = b.numel()
    b[:n].copy_(a[:n])
    torch.cuda.synchronize(a.device)
    torch.cuda.synchronize(b.device)
    t = time.perf_counter()
    for _ in range(10):
        b[:n].copy_(a[:n])
    torch.cuda.synchronize(a.device)
    torch.cuda.synchronize(b.device)
    return 10 * n / (time.perf_counter() - t) / 1e9


print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.strip() == "verify":
        ok = [int(c[::65536].sum()) for c in chunks] == sums
        print("verify", "ok" if ok else "bad", flush=True)
    elif line.strip() == "bw":
        print(f"bw {bandwidth():.1f}", flush=True)
    elif line.strip() == "quit":
        break

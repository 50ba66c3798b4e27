"""Holds GIB GiB of GPU memory on each of the GPUs listed, in allocations of 256 MiB (PyTorch's
caching allocator keeps each as a segment of its own), with peer access on between the first two
(a copy from one to the other turns it on), for tools/bench/bench-peer.sh.

usage: hold_gpus.py GIB DEVICES   e.g. hold_gpus.py 8 0,1; prints "ready PID", then answers
                                  "verify" ("verify ok|bad": every 65536th byte as written) and "quit\""""
import os
import sys

import torch

gib, devices = float(sys.argv[1]), [int(d) for d in sys.argv[2].split(",")]
chunks = []
for d in devices:
    for i in range(int(gib * 4)):
        chunks.append(torch.full((256 << 20,), (7 * i + d) % 251, dtype=torch.uint8,
                                 device=f"cuda:{d}"))
if len(devices) > 1:
    torch.ones(1024, device=f"cuda:{devices[0]}").to(f"cuda:{devices[1]}")
sums = [int(c[::65536].sum()) for c in chunks]  # sampled: a whole sum would take a 2 GiB temporary
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.strip() == "verify":
        ok = [int(c[::65536].sum()) for c in chunks] == sums
        print("verify", "ok" if ok else "bad", flush=True)
    elif line.strip() == "quit":
        break

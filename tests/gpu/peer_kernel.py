"""CuPy with peer access, for tests/gpu/peer.sh: GPU 0 holds 1 GiB (one allocation of cudaMalloc's,
over the driver's line), GPU 1 turns peer access on to it, and a kernel of GPU 1's reads it
directly. Prints "ready PID", then answers:
  sum   the kernel on GPU 1 over GPU 0's memory: "sum HEX" (integers: the same every time)
  bw    a copy of 256 MiB from GPU 0 to GPU 1: "bw GB/S"
  quit"""
import os
import sys
import time

import cupy as cp

n = 256 << 20
with cp.cuda.Device(0):
    a = cp.arange(n, dtype=cp.uint32) * cp.uint32(2654435761)
with cp.cuda.Device(1):
    cp.cuda.runtime.deviceEnablePeerAccess(0)
    out = cp.zeros(1, dtype=cp.uint64)
    dst = cp.empty(64 << 20, dtype=cp.uint32)
    total = cp.RawKernel(r'''
extern "C" __global__ void total(const unsigned *x, unsigned long long n, unsigned long long *out) {
    unsigned long long s = 0;
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        s += x[i] ^ (unsigned)i;
    atomicAdd(out, s);
}''', "total")


def summed():
    with cp.cuda.Device(1):
        out.fill(0)
        total((264,), (512,), (cp.uint64(a.data.ptr), cp.uint64(n), out))
        cp.cuda.Device(1).synchronize()
        return int(out.get()[0])


def bandwidth():
    nbytes = dst.nbytes
    cp.cuda.runtime.memcpyPeer(dst.data.ptr, 1, a.data.ptr, 0, nbytes)
    cp.cuda.Device(1).synchronize()
    t = time.perf_counter()
    for _ in range(10):
        cp.cuda.runtime.memcpyPeer(dst.data.ptr, 1, a.data.ptr, 0, nbytes)
    cp.cuda.Device(1).synchronize()
    return 10 * nbytes / (time.perf_counter() - t) / 1e9


print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "sum":
        print(f"sum {summed():x}", flush=True)
    elif cmd == "bw":
        print(f"bw {bandwidth():.1f}", flush=True)
    elif cmd == "quit":
        break

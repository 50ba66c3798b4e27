"""CuPy for the gpu suite: arrays, a reduction and a custom kernel, in two phases. Phase 1 builds
the arrays and prints "ready"; the test may suspend and resume the process; a line on stdin starts
phase 2, which uses phase 1's arrays. The result is printed bit for bit."""
import os
import sys

import cupy as cp

cp.random.seed(3)
a = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
b = cp.random.standard_normal((4096, 4096), dtype=cp.float32)
big = cp.arange(512 << 20, dtype=cp.int32)  # 2 GiB more to carry through the suspend
axpy = cp.ElementwiseKernel("float32 x, float32 y, float32 k", "float32 z", "z = k * x + y", "axpy")
square = cp.RawKernel(r'''
extern "C" __global__ void square(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}''', "square")
c = a @ b
cp.cuda.Device().synchronize()
print("ready", os.getpid(), flush=True)
sys.stdin.readline()
d = axpy(c, a, cp.float32(0.5))
e = cp.empty_like(d)
square((d.size // 256,), (256,), (d, e, cp.int32(d.size)))
total = float(e.sum(dtype=cp.float64))
check = int((big % 1000).sum())
print("result", total.hex(), check, flush=True)

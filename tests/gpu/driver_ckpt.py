"""The driver's checkpoint API alone on another process, for the benchmarks' baseline: no
cudanap anywhere. usage: driver_ckpt.py PID suspend|resume; prints the seconds it took, or the
driver's error name and exits 1 (a restore that fails leaves the process lost)."""
import ctypes
import sys
import time

cu = ctypes.CDLL("libcuda.so.1")
pid, what = int(sys.argv[1]), sys.argv[2]
args = (ctypes.c_uint64 * 8)()  # every argument struct: zeroed, 64 bytes


def call(name):
    r = getattr(cu, name)(pid, ctypes.byref(args))
    if r:
        s = ctypes.c_char_p()
        cu.cuGetErrorName(r, ctypes.byref(s))
        print(f"{name}: {s.value.decode()}")
        sys.exit(1)


t = time.perf_counter()
if what == "suspend":
    call("cuCheckpointProcessLock")
    call("cuCheckpointProcessCheckpoint")
else:
    cu.cuInit(0)
    t = time.perf_counter()
    call("cuCheckpointProcessRestore")
    call("cuCheckpointProcessUnlock")
print(f"{time.perf_counter() - t:.3f}")

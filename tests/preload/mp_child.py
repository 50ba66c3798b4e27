"""A Python parent that starts one child the way the test asks, for tests/preload/forks.sh.

    python3 mp_child.py fork|spawn|forkserver|subprocess cuda|none

The child's "CUDA" is the fake driver, through ctypes: with "cuda" it initialises it, writes 1 MiB
to its "device memory" and, when the parent is told "stop", reads it back and says "ok" or "bad".
The parent prints "ready PID" and "child PID", then answers "stop" with the child's verdict."""
import ctypes
import multiprocessing
import os
import subprocess
import sys
import time

DATA = bytes((i * 131 + 7) % 256 for i in range(256)) * 4096


def child(use_cuda, report, stop_file):
    lib = ctypes.CDLL(os.environ["FAKECUDA"])
    ok = True
    if use_cuda:
        ok = lib.fake_register() == 0 and lib.fake_memcpy_htod(
            ctypes.c_size_t(0), DATA, ctypes.c_size_t(len(DATA))) == 0
    report(os.getpid())
    while not os.path.exists(stop_file):
        time.sleep(0.05)
    if use_cuda:
        out = ctypes.create_string_buffer(len(DATA))
        ok = ok and lib.fake_memcpy_dtoh(out, ctypes.c_size_t(0), ctypes.c_size_t(len(DATA))) == 0
        ok = ok and out.raw == DATA
    report("ok" if ok else "bad")


def mp_child(use_cuda, queue, stop_file):
    child(use_cuda, queue.put, stop_file)


def main():
    how, cuda = sys.argv[1], sys.argv[2] == "cuda"
    if how != "child":
        print("ready", os.getpid(), flush=True)
    stop_file = os.path.join(os.environ["T"], "stop.%d" % os.getpid())
    if how == "child":  # the subprocess case, exec'd afresh
        child(cuda, lambda x: print(x, flush=True), sys.argv[3])
        return
    if how == "subprocess":
        p = subprocess.Popen([sys.executable, __file__, "child", sys.argv[2], stop_file],
                             stdout=subprocess.PIPE, text=True)
        get = p.stdout.readline
    else:
        ctx = multiprocessing.get_context(how)
        queue = ctx.Queue()
        p = ctx.Process(target=mp_child, args=(cuda, queue, stop_file))
        p.start()
        get = queue.get
    print("child", str(get()).strip(), flush=True)
    for line in sys.stdin:
        if line.startswith("stop"):
            open(stop_file, "w").close()
            print("child says", str(get()).strip(), flush=True)
        elif line.startswith("quit"):
            break
    p.wait() if how == "subprocess" else p.join()


if __name__ == "__main__":
    main()

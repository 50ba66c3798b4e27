"""A Jupyter client, for tests/preload/kernel.sh and tests/gpu/kernel.sh: it starts a kernel by its
kernelspec through jupyter_client's KernelManager, as a notebook server does, and answers one line
per command read from stdin:

    start               "started PID": the kernel's process as the manager knows it
    cell NAME           runs the cell NAME of CELLS: "cell NAME ok|error ENAME OUTPUT..."
    stderr              what the cells wrote on stderr so far, on one line: "stderr TEXT" (ipykernel
                        forwards what the process writes on fd 2 a moment later, under the cell
                        running then)
    time                how long the last cell took, request to reply: "time SECONDS"
    interrupt           runs a cell that sleeps, interrupts it once it runs: "interrupt ENAME S"
    shutdown            asks the kernel to shut down: "exited RC" (RC as Popen gives it)
    term                sends it SIGTERM: "exited RC"

The cells' "GPU" is the fake driver's (FAKECUDA) through ctypes, or PyTorch's (torch_*)."""
import os
import signal
import sys
import time

from jupyter_client import KernelManager

CELLS = {
    "settle": "import time\ntime.sleep(0.5)",
    "info": "import os\n"
            "print(os.getpid(), os.getpgid(0), os.environ.get('CUDANAP_TEST_MARK'),\n"
            "      'libcudanap' in open('/proc/self/maps').read())",
    # the fake driver's memory filled, a "kernel" through the preload's gate
    "fake_work": "import ctypes, os\n"
                 "lib = ctypes.CDLL(os.environ['FAKECUDA'])\n"
                 "DATA = bytes((i * 131 + 7) % 256 for i in range(256)) * 4096\n"
                 "v = ctypes.c_void_p\n"
                 "assert lib.fake_register() == 0\n"
                 "assert lib.fake_memcpy_htod(ctypes.c_size_t(0), DATA, ctypes.c_size_t(len(DATA))) == 0\n"
                 "print('launch', lib.cuLaunchKernel(None, 5, 2, 3, 4, 5, 6, 7, v(8), v(9), v(10)))",
    "fake_verify": "out = ctypes.create_string_buffer(len(DATA))\n"
                   "print('launch', lib.cuLaunchKernel(None, 5, 2, 3, 4, 5, 6, 7, v(8), v(9), v(10)),\n"
                   "      'verify', lib.fake_memcpy_dtoh(out, ctypes.c_size_t(0), ctypes.c_size_t(len(DATA))) == 0\n"
                   "      and out.raw == DATA)",
    # GPU 0's primary context current, 64 MiB of cuMemAlloc's through the preload's entry point
    # (memory cudanap owns, which a light nap moves), a word written 1 MiB in
    "fake_owned": "d, ctx = ctypes.CDLL(None), v()\n"
                  "assert d.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0\n"
                  "assert d.cuCtxSetCurrent(ctx) == 0\n"
                  "ptr, word = ctypes.c_uint64(), ctypes.c_uint(0xC0FFEE)\n"
                  "rc = d.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(64 << 20))\n"
                  "print('alloc', rc, lib.fake_vmm_word(ctypes.c_uint64(ptr.value + (1 << 20)), True,\n"
                  "                                      ctypes.byref(word)))",
    "fake_owned_verify": "got = ctypes.c_uint()\n"
                         "print('launch', lib.cuLaunchKernel(None, 5, 2, 3, 4, 5, 6, 7, v(8), v(9), v(10)),\n"
                         "      'word', lib.fake_vmm_word(ctypes.c_uint64(ptr.value + (1 << 20)), False,\n"
                         "                                ctypes.byref(got)), hex(got.value))",
    # PyTorch: 4 GiB of weights, a product whose checksum a run without naps gives too
    "torch_work": "import torch\n"
                  "g = torch.Generator(device='cuda').manual_seed(7)\n"
                  "w = [torch.randn(16384, 16384, device='cuda', generator=g) for _ in range(4)]\n"
                  "x = w[0]\n"
                  "for m in w[1:]: x = (x @ m) / 128\n"
                  "print('sum', float(x.double().sum()), torch.cuda.memory_allocated() >> 20)",
    "torch_verify": "y = w[0]\n"
                    "for m in w[1:]: y = (y @ m) / 128\n"
                    "print('sum', float(y.double().sum()), 'same', bool(torch.equal(x, y)))",
}


class Client:
    def __init__(self, name):
        self.name = name
        self.km = self.kc = self.proc = None
        self.stderr, self.took = "", 0.0

    def start(self):
        self.km = KernelManager(kernel_name=self.name)
        self.km.start_kernel()
        self.proc = self.km.provisioner.process
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        return f"started {self.proc.pid}"

    def execute(self, code, timeout=120, on_busy=None):
        """Runs code; its status, the error's name and the text it printed on stdout (its stderr,
        where ipykernel forwards what the process writes on fd 2, holds cudanap's log)."""
        t0 = time.monotonic()
        msg_id = self.kc.execute(code)
        text, err, ename, deadline = [], [], "", time.monotonic() + timeout
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "busy" and on_busy:
                on_busy()
            elif kind == "stream":
                (text if content["name"] == "stdout" else err).append(content["text"])
            elif kind == "error":
                ename = content["ename"]
            elif kind == "status" and content["execution_state"] == "idle":
                break
        while True:  # its own reply: one to an earlier request is said on stderr, and skipped
            reply = self.kc.get_shell_msg(timeout=max(1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
            sys.stderr.write(f"a late {reply['msg_type']} ({reply['content'].get('status')})\n")
        self.stderr = " ".join((self.stderr + " " + "".join(err)).split())
        self.took = time.monotonic() - t0
        return reply["content"]["status"], ename, " ".join("".join(text).split())

    def cell(self, name):
        status, ename, text = self.execute(CELLS[name])
        return f"cell {name} {status}" + (f" {ename}" if ename else "") + f" {text}"

    def interrupt(self):
        t = []

        def later():  # the cell runs: interrupt it a moment after
            t.append(time.monotonic())
            time.sleep(0.5)
            self.km.interrupt_kernel()

        status, ename, _ = self.execute("import time\ntime.sleep(120)", on_busy=later)
        return f"interrupt {ename or status} {time.monotonic() - t[0]:.1f}"

    def stop(self, how):
        if how == "term":
            self.km.signal_kernel(signal.SIGTERM)
        else:
            self.km.request_shutdown()
        try:
            rc = self.proc.wait(timeout=60)
        except Exception:
            rc = "none"
        self.kc.stop_channels()
        self.km.cleanup_resources()
        return f"exited {rc}"


def main():
    c = Client(sys.argv[1])
    for line in sys.stdin:
        cmd = line.split()
        try:
            if cmd[0] == "start":
                out = c.start()
            elif cmd[0] == "cell":
                out = c.cell(cmd[1])
            elif cmd[0] == "time":
                out = f"time {c.took:.3f}"
            elif cmd[0] == "stderr":
                out = f"stderr {c.stderr}"
            elif cmd[0] == "interrupt":
                out = c.interrupt()
            elif cmd[0] in ("shutdown", "term"):
                out = c.stop(cmd[0])
            else:
                out = "unknown command"
        except Exception as e:  # one line, so that the test goes on
            out = f"failed {type(e).__name__}: {' '.join(str(e).split())}"
        print(out, flush=True)


if __name__ == "__main__":
    main()

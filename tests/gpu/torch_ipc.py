# torch_ipc: a CUDA tensor handed to a child process by torch.multiprocessing (spawn), which opens
# its parent's GPU memory over CUDA IPC, as DataLoader workers and vLLM's all-reduce do.
# Prints "ready PARENT CHILD", then on stdin: sum -> "sum S" (the child's sum of the tensor); quit.
import os
import sys

import torch
import torch.multiprocessing as mp


def child(todo, done):
    t = todo.get()
    done.put(os.getpid())
    while todo.get() == "sum":
        done.put(float(t.sum().item()))


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    todo, done = ctx.Queue(), ctx.Queue()
    t = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    p = ctx.Process(target=child, args=(todo, done))
    p.start()
    todo.put(t)
    print(f"ready {os.getpid()} {done.get()}", flush=True)
    for line in sys.stdin:
        if line.strip() != "sum":
            break
        todo.put("sum")
        print(f"sum {done.get():.0f}", flush=True)
    todo.put("quit")
    p.join()

"""A session fed through a pipe, as a notebook is, for the naps test: it warms up, prints
"ready PID", and answers each line "compute" with "result ..." (the same for the same work, bit
for bit); between lines only the framework's own threads run.

usage: nap_session.py torch GIB   GIB GiB of tensors; the result: their checksums
       nap_session.py later GIB   the same, its tensors made at its first line (a notebook
                                  that allocates in a later cell)
       nap_session.py hf          a small GPT-2 (random weights, seeded) as a server; the result:
                                  8 tokens generated greedily from one prompt
       nap_session.py cupy GIB    the same with CuPy's memory pool
       nap_session.py jax [GIB]   a jitted matmul (and GIB GiB of arrays); XLA's poller runs
                                  between lines
       nap_session.py train GIB   a trainer that never idles: matmuls over GIB GiB without a
                                  pause until its input ends; each line "compute" is answered
                                  with its step count"""
import os
import sys

kind = sys.argv[1]
if kind in ("torch", "later"):
    import torch

    gib = int(sys.argv[2])
    chunks = []

    def make():
        chunks[:] = [torch.arange(1 << 28, device="cuda", dtype=torch.float32).mul_(i + 1)
                     .remainder_(977) for i in range(gib)]  # 1 GiB each

    if kind == "torch":
        make()
    else:
        torch.zeros(1, device="cuda")  # the context only, until the first line

    def work():
        if not chunks:
            make()
        total = sum(float(c.double().sum()) for c in chunks)
        x = chunks[0][:4096].reshape(64, 64)
        return f"{total:.1f} {float((x @ x).sum()):.1f}"
elif kind == "hf":
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4)).cuda().eval()
    ids = torch.tensor([[1, 2, 3, 4]], device="cuda")

    def work():
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
        return " ".join(str(t) for t in out[0].tolist())
elif kind == "train":
    import threading

    import torch

    gib = int(sys.argv[2])
    held = torch.ones(gib << 28, device="cuda")  # GIB GiB
    m = torch.randn(4096, 4096, device="cuda")
    steps = [0]
    done = threading.Event()

    def loop():
        while not done.is_set():
            m.copy_(torch.tanh(m @ m))
            torch.cuda.synchronize()
            steps[0] += 1

    def work():
        return f"{steps[0]}"
elif kind == "cupy":
    import cupy as cp

    gib = int(sys.argv[2])
    chunks = [(cp.arange(1 << 28, dtype=cp.float32) * (i + 1)) % 977 for i in range(gib)]

    def work():
        total = sum(float(c.sum(dtype=cp.float64)) for c in chunks)
        x = chunks[0][:4096].reshape(64, 64)
        return f"{total:.1f} {float((x @ x).sum()):.1f}"
else:
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (2048, 2048))
    f = jax.jit(lambda m: (m @ m).sum())
    gib = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    held = [jnp.arange(1 << 28, dtype=jnp.float32) * (i + 1) % 977 for i in range(gib)]

    def work():
        total = sum(float(h.sum(dtype=jnp.float32)) for h in held)
        return float(f(a)).hex() + f" {total:.1f}"

if kind not in ("later", "train"):
    work()
if kind == "train":
    trainer = threading.Thread(target=loop)
    trainer.start()
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.strip() == "compute":
        print("result", work(), flush=True)
if kind == "train":
    done.set()
    trainer.join()

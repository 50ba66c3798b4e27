"""An idle GPU program of one framework, for tools/idle-calls.sh: warms up with some work, prints
"ready PID", then on each line "step" does that work once more and prints "done"; it exits at the
end of its input. Between lines only the framework's own threads run.

usage: idle_probe.py torch|jax|cupy|hf"""
import os
import sys

kind = sys.argv[1]
if kind == "torch":
    import torch

    a = torch.randn(2048, 2048, device="cuda")

    def work():
        return float((a @ a).sum())
elif kind == "jax":
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.PRNGKey(0), (2048, 2048))
    f = jax.jit(lambda m: (m @ m).sum())

    def work():
        return float(f(a))
elif kind == "cupy":
    import cupy

    a = cupy.random.default_rng(0).standard_normal((2048, 2048), dtype=cupy.float32)

    def work():
        return float((a @ a).sum())
else:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4)).cuda().eval()
    ids = torch.tensor([[1, 2, 3, 4]], device="cuda")

    def work():
        with torch.no_grad():
            out = model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)
        return out[0].tolist()

work()
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.strip() == "step":
        work()
        print("done", flush=True)

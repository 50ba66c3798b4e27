"""A jitted JAX training loop for the gpu suite: a three-layer network trained by Adam written out
(about 100 MiB of parameters, twice that of optimiser state), every step's loss printed bit for
bit, like torch_train.py.

usage: jax_train.py STEPS [PAUSE_MS]
       jax_train.py --idle STEPS   train STEPS, print "ready PID", wait (only XLA's own threads
                                   running) for a line "go", train STEPS more, print their losses
                                   in one line "result HEX..." and exit"""
import os
import sys
import time

import jax
import jax.numpy as jnp

idle = sys.argv[1] == "--idle"
args = sys.argv[2:] if idle else sys.argv[1:]
steps = int(args[0])
pause = float(args[1]) / 1000 if len(args) > 1 and not idle else 0
k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
x = jax.random.normal(k1, (4096, 1024))
y = x @ jax.random.normal(k2, (1024, 1))
params = {"w1": jax.random.normal(k3, (1024, 4096)) * 0.02,
          "w2": jax.random.normal(k4, (4096, 4096)) * 0.02,
          "w3": jnp.zeros((4096, 1))}
state = (params, jax.tree_util.tree_map(jnp.zeros_like, params),
         jax.tree_util.tree_map(jnp.zeros_like, params), jnp.zeros((), jnp.int32))


def loss_fn(p):
    h = jnp.tanh(x @ p["w1"])
    return jnp.mean((jnp.tanh(h @ p["w2"]) @ p["w3"] - y) ** 2)


@jax.jit
def train_step(s):
    p, m, v, t = s
    loss, g = jax.value_and_grad(loss_fn)(p)
    t = t + 1
    m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    lr = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
    p = jax.tree_util.tree_map(lambda a, b, c: a - lr * b / (jnp.sqrt(c) + 1e-8), p, m, v)
    return (p, m, v, t), loss


def run(n):
    global state
    out = []
    for _ in range(n):
        state, loss = train_step(state)
        out.append(float(loss).hex())
    return out


train_step(state)  # compile before the test starts counting
if idle:
    run(steps)
    print("ready", os.getpid(), flush=True)
    for line in sys.stdin:
        if line.strip() == "go":
            print("result", " ".join(run(steps)), flush=True)
            break
    sys.exit(0)
stats = jax.devices()[0].memory_stats() or {}
print("ready", os.getpid(), f"pool_mib={stats.get('bytes_limit', 0) >> 20}", flush=True)
for step in range(steps):
    state, loss = train_step(state)
    print(f"step {step} {float(loss).hex()}", flush=True)
    if pause:
        time.sleep(pause)
print("done", flush=True)

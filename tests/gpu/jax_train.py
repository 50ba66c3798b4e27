"""A jitted JAX training step for the gpu suite: prints every step's loss bit for bit, like
torch_train.py. usage: jax_train.py STEPS [PAUSE_MS]"""
import os
import sys
import time

import jax
import jax.numpy as jnp

steps = int(sys.argv[1])
pause = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
x = jax.random.normal(k1, (4096, 256))
y = x @ jax.random.normal(k2, (256, 1))
params = {"w1": jax.random.normal(k3, (256, 512)) * 0.05, "w2": jnp.zeros((512, 1))}


def loss_fn(p):
    return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)


@jax.jit
def train_step(p):
    loss, grads = jax.value_and_grad(loss_fn)(p)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), loss


train_step(params)  # compile before the test starts counting
stats = jax.devices()[0].memory_stats() or {}
print("ready", os.getpid(), f"pool_mib={stats.get('bytes_limit', 0) >> 20}", flush=True)
for step in range(steps):
    params, loss = train_step(params)
    print(f"step {step} {float(loss).hex()}", flush=True)
    if pause:
        time.sleep(pause)
print("done", flush=True)

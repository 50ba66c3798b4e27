"""JAX with every visible GPU, the batch sharded across them and the weights replicated, so that
each step's gradient is summed across the GPUs; XLA turns peer access on between every pair of
visible GPUs at its start. For tests/gpu/peer.sh; every loss kept bit for bit.

usage: jax_shard.py STEPS     train STEPS and print every loss, then exit (the reference)
       jax_shard.py --serve   print "ready PID", then answer "train N" ("trained TOTAL"),
                              "losses" ("losses HEX...") and "quit", one line each"""
import os
import sys

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

devices = jax.devices()
mesh = Mesh(devices, ("batch",))
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
x = jax.device_put(jax.random.normal(k1, (8192, 512)), NamedSharding(mesh, P("batch")))
y = jax.device_put(x @ jax.random.normal(k2, (512, 1)), NamedSharding(mesh, P("batch")))
w = jax.device_put(jax.random.normal(k3, (512, 1)) * 0.01, NamedSharding(mesh, P()))


@jax.jit
def train_step(w):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.01 * g, loss


losses = []


def step():
    global w
    w, loss = train_step(w)
    losses.append(float(loss).hex())


step()
losses.clear()
if sys.argv[1] != "--serve":
    for _ in range(int(sys.argv[1])):
        step()
    print("losses", " ".join(losses), flush=True)
    sys.exit(0)
print("ready", os.getpid(), len(devices), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd and cmd[0] == "train":
        for _ in range(int(cmd[1])):
            step()
        print("trained", len(losses), flush=True)
    elif cmd and cmd[0] == "losses":
        print("losses", " ".join(losses), flush=True)
    elif cmd and cmd[0] == "quit":
        break

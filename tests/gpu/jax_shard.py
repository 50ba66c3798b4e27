"""JAX with every visible GPU, the batch sharded across them and the weights replicated, so that
each step's gradient is summed across the GPUs; XLA turns peer access on between every pair of
visible GPUs at its start. For tests/gpu/peer.sh; every loss kept bit for bit. Run as
training.py says (STEPS or --serve)."""
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import training

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


training.main(step, losses)

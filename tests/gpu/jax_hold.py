"""An idle JAX process holding its pool (by default 75 % of the GPU; XLA_PYTHON_CLIENT_MEM_FRACTION
sets another share), for tools/bench/bench-pool.sh. Prints "ready PID", then answers "verify"
("verify ok|bad": an array made at the start sums as it did) and "quit"."""
import os
import sys

import jax.numpy as jnp

x = jnp.arange(1 << 20, dtype=jnp.float32)
s = float(x.sum())
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.strip() == "verify":
        print("verify", "ok" if float(x.sum()) == s else "bad", flush=True)
    elif line.strip() == "quit":
        break

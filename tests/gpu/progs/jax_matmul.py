# JAX on the GPU: a jitted matmul + reduction. Run with XLA_PYTHON_CLIENT_PREALLOCATE=false, as a
# tenant of a shared GPU must (by default XLA reserves 75 % of the GPU's memory at start).
import jax
import jax.numpy as jnp

assert jax.devices()[0].platform == "gpu", jax.devices()
k = jax.random.PRNGKey(0)
a = jax.random.normal(k, (2048, 2048), dtype=jnp.float32)


@jax.jit
def step(m):
    return jnp.tanh(m @ m.T).sum()


v = float(step(a))
v2 = float(step(a + 1))
print(f"RESULT jax devices={jax.devices()} values={v:.3f},{v2:.3f} ok")

# Tensor cores without an NVIDIA GPU: with EMULATE=CUDA the CL device (PoCL in CI) takes CUDA's tensor cores, and the
# OpenCL renderer computes each WMMA across a warp's work-items in mma.sync's fragment layout. In a fresh process (the
# device reads EMULATE when it opens), 16-bit matmuls through the heuristics (plain, batched, and a matmul's backward)
# agree with numpy and their kernels use WMMA. A wrong swizzle scatters products and fails every comparison.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cl_child  # noqa: E402

SCRIPT = r"""
rng = np.random.default_rng(7)
for dt, np_dt, rtol in [(dtypes.float16, np.float16, 2e-3), (dtypes.bfloat16, np.float32, 1.6e-2)]:
  for sa, sb in [((64, 128), (128, 96)), ((3, 32, 48), (3, 48, 16)), ((16, 64), (64, 8))]:
    a = rng.uniform(-1, 1, sa).astype(np.float32)
    b = rng.uniform(-1, 1, sb).astype(np.float32)
    ta, tb = Tensor(a, device="CL").cast(dt), Tensor(b, device="CL").cast(dt)
    av, bv = ta.cast(dtypes.float32).numpy().astype(np.float64), tb.cast(dtypes.float32).numpy().astype(np.float64)
    check(f"{dt.name} {sa}@{sb}", ta.matmul(tb).cast(dtypes.float32).numpy(), av @ bv, rtol)
  # the backward of a matmul is two more matmuls: dA = G @ B^T, dB = A^T @ G
  a = Tensor(rng.uniform(-1, 1, (32, 64)).astype(np.float32), device="CL").cast(dt).detach()
  b = Tensor(rng.uniform(-1, 1, (64, 48)).astype(np.float32), device="CL").cast(dt).detach()
  a.requires_grad = b.requires_grad = True
  a.matmul(b).sum().backward()
  av, bv = a.cast(dtypes.float32).numpy().astype(np.float64), b.cast(dtypes.float32).numpy().astype(np.float64)
  g = np.ones((32, 48))
  check(f"{dt.name} grad A", a.grad.cast(dtypes.float32).numpy(), g @ bv.T, rtol)
  check(f"{dt.name} grad B", b.grad.cast(dtypes.float32).numpy(), av.T @ g, rtol)
print("DONE")
"""


def test_emulated_tensor_cores_match_numpy():
  src = cl_child.run(SCRIPT, {"EMULATE": "CUDA"})
  # DEBUG=4 prints every kernel's source: the matmuls ran on (emulated) tensor cores
  assert "tg_wmma_8_16_16_float16_float32(" in src and "tg_wmma_8_16_16_bfloat16_float32(" in src

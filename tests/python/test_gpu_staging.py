# The GPU heuristics' staged matmuls (both inputs copied into local memory by the whole work-group, 16 reduce steps at a
# time) and tf32 tensor cores, end to end on the CL device (PoCL in CI), each in a fresh process: the settings that turn
# them on there are read once. PoCL is an OpenCL device of CPU cores, which stages nothing unless TG_GPU_STAGE_TILE asks
# (a GPU does by default); ALLOW_TF32=1 with EMULATE=CUDA gives the CL device CUDA's tensor cores with tf32.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cl_child  # noqa: E402

SCRIPT = r"""
rng = np.random.default_rng(11)
def r(*s): return rng.uniform(-1, 1, s).astype(np.float32)
RTOL = float(sys.argv[1])
# shapes the staged tile takes (N a multiple of 16 x tile, M of 8 x tile, K of 16), one batched
for sa, sb in [((64, 256), (256, 128)), ((128, 48), (48, 64)), ((2, 32, 64), (2, 64, 64))]:
  a, b = r(*sa), r(*sb)
  check(f"{sa}@{sb}", (Tensor(a, device="CL") @ Tensor(b, device="CL")).numpy(), a.astype(np.float64) @ b.astype(np.float64), RTOL)
# a linear layer's forward (bias and ReLU after the product) and backward (two more products)
x, w, bias = r(64, 96), r(96, 128), r(128)
tx, tw, tb = (Tensor(v, device="CL", requires_grad=True) for v in (x, w, bias))
y = (tx @ tw + tb).relu()
ref = np.maximum(x.astype(np.float64) @ w + bias, 0)
check("linear", y.numpy(), ref, RTOL)
y.sum().backward()
g = (ref > 0).astype(np.float64)
check("linear grad x", tx.grad.numpy(), g @ w.T.astype(np.float64), RTOL)
check("linear grad w", tw.grad.numpy(), x.T.astype(np.float64) @ g, RTOL)
print("DONE")
"""


def test_staged_matmuls_match_numpy():
  src = cl_child.run(SCRIPT, {"TG_GPU_STAGE_TILE": "4"}, ["1e-5"])
  assert "__local float temp1000[" in src and "barrier(CLK_LOCAL_MEM_FENCE);" in src, "no matmul was staged in local memory"


def test_tf32_tensor_cores_match_numpy():
  # the emulation multiplies in float32 (no rounding to tf32's 10 bits): the tolerance is float32's
  src = cl_child.run(SCRIPT, {"EMULATE": "CUDA", "ALLOW_TF32": "1"}, ["1e-5"])
  assert "tg_wmma_8_16_8_float32_float32(" in src, "no float32 matmul ran on the (emulated) tf32 tensor cores"

"""CUDA rows of the benchmark, run on a machine with an NVIDIA GPU and PyTorch built for CUDA (the references run in
the same process, on the same GPU, side by side):

  cuda matmul 4096 fp32 / fp16 : C = A @ B, 4096^3, GFLOP/s, against torch.matmul (cuBLAS; TF32 off)
  cuda elementwise 256M        : y = x * 2 + 1 on 256M float32, GB/s moved, against a device-to-device copy of the same
                                 bytes (torch's copy_, a cudaMemcpy)
  cuda jit step mlp            : a TinyJit-replayed training step of a 784-128-10 MLP, batch 64, Adam-like updates, us,
                                 against the same step in PyTorch on the GPU (bench/mlp_torch.py's arithmetic)

usage: bench_cuda.py [OUT.json]     (TINYGRAD_LIB names the library; figures are medians of several runs)
"""
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bindings" / "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from tinygrad_c import Device, Tensor, TinyJit, dtypes  # noqa: E402

DEV = "CUDA"
ROWS = []


def median_time(fn, runs=10, warmup=2):
  for _ in range(warmup): fn()
  ts = []
  for _ in range(runs):
    t0 = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts)


def torch_time(fn, runs=10, warmup=2):
  for _ in range(warmup): fn()
  torch.cuda.synchronize()
  ts = []
  for _ in range(runs):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    ts.append(a.elapsed_time(b) * 1e-3)
  return statistics.median(ts)


def row(name, unit, value, ref_name, ref_value, higher_is_better=True):
  ratio = (value / ref_value if higher_is_better else ref_value / value) if ref_value else 0.0
  ROWS.append({"name": name, "value": round(value, 3), "unit": unit, "reference": ref_name, "reference_value": round(ref_value, 3),
               "ratio": round(ratio, 3)})
  print(f"{name:28s} {value:12.1f} {unit:7s} {ref_name:22s} {ref_value:12.1f}  ratio {ratio:.3f}", flush=True)


def bench_matmul(n, dt, tdt):
  rng = np.random.default_rng(0)
  a_np, b_np = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  a, b = Tensor(a_np, device=DEV).cast(dt).realize(), Tensor(b_np, device=DEV).cast(dt).realize()
  c = (a @ b).realize()
  # correctness first: a corner against the same matmul in torch (fp16 products summed in fp32 by both)
  ta, tb = torch.from_numpy(a_np).cuda().to(tdt), torch.from_numpy(b_np).cuda().to(tdt)
  ref = (ta @ tb).float().cpu().numpy()
  got = c.cast(dtypes.float32).numpy()
  tol = 1e-2 if dt == dtypes.float16 else 1e-3
  assert np.allclose(got[:64, :64], ref[:64, :64], rtol=tol, atol=tol * 8), "matmul disagrees with torch"
  ours = median_time(lambda: (a @ b).realize(), runs=5)
  torch.backends.cuda.matmul.allow_tf32 = False
  theirs = torch_time(lambda: ta @ tb)
  flops = 2 * n ** 3
  row(f"cuda matmul {n} {dt.name.replace('float', 'fp')}", "GFLOP/s", flops / ours * 1e-9, "cuBLAS (torch.matmul)", flops / theirs * 1e-9)


def bench_elementwise(n):
  x = Tensor.empty(n, dtype=dtypes.float32, device=DEV)
  x = (x.mul(0) + 1).realize()  # touch it
  y = (x * 2 + 1).realize()
  assert float(y[:4].numpy().sum()) == 12.0
  ours = median_time(lambda: (x * 2 + 1).realize())
  src, dst = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
  theirs = torch_time(lambda: dst.copy_(src))
  moved = 2 * 4 * n
  row(f"cuda elementwise {n >> 20}M", "GB/s", moved / ours * 1e-9, "device copy (cudaMemcpy)", moved / theirs * 1e-9)


def bench_jit_mlp(steps=200):
  rng = np.random.default_rng(0)
  init = [(rng.random(s, dtype=np.float32) - 0.5) * 0.1 for s in [(784, 128), (128,), (128, 10), (10,)]]
  xs = [(rng.random((64, 784), dtype=np.float32) - 0.5) for _ in range(4)]
  ys = [x[:, :10].argmax(1).astype(np.int32) for x in xs]
  lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
  ps = [Tensor(p, device=DEV, requires_grad=True) for p in init]
  ms = [Tensor.zeros(*p.shape, device=DEV).contiguous().realize() for p in ps]
  vs = [Tensor.zeros(*p.shape, device=DEV).contiguous().realize() for p in ps]

  def step(x, y):
    with Tensor.train():
      loss = (x @ ps[0] + ps[1]).relu().matmul(ps[2]).add(ps[3]).sparse_categorical_crossentropy(y)
      loss.backward()
      for p, m, v in zip(ps, ms, vs):
        g = p.grad
        m.assign(m * b1 + g * (1 - b1))
        v.assign(v * b2 + g * g * (1 - b2))
        p.assign(p.detach() - (m * lr) / (v.sqrt() + eps))
        p.grad = None
      return loss

  jit = TinyJit(step)
  X = [Tensor(x, device=DEV).realize() for x in xs]
  Y = [Tensor(y, device=DEV).realize() for y in ys]
  first = float(jit(X[0], Y[0]).numpy())
  ts = []
  for i in range(steps + 3):
    t0 = time.perf_counter()
    loss = jit(X[i % 4], Y[i % 4])
    loss.numpy()  # waits for the step
    ts.append(time.perf_counter() - t0)
  last = float(loss.numpy())
  assert last < first, f"the replayed step does not train: {first} -> {last}"
  ours = statistics.median(ts[3:]) * 1e6

  tp = [torch.from_numpy(p).cuda().requires_grad_(True) for p in init]
  tm, tv = [torch.zeros_like(p) for p in tp], [torch.zeros_like(p) for p in tp]
  txs, tys = [torch.from_numpy(x).cuda() for x in xs], [torch.from_numpy(y).long().cuda() for y in ys]

  def tstep(x, y):
    for p in tp: p.grad = None
    loss = torch.nn.functional.cross_entropy(torch.relu(x @ tp[0] + tp[1]) @ tp[2] + tp[3], y)
    loss.backward()
    with torch.no_grad():
      for p, m, v in zip(tp, tm, tv):
        m.mul_(b1).add_(p.grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
        p.sub_(lr * m / (v.sqrt() + eps))
    return loss

  tts = []
  for i in range(steps + 3):
    t0 = time.perf_counter()
    tstep(txs[i % 4], tys[i % 4]).item()
    tts.append(time.perf_counter() - t0)
  theirs = statistics.median(tts[3:]) * 1e6
  row("cuda jit step mlp", "us", ours, "PyTorch (CUDA)", theirs, higher_is_better=False)


def main():
  Device.open(DEV)
  print(f"device: {dict(Device.available())[DEV]}; torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
  bench_elementwise(256 << 20)
  bench_matmul(4096, dtypes.float32, torch.float32)
  bench_matmul(4096, dtypes.float16, torch.float16)
  bench_jit_mlp()
  if len(sys.argv) > 1: Path(sys.argv[1]).write_text(json.dumps(ROWS, indent=1) + "\n")


if __name__ == "__main__":
  main()

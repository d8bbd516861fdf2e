"""CUDA rows of the benchmark, run on a machine with an NVIDIA GPU and PyTorch built for CUDA (the references run in
the same process, on the same GPU, side by side):

  cuda matmul 4096 fp32 / fp16 / bf16 : C = A @ B, 4096^3, GFLOP/s, against torch.matmul (cuBLAS; TF32 off)
  cuda matmul 4096 tf32        : the fp32 product in a process with ALLOW_TF32=1 (tensor cores, inputs rounded to tf32)
                                 against cuBLAS with TF32 allowed
  beam2 cuda matmul 4096 fp16  : the fp16 product with the kernel BEAM=2 chose (its search not timed)
  cuda conv2d                  : x (256, 64, 56, 56) * w (64, 64, 3, 3), pad 1, float32, against F.conv2d (cuDNN,
                                 TF32 off, cudnn.benchmark on: its fastest algorithm)
  cuda tiny jit replay         : us per replay of a captured TinyJit of 10 small kernels, 1000 replays through tg_jit_call
                                 queued back to back, one wait at the end (a CUDA graph launch per replay; JIT_GRAPH=0 in the
                                 environment: one launch per kernel), against the same through torch.cuda.CUDAGraph
  cuda elementwise 256M        : y = x * 2 + 1 on 256M float32, GB/s moved, against a device-to-device copy of the same
                                 bytes (torch's copy_, a cudaMemcpy)
  cuda jit step mlp            : a TinyJit-replayed training step of a 784-128-10 MLP, batch 64, Adam-like updates, us,
                                 against the same step in PyTorch on the GPU (bench/mlp_torch.py's arithmetic)

usage: bench_cuda.py [OUT.json] [--no-beam | --beam-only]     (TINYGRAD_LIB names the library; figures are medians of
several runs)
"""
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bindings" / "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from tinygrad_c import Context, Device, Tensor, TinyJit, dtypes  # noqa: E402

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


def agree(name, got, ref, rtol, atol):
  """Every element of ours against the reference's."""
  bad = ~np.isclose(got, ref, rtol=rtol, atol=atol)
  assert not bad.any(), f"{name}: {bad.sum()} elements disagree with torch, first at {np.argwhere(bad)[0]}"


def bench_matmul(n, dt, tdt, tf32=False, beam=0):
  rng = np.random.default_rng(0)
  a_np, b_np = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  name = f"{'beam2 ' if beam else ''}cuda matmul {n} {'tf32' if tf32 else dt.name.replace('bfloat', 'bf').replace('float', 'fp')}"
  with Context(BEAM=beam):
    a, b = Tensor(a_np, device=DEV).cast(dt).realize(), Tensor(b_np, device=DEV).cast(dt).realize()
    t0 = time.perf_counter()
    c = (a @ b).realize()
    first = time.perf_counter() - t0
    # correctness first: every element against the same matmul in torch (16-bit products summed in fp32 by both)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    ta, tb = torch.from_numpy(a_np).cuda().to(tdt), torch.from_numpy(b_np).cuda().to(tdt)
    ref = (ta.float() @ tb.float()).cpu().numpy() if not tf32 else (ta @ tb).cpu().numpy()
    got = c.cast(dtypes.float32).numpy()
    tol = {dtypes.float16: 2e-2, dtypes.bfloat16: 5e-2}.get(dt, 2e-2 if tf32 else 1e-3)
    agree(name, got, ref, tol, tol * 8)
    ours = median_time(lambda: (a @ b).realize(), runs=5)
  theirs = torch_time(lambda: ta @ tb)
  torch.backends.cuda.matmul.allow_tf32 = False
  flops = 2 * n ** 3
  if beam: print(f"  (BEAM={beam} search and first run: {first:.1f} s)", flush=True)
  row(name, "GFLOP/s", flops / ours * 1e-9, "cuBLAS (torch.matmul)", flops / theirs * 1e-9)


def bench_conv2d():
  rng = np.random.default_rng(0)
  x_np = rng.standard_normal((256, 64, 56, 56), dtype=np.float32)
  w_np = rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05
  x, w = Tensor(x_np, device=DEV).realize(), Tensor(w_np, device=DEV).realize()
  got = x.conv2d(w, padding=1).realize().numpy()
  torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = False, True
  tx, tw = torch.from_numpy(x_np).cuda(), torch.from_numpy(w_np).cuda()
  ref = torch.nn.functional.conv2d(tx, tw, padding=1).cpu().numpy()
  agree("conv2d", got, ref, 1e-3, 1e-3)
  ours = median_time(lambda: x.conv2d(w, padding=1).realize(), runs=5)
  theirs = torch_time(lambda: torch.nn.functional.conv2d(tx, tw, padding=1))
  flops = 2 * 256 * 64 * 56 * 56 * 64 * 9
  row("cuda conv2d", "GFLOP/s", flops / ours * 1e-9, "cuDNN (F.conv2d)", flops / theirs * 1e-9)


def bench_jit_replay(replays=1000):
  def f(x):
    for i in range(10): x = (x * 0.5 + i).contiguous()
    return x
  jit = TinyJit(f)
  xs = [Tensor(np.full(1024, k, np.float32), device=DEV).realize() for k in range(2)]
  for i in range(3): y = jit(xs[i % 2])
  want = np.zeros(1024, np.float32)  # the last replay's input, xs[0]
  for i in range(10): want = want * 0.5 + i
  assert np.allclose(y.numpy(), want), "the replayed jit is wrong"
  assert len(jit.captured) == 10, f"the jit captured {len(jit.captured)} kernels, not 10"
  ts = []
  for _ in range(5):
    Device[DEV].synchronize()
    t0 = time.perf_counter()
    for i in range(replays): jit(xs[i % 2])
    Device[DEV].synchronize()
    ts.append((time.perf_counter() - t0) / replays * 1e6)
  py_us = statistics.median(ts)
  # the same replays through the C API (tg_jit_call, what a C program or a thin binding pays): the graph launch and
  # the call's checks without the Python wrapper's argument handling
  import ctypes
  from tinygrad_c import C
  out = (ctypes.c_void_p * 1)()
  args = [(ctypes.c_void_p * 1)(x._h) for x in xs]
  ts = []
  for _ in range(5):
    Device[DEV].synchronize()
    t0 = time.perf_counter()
    for i in range(replays):
      assert C.jit_call(jit._h, args[i % 2], 1, out, 1) == 0, C.last_error_message()
      C.tensor_release(out[0])
    Device[DEV].synchronize()
    ts.append((time.perf_counter() - t0) / replays * 1e6)
  us = statistics.median(ts)
  print(f"  (the same through TinyJit's Python call: {py_us:.1f} us per replay)", flush=True)
  tx = torch.ones(1024, device="cuda")
  s = torch.cuda.Stream()
  s.wait_stream(torch.cuda.current_stream())
  with torch.cuda.stream(s):
    for _ in range(3): tx.mul_(0.5)  # warm-up on a side stream, as torch.cuda.graph asks
  torch.cuda.current_stream().wait_stream(s)
  g = torch.cuda.CUDAGraph()
  with torch.cuda.graph(g):
    for _ in range(10): tx.mul_(0.5)  # 10 kernels
  tts = []
  for _ in range(5):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(replays): g.replay()
    torch.cuda.synchronize()
    tts.append((time.perf_counter() - t0) / replays * 1e6)
  row("cuda tiny jit replay", "us", us, "torch.cuda.CUDAGraph replay", statistics.median(tts), higher_is_better=False)


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


def tf32_row():
  """The tf32 row in a child process with ALLOW_TF32=1 (the device reads it when it opens): its row as JSON."""
  import os
  import subprocess
  env = dict(os.environ, ALLOW_TF32="1")
  r = subprocess.run([sys.executable, __file__, "--tf32-child"], env=env, capture_output=True, text=True, timeout=300)
  sys.stdout.write(r.stdout.split("ROW ")[0])
  if r.returncode != 0 or "ROW " not in r.stdout: raise RuntimeError("the tf32 row failed: " + (r.stdout + r.stderr)[-3000:])
  ROWS.append(json.loads(r.stdout.split("ROW ", 1)[1]))


FAILED = []


def guarded(fn, *args, **kw):
  """One row: a failure is printed and makes the exit status 1, and the other rows still run."""
  import traceback
  try:
    fn(*args, **kw)
  except Exception:  # noqa: BLE001
    traceback.print_exc()
    FAILED.append(fn.__name__)


def main():
  Device.open(DEV)
  if "--tf32-child" in sys.argv:
    bench_matmul(4096, dtypes.float32, torch.float32, tf32=True)
    print("ROW " + json.dumps(ROWS[-1]), flush=True)
    return
  print(f"device: {dict(Device.available())[DEV]}; torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
  if "--beam-only" not in sys.argv:
    guarded(bench_elementwise, 256 << 20)
    guarded(bench_matmul, 4096, dtypes.float32, torch.float32)
    guarded(tf32_row)
    guarded(bench_matmul, 4096, dtypes.float16, torch.float16)
    guarded(bench_matmul, 4096, dtypes.bfloat16, torch.bfloat16)
    guarded(bench_conv2d)
    guarded(bench_jit_mlp)
    guarded(bench_jit_replay)
  if "--no-beam" not in sys.argv: guarded(bench_matmul, 4096, dtypes.float16, torch.float16, beam=2)
  if len(sys.argv) > 1 and not sys.argv[1].startswith("-"): Path(sys.argv[1]).write_text(json.dumps(ROWS, indent=1) + "\n")
  if FAILED: sys.exit(f"bench_cuda: failed rows: {', '.join(FAILED)}")


if __name__ == "__main__":
  main()

"""Run under mpirun (tests/python/test_mpi.py): every collective of the communicator, for every dtype, against numpy.

Each rank's data is drawn from a generator seeded with its rank, so every rank can compute the expected result of the
whole job on its own. Exits non-zero on the first mismatch; prints "collectives ok" per rank at the end."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
from tinygrad_c import GlobalCounters, Tensor, TinyJit, TinygradError, dtypes, nn  # noqa: E402
from tinygrad_c.comm import Comm  # noqa: E402

comm = Comm.world()
R, N = comm.rank, comm.size
SHAPE = (3, 5)
TOL = {dtypes.float16: 1e-3, dtypes.bfloat16: 1e-2, dtypes.float32: 1e-6, dtypes.float64: 1e-12}
DTYPES = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64,
          dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]


def data(rank, dt, op="sum"):
  """rank's tensor and its values as float64 (what the ranks' tensors hold, rounded to dt)."""
  rng = np.random.default_rng(1000 + rank)
  if dt == dtypes.bool: v = rng.integers(0, 2, SHAPE).astype(np.float32)
  elif dtypes.is_float(dt): v = rng.standard_normal(SHAPE).astype(np.float32)
  # products of N values stay inside int8; sums of N signed values too
  elif op == "prod": v = rng.integers(1, 3, SHAPE).astype(np.float32)
  else: v = rng.integers(0 if dtypes.is_unsigned(dt) else -20, 20, SHAPE).astype(np.float32)
  t = Tensor(v).cast(dt)
  return t, t.cast(dtypes.float64).numpy()


def check(name, got, want, dt):
  got = np.asarray(got, dtype=np.float64)
  if dtypes.is_float(dt): ok = np.allclose(got, want, rtol=TOL[dt], atol=TOL[dt])
  else: ok = np.array_equal(got, want)
  if not ok:
    print(f"rank {R}: {name} {dt} differs:\n got {got}\nwant {want}", flush=True)
    sys.exit(1)


def expect_error(name, status, fn):
  try: fn()
  except TinygradError as e:
    if e.status != status:
      print(f"rank {R}: {name} raised {e.status}, expected {status}: {e.message}", flush=True)
      sys.exit(1)
    return
  print(f"rank {R}: {name} did not raise {status}", flush=True)
  sys.exit(1)


REF = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
for dt in DTYPES:
  for op in ("sum", "prod", "max", "min", "avg"):
    mine, _ = data(R, dt, op)
    if op == "avg" and not dtypes.is_float(dt):
      expect_error(f"allreduce avg {dt}", "TG_ERROR_DTYPE", lambda: comm.allreduce(mine, "avg"))
      continue
    vals = np.stack([data(k, dt, op)[1] for k in range(N)])
    if op == "avg": want = vals.sum(0) / N
    elif dt == dtypes.bool: want = (vals.max(0) if op in ("sum", "max") else vals.min(0))
    else: want = REF[op](vals, axis=0)
    out = comm.allreduce(mine, op)
    assert out.shape == SHAPE and out.dtype == dt, (out.shape, out.dtype)
    check(f"allreduce {op}", out.cast(dtypes.float64).numpy(), want, dt)
  mine, _ = data(R, dt)
  g = comm.allgather(mine)
  assert g.shape == (N * SHAPE[0], SHAPE[1]) and g.dtype == dt
  check("allgather", g.cast(dtypes.float64).numpy(), np.concatenate([data(k, dt)[1] for k in range(N)]), dt)
  b = comm.broadcast(mine, root=N - 1)
  check("broadcast", b.cast(dtypes.float64).numpy(), data(N - 1, dt)[1], dt)
  # a ring of messages: even ranks send first, odd ones receive first (a send may wait for its receive, as MPI_Send)
  nxt, prv = (R + 1) % N, (R - 1) % N
  if R % 2 == 0:
    comm.send(mine, nxt, tag=7)
    got = comm.recv(SHAPE, dt, prv, tag=7)
  else:
    got = comm.recv(SHAPE, dt, prv, tag=7)
    comm.send(mine, nxt, tag=7)
  check("send/recv", got.cast(dtypes.float64).numpy(), data(prv, dt)[1], dt)

# a 0-d tensor gathers to (N,); a view (a transpose) is sent as its elements in order
s = comm.allgather(Tensor(float(R)))
check("allgather 0-d", s.numpy(), np.arange(N, dtype=np.float64), dtypes.float32)
x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) + R).T
check("allreduce of a view", comm.allreduce(x).numpy(), sum(np.arange(6, dtype=np.float64).reshape(2, 3).T + k for k in range(N)), dtypes.float32)

# ranks that pass different shapes all fail with a shape error (nobody hangs or reads past a buffer)
expect_error("allreduce of different shapes", "TG_ERROR_SHAPE", lambda: comm.allreduce(Tensor.ones(R + 1)))
expect_error("broadcast from a rank that is not there", "TG_ERROR_INVALID_ARGUMENT", lambda: comm.broadcast(Tensor.ones(2), root=N))
if N > 1:
  # a message of another size than the receive expects
  if R == 0: comm.send(Tensor.ones(3), 1, tag=9)
  if R == 1: expect_error("recv of a smaller message", "TG_ERROR_SHAPE", lambda: comm.recv((5,), dtypes.float32, 0, tag=9))

# a device whose memory is not the host's (OpenCL, PoCL here): the bytes go through host memory and come back on it
try:
  from tinygrad_c import Device
  Device.open("CL")
  cl = True
except TinygradError:
  cl = False
if cl:
  x = Tensor(np.arange(10, dtype=np.float32) * (R + 1), device="CL")
  y = comm.allreduce(x * 2, "max")
  assert y.device == "CL", y.device
  check("allreduce on CL", y.numpy(), np.arange(10, dtype=np.float64) * 2 * N, dtypes.float32)
  check("allgather on CL", comm.allgather(x).numpy(), np.concatenate([np.arange(10.0) * (k + 1) for k in range(N)]), dtypes.float32)
  check("broadcast on CL", comm.broadcast(x, root=N - 1).numpy(), np.arange(10.0) * N, dtypes.float32)

# split: even and odd ranks
sub = comm.split(R % 2, R)
members = [k for k in range(N) if k % 2 == R % 2]
assert sub.size == len(members) and sub.rank == members.index(R), (sub.size, sub.rank)
check("split allreduce", sub.allreduce(Tensor([float(R)])).numpy(), np.array([float(sum(members))]), dtypes.float32)
del sub

# inside a TinyJit: the allreduce is captured with the kernels around it and replays with each call's input
@TinyJit
def step(x: Tensor) -> Tensor:
  return (comm.allreduce(x * 2) + 1).realize()

for i in range(4):
  x = Tensor(np.full((4,), float(R + i), dtype=np.float32))
  before = GlobalCounters.schedule_count
  y = step(x).numpy()
  check(f"jit call {i}", y, np.full((4,), 2.0 * sum(k + i for k in range(N)) + 1), dtypes.float32)
  if i >= 2 and GlobalCounters.schedule_count != before:
    print(f"rank {R}: jit replay {i} scheduled", flush=True)
    sys.exit(1)

# an input allreduced as it is (no kernel before the step): each replay reads that call's buffer
@TinyJit
def direct(x: Tensor) -> Tensor:
  return comm.allreduce(x, "min")

for i in range(4):
  x = Tensor(np.full((3,), float(10 * R + i), dtype=np.float32)).realize()
  check(f"jit of an input {i}", direct(x).numpy(), np.full((3,), float(i)), dtypes.float32)

# data parallel: each rank's gradient on its share of a batch, averaged, equals the whole batch's gradient
Tensor.manual_seed(3)
model = nn.Linear(6, 4)
comm.broadcast_tensors([model.weight, model.bias], root=0)
rng = np.random.default_rng(5)
X, Y = rng.standard_normal((8 * N, 6)).astype(np.float32), rng.integers(0, 4, 8 * N)
params = [model.weight, model.bias]
for p in params: p.requires_grad = True
model(Tensor(X)).sparse_categorical_crossentropy(Tensor(Y)).backward()
full = [p.grad.numpy() for p in params]
for p in params: p.grad = None
share = slice(8 * R, 8 * (R + 1))
model(Tensor(X[share])).sparse_categorical_crossentropy(Tensor(Y[share])).backward()
comm.average_gradients(params)
for p, f in zip(params, full): check("averaged gradient", p.grad.numpy(), f, dtypes.float32)

print(f"collectives ok rank {R} of {N}", flush=True)

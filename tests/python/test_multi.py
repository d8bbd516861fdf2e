# Allreduce between the devices of one process (tg_tensor_allreduce): the virtual CPU devices CPU, CPU:1..3 (each its
# own allocator), and CL where it is. Every dtype and op against numpy, the ring's and the naive way's copy counts, the
# same bits on every device, TinyJit replays, and bad arguments.
import numpy as np
import pytest

from tinygrad_c import Context, Device, GlobalCounters, Tensor, TinyJit, TinygradError, dtypes
from tinygrad_c.comm import allreduce_devices

DEVS = ["CPU", "CPU:1", "CPU:2", "CPU:3"]
ALL = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64,
       dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]


def _inputs(dt, n, shape, seed=0):
  rng = np.random.default_rng(seed)
  if dt == dtypes.bool: return [rng.random(shape) < 0.5 for _ in range(n)]
  np_dt = np.float32 if dt == dtypes.bfloat16 else np.dtype(dt.np)
  if np.issubdtype(np_dt, np.integer): return [rng.integers(0, 5, size=shape).astype(np_dt) for _ in range(n)]
  return [(rng.standard_normal(shape) * 4).astype(np_dt) for _ in range(n)]


def _want(xs, op, dt):
  if dt == dtypes.bool:
    return {"sum": np.logical_or, "max": np.logical_or, "prod": np.logical_and, "min": np.logical_and}[op].reduce(xs)
  wide = np.float64 if dtypes.is_float(dt) else xs[0].dtype
  a = np.stack([x.astype(wide) for x in xs])
  r = {"sum": a.sum(0), "avg": a.sum(0) / len(xs), "prod": a.prod(0), "max": a.max(0), "min": a.min(0)}[op]
  return r.astype(xs[0].dtype) if not dtypes.is_float(dt) else r


def _tol(dt):
  return {dtypes.float16: 1e-2, dtypes.bfloat16: 3e-2, dtypes.float32: 1e-5, dtypes.float64: 1e-12}.get(dt, 0)


def _check(outs, xs, op, dt, devs):
  want = _want(xs, op, dt)
  first = None
  for o, d in zip(outs, devs):
    assert o.device == d and o.dtype == dt and o.shape == xs[0].shape
    got = o.numpy()
    if dt == dtypes.bfloat16: got = got.astype(np.float32)
    if _tol(dt): np.testing.assert_allclose(got.astype(np.float64), want, rtol=_tol(dt), atol=_tol(dt))
    else: np.testing.assert_array_equal(got, want)
    first = got if first is None else first
    assert first.tobytes() == got.tobytes(), "devices got different bits"


@pytest.mark.parametrize("ring", [0, 2], ids=["naive", "ring"])
@pytest.mark.parametrize("dt", ALL, ids=lambda d: d.name)
def test_every_dtype(dt, ring):
  ops = ["sum", "max", "min", "prod"] + (["avg"] if dtypes.is_float(dt) else [])
  xs = _inputs(dt, 4, (3, 37))  # 111 elements: chunks of unequal length, the last short
  ts = [Tensor(x if dt != dtypes.bfloat16 else x, dtype=dt, device=d) for x, d in zip(xs, DEVS)]
  if dt == dtypes.bfloat16: xs = [t.float().numpy() for t in ts]  # the values bfloat16 holds
  with Context(RING=ring):
    for op in ops:
      _check(allreduce_devices(ts, op), xs, op, dt, DEVS)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_copy_counts(n):
  # ring: n(n-1) copies to reduce-scatter and n(n-1) to all-gather (tinygrad's test_allreduce count); naive: n(n-1)
  xs = _inputs(dtypes.float32, n, (n, 1000), seed=n)
  ts = [Tensor(x, device=d).realize() for x, d in zip(xs, DEVS)]
  for ring, copies in [(2, 2 * n * (n - 1)), (0, n * (n - 1))]:
    with Context(RING=ring):
      GlobalCounters.reset()
      outs = allreduce_devices(ts)
      assert GlobalCounters.copy_count == copies, (ring, GlobalCounters.copy_count)
      nbytes = n * 1000 * 4
      assert GlobalCounters.copy_bytes == (2 * (n - 1) * nbytes if ring else n * (n - 1) * nbytes)
      _check(outs, xs, "sum", dtypes.float32, DEVS[:n])


def test_ring_is_chosen_by_size():
  # by default (RING=1): ring above RING_ALLREDUCE_THRESHOLD elements on more than 2 devices, naive otherwise
  big = [Tensor(np.full(300000, k, np.float32), device=d).realize() for k, d in enumerate(DEVS)]
  GlobalCounters.reset()
  out = allreduce_devices(big)
  assert GlobalCounters.copy_count == 24
  assert (out[3].numpy() == 6).all()
  small = [Tensor(np.full(1000, k, np.float32), device=d).realize() for k, d in enumerate(DEVS)]
  GlobalCounters.reset()
  allreduce_devices(small)
  assert GlobalCounters.copy_count == 12
  with Context(RING_ALLREDUCE_THRESHOLD=100):
    GlobalCounters.reset()
    allreduce_devices(small)
    assert GlobalCounters.copy_count == 24
  GlobalCounters.reset()
  allreduce_devices(big[:2])  # two devices: naive whatever the size
  assert GlobalCounters.copy_count == 2


def test_views_and_lazy_inputs_and_edge_shapes():
  a = Tensor(np.arange(40, dtype=np.float32).reshape(5, 8), device="CPU")
  b = Tensor(np.ones((8, 5), np.float32), device="CPU:1").T * 3  # a view, not yet computed
  c = Tensor(np.full((5, 8), 2, np.float32), device="CPU:2")[:, :]
  with Context(RING=2):
    out = allreduce_devices([a, b, c])
  for o in out: np.testing.assert_array_equal(o.numpy(), np.arange(40).reshape(5, 8) + 5)
  zero_d = allreduce_devices([Tensor(2.5, device=d) for d in DEVS[:3]])
  assert [o.shape for o in zero_d] == [()] * 3 and zero_d[2].item() == 7.5
  empty = allreduce_devices([Tensor.empty(0, 3, device=d) for d in DEVS[:2]])
  assert [o.shape for o in empty] == [(0, 3)] * 2
  one = allreduce_devices([Tensor([1.0, 2.0], device="CPU:1")], "avg")
  assert one[0].device == "CPU:1" and one[0].tolist() == [1.0, 2.0]
  with Context(RING=2):  # fewer elements than devices: some chunks are empty
    tiny = allreduce_devices([Tensor([float(k)], device=d) for k, d in enumerate(DEVS)], "max")
  assert [o.item() for o in tiny] == [3.0] * 4


def test_jit_replays_the_copies():
  @TinyJit
  def step(a, b, c, d):
    return [o * 2 for o in allreduce_devices([a, b, c, d])]
  rng = np.random.default_rng(1)
  for i in range(4):
    xs = [rng.standard_normal(50000).astype(np.float32) for _ in DEVS]
    ts = [Tensor(x, device=d).realize() for x, d in zip(xs, DEVS)]
    with Context(RING=2):
      GlobalCounters.reset()
      outs = step(*ts)
      if i >= 2: assert GlobalCounters.lower_count == 0 and GlobalCounters.copy_count == 24, i  # replayed, nothing lowered
    for o, d in zip(outs, DEVS): np.testing.assert_allclose(o.numpy(), np.sum(xs, 0) * 2, rtol=1e-5, atol=1e-5)


def test_to_in_a_jit_copies_each_call():
  @TinyJit
  def f(x): return (x.to("CPU:1") + 1).contiguous()
  for i in range(4):
    x = Tensor(np.full(8, i, np.float32), device="CPU").realize()
    assert f(x).tolist() == [i + 1.0] * 8


def test_with_another_kind_of_device():
  try:
    Device.open("CL")
  except TinygradError as e:
    pytest.skip(f"CL is not on this machine: {e}")
  xs = _inputs(dtypes.float32, 3, (1000,), seed=3)
  devs = ["CPU", "CL", "CPU:1"]
  with Context(RING=2):
    _check(allreduce_devices([Tensor(x, device=d) for x, d in zip(xs, devs)], "sum"), xs, "sum", dtypes.float32, devs)


def test_bad_arguments():
  a, b = Tensor([1.0, 2.0], device="CPU"), Tensor([1.0, 2.0], device="CPU:1")
  with pytest.raises(TinygradError, match="two tensors on CPU"):
    allreduce_devices([a, a])
  with pytest.raises(TinygradError, match="shape"):
    allreduce_devices([a, Tensor([1.0, 2.0, 3.0], device="CPU:1")])
  with pytest.raises(TinygradError, match="int32"):
    allreduce_devices([a, Tensor([1, 2], device="CPU:1")])
  with pytest.raises(TinygradError, match="avg of int32"):
    allreduce_devices([Tensor([1, 2], device="CPU"), Tensor([1, 2], device="CPU:1")], "avg")
  with pytest.raises(TinygradError, match="no tensors"):
    allreduce_devices([])
  with pytest.raises(ValueError, match="op must be"):
    allreduce_devices([a, b], "median")

# Tensors sharded over the virtual CPU devices (CPU, CPU:1..3): Tensor.shard as tinygrad's. Every op family on sharded
# tensors against the same op on the unsharded tensor (exact for integers and for float ops that don't reassociate,
# float tolerance for reductions), uneven splits, gradients of a sharded MLP against the unsharded ones, the copies an
# allreduce makes, a data-parallel training step under TinyJit replayed with nothing scheduled, in-place assigns to
# each shard, the C API's queries, and bad arguments.
import numpy as np
import pytest

from tinygrad_c import C, Context, GlobalCounters, Tensor, TinyJit, TinygradError, Variable, dtypes, nn

D2, D3, D4 = ("CPU", "CPU:1"), ("CPU", "CPU:1", "CPU:2"), ("CPU", "CPU:1", "CPU:2", "CPU:3")
RNG = np.random.default_rng(0)


def _f32(*shape): return RNG.standard_normal(shape).astype(np.float32)


def _same(got, want, exact=False):
  if exact: np.testing.assert_array_equal(got, want)
  else: np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _shard(x, devs, axis): return Tensor(x).shard(devs, axis)


# ---- making, reading, moving ----
@pytest.mark.parametrize("devs", [D2, D3, D4], ids=len)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_shard_round_trip(devs, axis):
  x = _f32(10, 7)  # 10 and 7 split unevenly over 3 and 4 devices
  t = _shard(x, devs, axis)
  assert t.device == devs and t.shape == x.shape and t.dtype == dtypes.float32
  _same(t.numpy(), x, exact=True)
  _same(t.to("CPU:2").numpy(), x, exact=True)
  assert t.to("CPU:2").device == "CPU:2"


def test_split_sizes_follow_tinygrad():
  # ceil(size / n) per device in order, the last ones smaller or empty
  for size, n, want in [(10, 4, [3, 3, 3, 1]), (2, 4, [1, 1, 0, 0]), (8, 3, [3, 3, 2]), (4, 4, [1, 1, 1, 1])]:
    t = Tensor(np.arange(size, dtype=np.int32)).shard(D4[:n], 0)
    got = [_bounds(t)[i][1] - _bounds(t)[i][0] for i in range(n)]
    assert got == want, (size, n, got)
    for i in range(n):
      s = Tensor._wrap(C.tensor_shard_get(t._h, i), "tensor_shard_get")
      assert s.device == D4[i] and s.tolist() == list(range(size))[_bounds(t)[i][0]:_bounds(t)[i][1]]


def _bounds(t):
  import ctypes
  n = C.tensor_device_count(t._h)
  out = (ctypes.c_int64 * (2 * n))()
  assert C.tensor_shard_bounds(t._h, out, 2 * n) == 0
  return [(out[2 * i], out[2 * i + 1]) for i in range(n)]


def _axis(t):
  import ctypes
  a = ctypes.c_int64()
  assert C.tensor_shard_axis(t._h, ctypes.byref(a)) == 0
  return a.value


def test_queries():
  t = Tensor(_f32(8, 4)).shard(D4, 1)
  assert C.tensor_device_count(t._h) == 4 and _axis(t) == 1 and _bounds(t) == [(0, 1), (1, 2), (2, 3), (3, 4)]
  assert [C.tensor_device_at(t._h, i).decode() for i in range(4)] == list(D4)
  assert _axis((t + 1).sum(1)) == -1  # reduced over the split axis: a whole copy on each
  assert _axis(t.T) == 0 and _axis(t.reshape(8, 4, 1)) == 1 and _axis(t.reshape(8, 2, 2)) == -1 and _axis(t.reshape(32)) == -1
  p = Tensor(_f32(3)).to("CPU:1")
  assert C.tensor_device_count(p._h) == 1 and _axis(p) == -1


def test_to_a_tuple_replicates_and_names_are_canonical():
  x = Tensor.ones(16).contiguous().realize()
  x.to_(("cpu:0", "CPU:1"))
  assert x.device == ("CPU", "CPU:1")
  _same((x + x).numpy(), np.full(16, 2, np.float32), exact=True)
  z = Tensor.zeros(3, 4, device=D3)
  assert z.device == D3 and z.numpy().sum() == 0
  y = Tensor([1, 2, 3], device=D2)
  assert y.device == D2 and y.tolist() == [1, 2, 3]


def test_empty_shards():
  # 2 rows over 4 devices: the last two shards are empty, and reduce to the identity
  x, xi = _f32(2, 3), np.arange(6, dtype=np.int32).reshape(2, 3)
  t, ti = _shard(x, D4, 0), Tensor(xi).shard(D4, 0)
  _same((t * 2).numpy(), x * 2, exact=True)
  _same(t.sum(0).numpy(), x.sum(0))
  _same(t.max(0).numpy(), x.max(0), exact=True)
  _same(t.argmax(0).numpy(), x.argmax(0), exact=True)
  _same(ti.prod(0).numpy(), xi.prod(0), exact=True)
  _same(ti.min(0).numpy(), xi.min(0), exact=True)
  _same((t @ _shard(w := _f32(3, 5), D4, None)).numpy(), x @ w)


def test_shard_over_one_device_is_a_plain_tensor():
  x = _f32(4, 3)
  t = _shard(x, ("CPU:2",), 0)
  assert t.device == "CPU:2" and C.tensor_device_count(t._h) == 1
  _same((t + 1).numpy(), x + 1, exact=True)
  _same(_shard(x, D2, 0).shard(("CPU:1",)).numpy(), x, exact=True)


def test_shard_of_a_sharded_tensor_reshards():
  x = _f32(8, 6)
  t = _shard(x, D2, 0).shard(D3, 1)
  assert t.device == D3 and _axis(t) == 1
  _same(t.numpy(), x, exact=True)


def test_shard_including_the_source_device_and_empty():
  x = Tensor.ones(256).contiguous().realize()
  x.shard_(("CPU:1", x.device), 0)
  _same((x + x).numpy(), np.full(256, 2, np.float32), exact=True)
  e = Tensor.empty(256).shard(D2, 0).realize()
  assert e.shape == (256,)
  z = Tensor(np.zeros((0, 3), np.float32)).shard(D2, 0)
  assert z.numpy().shape == (0, 3)


# ---- op families against the unsharded op ----
ELEMENTWISE = {
  "add": lambda a, b: a + b, "mul_sub": lambda a, b: a * b - a, "div": lambda a, b: a / (b.abs() + 1),
  "max": lambda a, b: a.maximum(b), "where": lambda a, b: (a < b).where(a, b * 2), "exp": lambda a, b: a.exp() + b.sin(),
  "relu_sigmoid": lambda a, b: a.relu() * b.sigmoid(), "cmp": lambda a, b: (a > b).int() + (a == a).int(),
  "cast": lambda a, b: a.cast(dtypes.float16).float() + b.cast(dtypes.int32).float(), "scalar": lambda a, b: 2 * a + 3 - (a - b) ** 2,
}


@pytest.mark.parametrize("op", ELEMENTWISE)
@pytest.mark.parametrize("axes", [(0, 0), (1, 1), (0, None), (None, 1), (0, 1), (None, None)], ids=str)
def test_elementwise(op, axes):
  x, y = _f32(6, 5), _f32(6, 5)
  f = ELEMENTWISE[op]
  want = f(Tensor(x), Tensor(y)).numpy()
  got = f(_shard(x, D3, axes[0]), _shard(y, D3, axes[1]))
  assert got.device == D3
  # elementwise: the same kernels' math, bit for bit (an op of one input alone, b ** 2, may run before a reshard, in
  # the copy: its product is then rounded before the add, where the whole op's kernel fuses the two)
  _same(got.numpy(), want, exact=True)


def test_integer_ops_are_exact():
  a, b = RNG.integers(-50, 50, (9, 4)).astype(np.int32), RNG.integers(1, 9, (9, 4)).astype(np.int32)
  ta, tb = Tensor(a).shard(D4, 0), Tensor(b).shard(D4, 0)
  _same((ta // tb).numpy(), (Tensor(a) // Tensor(b)).numpy(), exact=True)
  _same((ta % tb).numpy(), a % b, exact=True)
  _same((ta ^ tb).numpy(), a ^ b, exact=True)
  _same(ta.sum(0).numpy(), a.sum(0), exact=True)
  _same(ta.sum().numpy(), a.sum(), exact=True)
  _same(ta.max(0).numpy(), a.max(0), exact=True)
  _same(ta.min().numpy(), a.min(), exact=True)
  _same((ta > 0).any(0).numpy(), (a > 0).any(0), exact=True)
  _same((ta > -49).all(0).numpy(), (a > -49).all(0), exact=True)
  _same(ta.argmax(0).numpy(), a.argmax(0), exact=True)


@pytest.mark.parametrize("devs", [D2, D3], ids=len)
@pytest.mark.parametrize("rop", ["sum", "prod", "max", "min", "mean"])
@pytest.mark.parametrize("shard_axis", [None, 0, 1])
@pytest.mark.parametrize("reduce_axis", [None, 0, 1])
def test_reduce(devs, rop, shard_axis, reduce_axis):
  n = 4 * len(devs)
  x = RNG.random((n, n)).astype(np.float32) + 0.5
  got = getattr(_shard(x, devs, shard_axis), rop)(reduce_axis).numpy()
  want = getattr(x.astype(np.float64), rop)(reduce_axis)
  np.testing.assert_allclose(got, want, rtol=1e-5 if rop != "prod" else 1e-4)


@pytest.mark.parametrize("axis", [None, 0, 1, 2])
def test_movement(axis):
  x = _f32(4, 6, 3)
  t, r = _shard(x, D2, axis), Tensor(x)
  views = [lambda v: v.reshape(24, 3), lambda v: v.reshape(4, 18), lambda v: v.reshape(2, 2, 6, 3), lambda v: v.reshape(-1),
           lambda v: v.permute(2, 0, 1), lambda v: v.T, lambda v: v[:, None].expand(4, 5, 6, 3), lambda v: v.pad(((1, 2), (0, 1), (2, 0))),
           lambda v: v.shrink(((1, 3), None, (0, 2))), lambda v: v.shrink(((0, 2), None, None)), lambda v: v.flip(0), lambda v: v.flip((1, 2)),
           lambda v: v[1], lambda v: v[:, 2:5, ::2], lambda v: v[::-1, 1], lambda v: v.repeat(2, 1, 1), lambda v: v.flatten(1),
           lambda v: v.unsqueeze(1).squeeze(1), lambda v: v.transpose(0, 2).contiguous().reshape(3, 24)]
  for i, v in enumerate(views):
    _same(v(t).numpy(), v(r).numpy(), exact=True)


def test_shrink_and_pad_along_the_split_axis_stay_split():
  x = _f32(10, 3)
  t = _shard(x, D4, 0).realize()  # rows 3, 3, 3, 1
  for lo, hi in [(2, 5), (0, 3), (3, 6), (9, 10), (4, 4), (0, 10)]:
    GlobalCounters.reset()
    s = t[lo:hi].contiguous().realize()
    assert _axis(s) == 0 and GlobalCounters.copy_count == 0, (lo, hi)  # each device cut its own rows: nothing copied
    assert [b - a for a, b in _bounds(s)] == [max(0, min(hi, e) - max(lo, b)) for b, e in [(0, 3), (3, 6), (6, 9), (9, 10)]]
    _same(s.numpy(), x[lo:hi], exact=True)
  p = t.pad(((2, 1), (0, 0)), value=7.0)
  assert _axis(p) == 0 and [b - a for a, b in _bounds(p)] == [5, 3, 3, 2]
  _same(p.numpy(), np.pad(x, ((2, 1), (0, 0)), constant_values=7.0), exact=True)
  _same((p[1:12] * 2 + _shard(np.pad(x, ((2, 1), (0, 0)))[1:12], D4, 0)).numpy(), np.pad(x, ((2, 1), (0, 0)), constant_values=7.0)[1:12] * 2 +
        np.pad(x, ((2, 1), (0, 0)))[1:12], exact=True)  # split unevenly against evenly: resharded


def test_cat_and_stack_reshard_mismatched_axes():
  x, y, z = _f32(4, 4), _f32(4, 4), _f32(4, 4)
  X, Y, Z = _shard(x, D2, 0), _shard(y, D2, 0), _shard(z, D2, 1)
  for dim in (0, 1):
    _same(Tensor.stack(X, Y, Z, dim=dim).numpy(), np.stack([x, y, z], dim), exact=True)
    _same(X.cat(Z, dim=dim).numpy(), np.concatenate([x, z], dim), exact=True)
  g = Tensor.stack(X, Y).sum().gradient(X)[0]
  _same(g.numpy(), np.ones((4, 4), np.float32), exact=True)


def test_matmul_data_and_model_parallel():
  x, w = _f32(12, 10), _f32(10, 8)
  want = Tensor(x).matmul(Tensor(w)).numpy()
  for xa, wa in [(0, None), (None, 1), (None, 0), (1, 0), (0, 1), (1, None)]:
    _same(_shard(x, D4, xa).matmul(_shard(w, D4, wa)).numpy(), want)


def test_nn_functions():
  x = _f32(8, 10)
  for axis in (0, 1):
    t = _shard(x, D2, axis)
    _same(t.softmax(1).numpy(), Tensor(x).softmax(1).numpy())
    _same(t.log_softmax(0).numpy(), Tensor(x).log_softmax(0).numpy())
    _same(t.layernorm().numpy(), Tensor(x).layernorm().numpy())
    _same(t.cumsum(1).numpy(), np.cumsum(x, 1))
    _same(t.cumsum(0).numpy(), np.cumsum(x, 0))
  img, w = _f32(4, 3, 9, 9), _f32(5, 3, 3, 3)
  want = Tensor(img).conv2d(Tensor(w), padding=1).max_pool2d().numpy()
  _same(_shard(img, D2, 0).conv2d(_shard(w, D2, None), padding=1).max_pool2d().numpy(), want)
  _same(_shard(img, D2, None).conv2d(_shard(w, D2, 0), padding=1).max_pool2d().numpy(), want)
  y = RNG.integers(0, 10, 8)
  _same(_shard(x, D4, 0).sparse_categorical_crossentropy(Tensor(y).shard(D4, 0)).numpy(),
        Tensor(x).sparse_categorical_crossentropy(Tensor(y)).numpy())


def test_const_like_and_shrink_on_the_split_axis():
  t = Tensor.ones(16, 16, dtype=dtypes.int).shard(D2, axis=0)
  assert t.const_like(2)[:, :8].tolist() == [[2] * 8] * 16
  x = Tensor.arange(16).reshape(4, 4).clone().shard(D2, 0)
  for i in range(2): assert x[i * 2:i * 2 + 2].contiguous().tolist() == np.arange(16).reshape(4, 4)[i * 2:i * 2 + 2].tolist()


# ---- autograd, optimizers, TinyJit ----
def _mlp_grads(mode):
  rng = np.random.default_rng(1)
  x, y = rng.standard_normal((16, 8)).astype(np.float32), rng.integers(0, 4, 16)
  w1, w2 = rng.standard_normal((8, 12)).astype(np.float32), rng.standard_normal((12, 4)).astype(np.float32)
  W1, W2, X, Y = Tensor(w1, requires_grad=True), Tensor(w2, requires_grad=True), Tensor(x), Tensor(y)
  if mode == "data": X.shard_(D4, 0), Y.shard_(D4, 0), W1.shard_(D4), W2.shard_(D4)
  if mode == "model": X.shard_(D4), Y.shard_(D4), W1.shard_(D4, 1), W2.shard_(D4, 0)
  loss = (X @ W1).relu().matmul(W2).sparse_categorical_crossentropy(Y)
  loss.backward()
  assert W1.grad.device == (D4 if mode else "CPU")
  return loss.numpy(), W1.grad.numpy(), W2.grad.numpy()


@pytest.mark.parametrize("mode", ["data", "model"])
def test_gradients_of_a_sharded_mlp(mode):
  for got, want in zip(_mlp_grads(mode), _mlp_grads(None)): np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gradient_of_a_replicated_tensor():
  x = Tensor.ones(256).contiguous().realize()
  x.to_(D2)
  _same(x.sum().gradient(x)[0].numpy(), np.ones(256, np.float32), exact=True)


def _train(shard, steps=6):
  rng = np.random.default_rng(2)
  w1, w2 = rng.standard_normal((8, 12)).astype(np.float32), rng.standard_normal((12, 4)).astype(np.float32)
  xs, ys = rng.standard_normal((steps, 16, 8)).astype(np.float32), rng.integers(0, 4, (steps, 16))
  W1, W2 = Tensor(w1), Tensor(w2)
  if shard: W1.shard_(D2), W2.shard_(D2)
  opt = nn.optim.Adam([W1, W2], lr=0.01)

  @TinyJit
  @Context(TRAINING=1)
  def step(X, Y):
    opt.zero_grad()
    loss = (X @ W1).relu().matmul(W2).sparse_categorical_crossentropy(Y).backward()
    opt.step()
    return loss.realize()

  losses = []
  for i in range(steps):
    X, Y = Tensor(xs[i]), Tensor(ys[i])
    if shard: X, Y = X.shard(D2, 0), Y.shard(D2, 0)
    GlobalCounters.reset()
    losses.append(step(X, Y).item())
    if i >= 2: assert GlobalCounters.lower_count == 0 and (GlobalCounters.copy_count > 0) == shard, i  # replayed: nothing scheduled
  return losses, W1.numpy(), W2.numpy()


def test_data_parallel_adam_under_tinyjit_matches_one_device():
  got, want = _train(True), _train(False)
  np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
  np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_optimizer_state_is_split_like_its_parameter():
  w = Tensor(_f32(8, 4)).shard(D2, 0)
  opt = nn.optim.Adam([w], lr=0.1)
  with Context(TRAINING=1):
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()
  assert w.device == D2 and _axis(w) == 0


def test_jit_with_sharded_inputs_and_shard_inside():
  @TinyJit
  def f(x): return (x + 1).contiguous().sum()

  @TinyJit
  def g(x): return (x.shard(("CPU:1", "CPU:2"), 0) + 1).contiguous().sum()

  for i in range(5):
    assert f(Tensor.arange(0, 4).clone().realize().shard(D2, 0).realize()).item() == 10
    assert g(Tensor.arange(i, i + 4).clone().realize()).item() == 4 * i + 10
  with pytest.raises(TinygradError, match="sharded otherwise"):
    f(Tensor.arange(0, 4).clone().realize().shard(D2))


def test_assign_updates_each_shard_in_place():
  @TinyJit
  def jf(out):
    tmp = (Tensor.arange(4, dtype=dtypes.float).clone().shard(D2, 0) + 1).contiguous().realize()
    out.assign((tmp + 1).contiguous()).realize()
    return out

  out = Tensor.full((4,), -1.0).shard(D2, 0).contiguous().realize()
  for _ in range(5):
    out.assign(Tensor.full((4,), -1.0).shard(D2, 0).contiguous()).realize()
    jf(out)
    _same(out.numpy(), np.arange(4, dtype=np.float32) + 2, exact=True)


def test_kv_cache_with_a_bound_variable():
  bsz, ctx = 2, 8
  cache = Tensor.zeros(bsz, ctx, 1, 1).shard(D2).contiguous().realize()
  cache.assign(Tensor.ones(bsz, 3, 1, 1).shard(D2).pad((None, (0, ctx - 3), None, None)).contiguous()).realize()
  for i in range(3, 6):
    p = Variable("start_pos", 1, ctx).bind(i)
    keys = cache.shrink((None, (0, p), None, None)).cat(Tensor.ones(bsz, 1, 1, 1).shard(D2), dim=1).contiguous()
    cache.assign(keys.pad((None, (0, ctx - i - 1), None, None)).contiguous()).realize()
  _same(cache.flatten().numpy(), np.array([1.] * 6 + [0.] * 2 + [1.] * 6 + [0.] * 2, np.float32), exact=True)


# ---- collectives: how many copies ----
@pytest.mark.parametrize("ring", [0, 2])
def test_reduce_over_the_split_axis_is_an_allreduce(ring):
  x = _f32(4, 1000)
  t = _shard(x, D4, 0).realize()
  with Context(RING=ring):
    GlobalCounters.reset()
    s = t.sum(0).realize()
    assert GlobalCounters.copy_count == (24 if ring else 12)  # ring: 2n(n-1) copies of a part; naive: n(n-1) whole
  _same(s.numpy(), x.sum(0))
  GlobalCounters.reset()
  (t.sum(1) + 1).realize()  # along the other axis: no copies
  assert GlobalCounters.copy_count == 0


# ---- errors ----
def test_bad_arguments():
  t = Tensor(_f32(4, 4))
  with pytest.raises(TinygradError, match="named twice"): t.shard(("CPU", "cpu:0"))
  with pytest.raises(TinygradError): t.shard(("CPU", "NOPE"))
  with pytest.raises(IndexError): t.shard(D2, 2)
  with pytest.raises(TinygradError, match="0-d"): Tensor(1.0).shard(D2, 0)
  with pytest.raises(TinygradError, match="different devices"): t.shard(D2, 0) + t
  with pytest.raises(TinygradError, match="different devices"): t.shard(D2, 0) + t.shard(D3, 0)
  import ctypes
  assert C.tensor_shard(t._h, None, 0, -1) is None  # no devices
  assert C.tensor_shard(t._h, (ctypes.c_char_p * 1)(b"CPU"), 1, -2) is None  # axis -2: neither a dim nor -1
  assert C.tensor_shard_get(t.shard(D2)._h, 5) is None
  assert C.tensor_device_at(t._h, 1) is None


def test_shard_over_another_kind_of_device():
  try:
    from tinygrad_c import Device
    Device.open("CL")
  except TinygradError:
    pytest.skip("no OpenCL device")
  x, w = _f32(8, 6), _f32(6, 4)
  X, W = _shard(x, ("CPU", "CL"), 0), _shard(w, ("CPU", "CL"), None)
  assert X.device == ("CPU", "CL")
  _same((X @ W).relu().sum(0).numpy(), np.maximum(x @ w, 0).sum(0))
  _same(X.to("CL").numpy(), x, exact=True)

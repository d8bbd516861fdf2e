"""tinygrad programs run on the binding with only their imports changed: the calling conventions tinygrad's own
example (examples/beautiful_mnist.py) and tinygrad users rely on, each written as a tinygrad user writes it.

Context and Tensor.train as decorators and context managers (thread-local), TinyJit on methods (a capture per
instance) and with tinygrad's argument rules, Tensor.sequential, `function`, realize(*lst), GlobalCounters and the
tinygrad_c.helpers names. Values are checked against numpy (float32, rtol 1e-5) on small shapes.
"""
import threading

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Context, GlobalCounters, Tensor, TinyJit, function, nn
from tinygrad_c.helpers import DEBUG, Timing, colored, getenv, prod, tqdm, trange


@pytest.fixture(autouse=True)
def jit_on():
  with Context(JIT=1, TRAINING=0): yield


# ---- Context and Tensor.train ----------------------------------------------------------------------------------------
def test_context_as_decorator_sets_for_each_call_and_restores():
  @Context(TRAINING=1)
  def f(): return Tensor.training

  assert Tensor.training is False
  assert f() is True and f() is True  # the same Context object, entered at every call
  assert Tensor.training is False


def test_context_nests_and_restores_in_order():
  with Context(DEBUG=0):
    with Context(DEBUG=2):
      assert DEBUG >= 2 and DEBUG.value == 2
      with Context(DEBUG=1): assert DEBUG == 1
      assert DEBUG == 2
    assert DEBUG == 0 and not DEBUG


def test_context_restores_after_an_exception():
  with pytest.raises(ZeroDivisionError):
    with Context(TRAINING=1): 1 / 0
  assert Tensor.training is False


def test_context_unknown_option_is_a_keyerror_and_sets_nothing():
  with pytest.raises(KeyError):
    with Context(TRAINING=1, NO_SUCH_OPTION=1): pass
  assert Tensor.training is False
  with pytest.raises(TypeError): Context(DEBUG=[2])
  with pytest.raises(tg.InvalidArgumentError):
    with Context(DEBUG="two"): pass


def test_train_is_a_decorator_and_a_context_manager():
  @Tensor.train()
  def in_training(): return Tensor.training

  assert in_training() is True and Tensor.training is False
  with Tensor.train():
    assert Tensor.training is True
    with Tensor.train(False): assert Tensor.training is False
    assert Tensor.training is True
  assert Tensor.training is False


def test_context_and_train_are_per_thread():
  # two threads, one training and one evaluating at once: each sees its own value throughout
  barrier, seen = threading.Barrier(2), {}
  def run(mode):
    with Tensor.train(mode):
      barrier.wait()
      vals = [Tensor.training for _ in range(200)]
      barrier.wait()
    seen[mode] = set(vals)
  ts = [threading.Thread(target=run, args=(m,)) for m in (True, False)]
  for t in ts: t.start()
  for t in ts: t.join()
  assert seen == {True: {True}, False: {False}}
  assert Tensor.training is False


def test_dropout_follows_a_decorated_training_block():
  x = Tensor.ones(4096)
  @Context(TRAINING=1)
  def train_drop(x): return x.dropout(0.5).numpy()
  out = train_drop(x)
  assert set(np.unique(out)) == {0.0, 2.0}
  np.testing.assert_array_equal(x.dropout(0.5).numpy(), np.ones(4096, np.float32))


# ---- TinyJit ---------------------------------------------------------------------------------------------------------
class Scale:
  def __init__(self, k): self.w = Tensor([float(k)] * 4).realize()

  @TinyJit
  def step(self, x: Tensor) -> Tensor: return (x * self.w).realize()


def test_tinyjit_on_a_method_binds_self_and_captures_per_instance():
  a, b = Scale(2), Scale(3)
  for i in range(4):  # run, capture, replay, replay
    x = Tensor([1.0, 2.0, 3.0, float(i)]).realize()
    np.testing.assert_allclose(a.step(x).numpy(), 2 * x.numpy())
    np.testing.assert_allclose(b.step(x).numpy(), 3 * x.numpy())
  assert a.step.call_count >= 2 and b.step.call_count >= 2
  assert a.step is a.step and a.step is not b.step
  assert isinstance(Scale.step, TinyJit)


def test_tinyjit_method_does_not_keep_its_instance_alive():
  import gc, weakref
  s = Scale(2)
  s.step(Tensor.ones(4).realize())
  r = weakref.ref(s)
  del s
  gc.collect()
  assert r() is None


def test_tinyjit_takes_keyword_and_non_tensor_arguments_and_tensor_lists():
  @TinyJit
  def f(x, scale, *, y, extra):
    return (x * scale + y + extra[0] * extra[1]).realize()
  for i in range(4):
    x, y = Tensor.full((3,), float(i)).realize(), Tensor.full((3,), 10.0).realize()
    e = [Tensor.full((3,), 2.0).realize(), Tensor.full((3,), float(i)).realize()]
    # scale is not an input: a replay does not look at it (as tinygrad), so keep it the same
    np.testing.assert_allclose(f(x, 5, y=y, extra=e).numpy(), np.full(3, i * 5 + 10 + 2 * i, np.float32))
  assert f.call_count >= 2


def _train_losses(steps):
  # beautiful_mnist's pattern: @TinyJit over @Context(TRAINING=1) on a method, loss.realize(*opt.schedule_step())
  class Model:
    def __init__(self): self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 3)
    def __call__(self, x): return x.sequential([self.l1, Tensor.relu, self.l2])

    @TinyJit
    @Context(TRAINING=1)
    def train_step(self, X, Y):
      opt.zero_grad()
      loss = self(X).sparse_categorical_crossentropy(Y).backward()
      return loss.realize(*opt.schedule_step())

  Tensor.manual_seed(0)
  m = Model()
  opt = nn.optim.SGD([m.l1.weight, m.l1.bias, m.l2.weight, m.l2.bias], lr=0.5)
  X = Tensor.randn(16, 6).realize()
  Y = Tensor(np.arange(16) % 3).realize()
  losses = [m.train_step(X, Y).item() for _ in range(steps)]
  assert Tensor.training is False
  return losses, m.train_step.call_count


def test_tinyjit_training_step_in_tinygrads_style():
  jitted, calls = _train_losses(12)
  with Context(JIT=0): plain, _ = _train_losses(12)
  assert calls >= 2
  np.testing.assert_allclose(jitted, plain, rtol=1e-5)  # the replays step as the plain calls do
  assert all(a > b for a, b in zip(jitted, jitted[1:]))  # full-batch SGD at a small step: every step lowers the loss


# ---- sequential, function, realize(*lst) -----------------------------------------------------------------------------
def test_sequential_applies_in_order():
  x = Tensor([[-1.0, 2.0], [3.0, -4.0]])
  out = x.sequential([Tensor.relu, lambda t: t * 2, lambda t: t.sum(1)])
  np.testing.assert_allclose(out.numpy(), np.array([4.0, 6.0], np.float32))
  assert x.sequential([]) is x


def test_function_on_a_method_gives_values_and_gradients():
  class M:
    def __init__(self): self.w = Tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    @function
    def __call__(self, x): return (x @ self.w).relu()

  m = M()
  x = Tensor([[1.0, -1.0], [0.5, 0.5]], requires_grad=True)
  out = m(x)
  np.testing.assert_allclose(out.numpy(), np.maximum(x.numpy() @ m.w.numpy(), 0))
  out.sum().backward()
  xn, wn = x.numpy(), m.w.numpy()
  mask = (xn @ wn > 0).astype(np.float32)
  np.testing.assert_allclose(x.grad.numpy(), mask @ wn.T, rtol=1e-5)
  np.testing.assert_allclose(m.w.grad.numpy(), xn.T @ mask, rtol=1e-5)


def test_function_with_options_and_tuple_returns():
  @function(precompile=True)
  def two(a, b): return a + b, a * b
  s, p = two(Tensor([1.0, 2.0]), Tensor([3.0, 4.0]))
  np.testing.assert_allclose(s.numpy(), [4.0, 6.0])
  np.testing.assert_allclose(p.numpy(), [3.0, 8.0])


def test_function_errors():
  @function
  def bad(a): return 3
  with pytest.raises(RuntimeError, match="not supported"): bad(Tensor([1.0]))
  with pytest.raises(NotImplementedError, match="grad_fxn"): function(lambda a: a, grad_fxn=lambda *a: a)


def test_realize_with_more_tensors_schedules_them_together():
  a = Tensor([1.0, 2.0]) + 1
  b = Tensor([3.0]) * 2
  assert a.realize(b) is a
  GlobalCounters.reset()
  np.testing.assert_allclose(b.numpy(), [6.0])
  assert GlobalCounters.kernel_count == 0  # b was realized with a


# ---- GlobalCounters and helpers --------------------------------------------------------------------------------------
def test_global_counters_count_kernels_and_reset():
  GlobalCounters.reset()
  assert GlobalCounters.kernel_count == 0 and GlobalCounters.global_ops == 0
  (Tensor.arange(64, dtype=tg.dtypes.float32) * 3).sum().realize()
  assert GlobalCounters.kernel_count >= 1 and GlobalCounters.global_ops > 0 and GlobalCounters.time_sum_s >= 0
  GlobalCounters.reset()
  assert GlobalCounters.kernel_count == 0
  with pytest.raises(AttributeError): GlobalCounters.no_such_counter


def test_helpers_names_tinygrad_programs_import(monkeypatch, capsys):
  monkeypatch.setenv("TG_PORT_TEST", "12")
  assert getenv("TG_PORT_TEST") == 12 and getenv("TG_PORT_MISSING") == 0
  assert getenv("TG_PORT_TEST", 0.5) == 12.0 and getenv("TG_PORT_TEST", "") == "12"
  assert colored("ok", "green") == "\x1b[32mok\x1b[0m" and colored("x", None) == "x"
  assert prod((2, 3, 4)) == 24 and prod(()) == 1
  with Timing("t "): pass
  assert capsys.readouterr().out.startswith("t ")
  t = trange(3)
  for i in t: t.set_description(f"step {i}")
  assert "3/3" in capsys.readouterr().err
  assert list(tqdm([1, 2], disable=True)) == [1, 2]


def test_fetch_downloads_once_checks_sha256_and_gunzips(tmp_path, monkeypatch):
  import gzip, hashlib, http.server
  from tinygrad_c.helpers import fetch
  payload = bytes(range(256)) * 64
  (tmp_path / "srv").mkdir()
  (tmp_path / "srv" / "a.bin").write_bytes(payload)
  (tmp_path / "srv" / "a.bin.gz").write_bytes(gzip.compress(payload))
  class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw): super().__init__(*a, directory=str(tmp_path / "srv"), **kw)
    def log_message(self, *a): pass
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  try:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = f"http://127.0.0.1:{srv.server_address[1]}/a.bin"
    p = fetch(url)
    assert p.read_bytes() == payload and str(p).startswith(str(tmp_path / "cache"))
    (tmp_path / "srv" / "a.bin").write_bytes(b"changed")
    assert fetch(url).read_bytes() == payload  # cached: not downloaded again
    assert fetch(url, allow_caching=False).read_bytes() == b"changed"
    with pytest.raises(RuntimeError, match="sha256"): fetch(url, name="other", sha256=hashlib.sha256(payload).hexdigest())
    assert not (p.parent / "other").exists()  # nothing left under the final name
    assert fetch(url + ".gz", gunzip=True).read_bytes() == payload
    assert fetch("/etc/hostname") == __import__("pathlib").Path("/etc/hostname")
  finally:
    srv.shutdown()


@pytest.mark.parametrize("gpus", ["1", "2"])
def test_example_mnist_cnn_trains(gpus):
  # examples/python/mnist_cnn.py, a few steps: it must learn (it checks TARGET itself and exits nonzero below it); GPUS=2
  # trains data-parallel over CPU:0 and CPU:1
  import os, subprocess, sys
  from pathlib import Path
  root = Path(__file__).resolve().parents[2]
  env = dict(os.environ, STEPS="40", BS="64", EVAL_EVERY="40", TEST_N="1000", TARGET="60", GPUS=gpus,
             PYTHONPATH=str(root / "bindings" / "python"))
  r = subprocess.run([sys.executable, str(root / "examples" / "python" / "mnist_cnn.py")], env=env, capture_output=True, text=True,
                     timeout=600)
  assert r.returncode == 0, r.stdout + r.stderr
  assert "after 40 steps of batch 64: test accuracy" in r.stdout


# ---- tinygrad's smaller Tensor conveniences --------------------------------------------------------------------------
@pytest.mark.parametrize("formula,sizes,ref", [
  ("b c (h w) -> b (c h) w", {"h": 2}, lambda a: a.reshape(2, 3, 2, 2).reshape(2, 6, 2)),
  ("... w -> w ...", {}, lambda a: a.transpose(2, 0, 1)),
  ("b ... -> (...) b", {}, lambda a: a.transpose(1, 2, 0).reshape(12, 2)),
  ("b c w -> b 1 (c w)", {}, lambda a: a.reshape(2, 1, 12)),
  ("a b c -> c () b a", {}, lambda a: a.transpose(2, 1, 0).reshape(4, 1, 3, 2)),
  ("a b (c d) -> (a d) b c", {"d": 2}, lambda a: a.reshape(2, 3, 2, 2).transpose(0, 3, 1, 2).reshape(4, 3, 2)),
])
def test_rearrange_matches_numpy(formula, sizes, ref):
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  np.testing.assert_array_equal(Tensor(a).rearrange(formula, **sizes).numpy(), ref(a))


@pytest.mark.parametrize("formula,sizes", [("a b c -> a b d", {}), ("a (b ...) c -> a b c", {}), ("a b c -> a b c", {"z": 1}),
                                           ("a b c -> a (b c", {}), ("a b (c d) -> a b c d", {})])
def test_rearrange_bad_formulas_assert(formula, sizes):
  with pytest.raises(AssertionError): Tensor.zeros(2, 3, 4).rearrange(formula, **sizes)


def test_small_conveniences():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  t = Tensor(a)
  assert t.size() == (3, 4) and t.size(-1) == 4 and t.nbytes() == 48 and t.element_size() == 4 and t.is_floating_point()
  with pytest.raises(IndexError): t.size(2)
  assert t.allclose(Tensor(a * (1 + 1e-6))).item() is True and t.allclose(Tensor(a + 1)).item() is False
  assert (t.double().dtype, t.long().dtype, t.short().dtype, t.bfloat16().dtype) == \
         (tg.dtypes.float64, tg.dtypes.int64, tg.dtypes.int16, tg.dtypes.bfloat16)
  np.testing.assert_array_equal(t.eq(4).numpy(), a == 4)
  np.testing.assert_array_equal(t.ne(4).numpy(), a != 4)
  np.testing.assert_array_equal(t.pad_to(4, None, value=-1).numpy(), np.pad(a, ((0, 1), (0, 0)), constant_values=-1))
  np.testing.assert_array_equal(t.shrink_to(2, 3).numpy(), a[:2, :3])
  assert t.pad_to(3, 4) is t
  np.testing.assert_array_equal(t.const_like(7).numpy(), np.full((3, 4), 7, np.float32))
  e = t.empty_like()
  assert e.shape == (3, 4) and e.dtype == tg.dtypes.float32
  np.testing.assert_array_equal(np.frombuffer(Tensor([1, 2, 3]).data(), dtype=np.int32), [1, 2, 3])
  buf = np.arange(6, dtype=np.float32)
  b = Tensor.from_blob(buf.ctypes.data, (2, 3), dtype=tg.dtypes.float32)
  buf[:] = 0  # copied at the call
  np.testing.assert_array_equal(b.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_to_moves_in_place_with_grad():
  t = Tensor([1.0, 2.0], requires_grad=True)
  (t * t).sum().backward()
  same = t.to_("CPU")
  assert same is t and t.device.startswith("CPU")
  np.testing.assert_allclose(t.grad.numpy(), [2.0, 4.0])


def test_newton_schulz_orthogonalizes():
  Tensor.manual_seed(1)
  g = Tensor.randn(4, 6)
  x = g.newton_schulz(steps=10, params=(3.4445, -4.775, 2.0315)).numpy()
  # the quintic drives every singular value into roughly [0.7, 1.2]: X X^T near I
  s = np.linalg.svd(x, compute_uv=False)
  assert np.all(s > 0.6) and np.all(s < 1.3)
  with pytest.raises(AssertionError): Tensor([1.0, 2.0]).newton_schulz(1, (1.0,))


# ---- dtype= on products and softmax (mixed precision) ----------------------------------------------------------------
def test_matmul_dot_linear_einsum_dtype():
  rng = np.random.default_rng(0)
  a = rng.integers(-100, 100, (5, 7)).astype(np.int8)
  b = rng.integers(-100, 100, (7, 3)).astype(np.int8)
  ref = a.astype(np.int32) @ b.astype(np.int32)  # would wrap in int8
  for out in (Tensor(a).matmul(Tensor(b), dtype=tg.dtypes.int32), Tensor(a).dot(Tensor(b), dtype=tg.dtypes.int32),
              Tensor.einsum("ij,jk->ik", Tensor(a), Tensor(b), dtype=tg.dtypes.int32)):
    assert out.dtype == tg.dtypes.int32
    np.testing.assert_array_equal(out.numpy(), ref)
  np.testing.assert_array_equal(Tensor(b).matmul(Tensor(a), reverse=True, dtype=tg.dtypes.int32).numpy(), ref)
  h = rng.standard_normal((4, 6)).astype(np.float16)
  w = rng.standard_normal((6, 3)).astype(np.float16)
  bias = rng.standard_normal(3).astype(np.float16)
  out = Tensor(h).linear(Tensor(w), Tensor(bias), dtype=tg.dtypes.float32)
  assert out.dtype == tg.dtypes.float32
  np.testing.assert_allclose(out.numpy(), h.astype(np.float32) @ w.astype(np.float32) + bias.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_softmax_dtype_computes_in_dtype():
  x = (np.random.default_rng(1).standard_normal((3, 5)) * 4).astype(np.float16)
  for fn, ref in (("softmax", lambda m: np.exp(m) / np.exp(m).sum(-1, keepdims=True)),
                  ("log_softmax", lambda m: m - np.log(np.exp(m).sum(-1, keepdims=True)))):
    out = getattr(Tensor(x), fn)(dtype=tg.dtypes.float32)
    assert out.dtype == tg.dtypes.float32
    m = (x - x.max(-1, keepdims=True)).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), ref(m), rtol=1e-5, atol=1e-6)

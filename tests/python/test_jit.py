"""TinyJit (tg_jit_*) and plans (tg_plan_*) through the Python binding.

A JIT'd SGD step written with the Tensor API matches the same step with JIT=0 (rtol 1e-5) and torch (rtol 1e-4); replays
run kernels and nothing else (counters); every other value is checked elementwise against numpy (rtol 1e-6). Sizes are
small: the Makefile runs this file again with DEV=CPU:CLANG. Each test restores JIT with Context, so any order works.
"""
import gc

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Context, InvalidArgumentError, Plan, ShapeError, Tensor, TinygradError, TinyJit

IN, HID, OUT, B, LR, STEPS = 12, 16, 5, 8, 0.1, 20


@pytest.fixture(autouse=True)
def jit_on():
  with Context(JIT=1): yield


def close(a, b, rtol=1e-6, atol=1e-6, what=""):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, err_msg=what)


def init_params():
  r = np.random.default_rng(1)
  return [(r.standard_normal(s) * sc).astype(np.float32) for s, sc in (((IN, HID), 0.3), ((HID,), 0.1), ((HID, OUT), 0.3), ((OUT,), 0.1))]


def batch(step: int):
  r = np.random.default_rng(100 + step % 4)  # four batches, seen five times each, with learnable labels
  x = r.standard_normal((B, IN)).astype(np.float32)
  return x, np.argmax(x[:, :OUT], axis=1).astype(np.int32)


class Mlp:
  """Two layers trained by SGD written by hand: p.assign(p - lr * p.grad)."""
  def __init__(self):
    self.params = [Tensor(p, requires_grad=True).realize() for p in init_params()]

  def step(self, x: Tensor, y: Tensor) -> Tensor:
    w1, b1, w2, b2 = self.params
    for p in self.params: p.grad = None
    loss = ((x @ w1 + b1).relu() @ w2 + b2).sparse_categorical_crossentropy(y)
    loss.backward()
    for p in self.params: p.assign(p - LR * p.grad)
    return loss


def torch_sgd_losses():
  import torch
  ps = [torch.tensor(p, requires_grad=True) for p in init_params()]
  losses = []
  for step in range(STEPS):
    x, y = batch(step)
    w1, b1, w2, b2 = ps
    loss = torch.nn.functional.cross_entropy(torch.relu(torch.tensor(x) @ w1 + b1) @ w2 + b2, torch.tensor(y, dtype=torch.long))
    for p in ps: p.grad = None
    loss.backward()
    with torch.no_grad():
      for p in ps: p -= LR * p.grad
    losses.append(loss.item())
  return losses, [p.detach().numpy() for p in ps]


def test_mlp_sgd_step_matches_jit_off_and_torch():
  jm = Mlp()
  jit = TinyJit(jm.step)
  losses_jit, after_capture = [], None
  for step in range(STEPS):
    x, y = batch(step)
    losses_jit.append(jit(Tensor(x), Tensor(y)).numpy())
    if step == 1: after_capture = tg.counters()
  end = tg.counters()
  # the replays ran kernels and nothing else: no schedule, no lowering, no compile
  for k in ("schedule_count", "lower_count", "compile_count"): assert end[k] == after_capture[k], k
  kernels = len(jit.plan())
  mem = jit.plan().memory
  assert 0 < mem.peak_bytes <= mem.intermediate_bytes  # activations and gradients live between the captured kernels
  assert kernels >= 3 and end["kernel_count"] >= after_capture["kernel_count"] + (STEPS - 2) * kernels
  assert jit.call_count == STEPS

  em = Mlp()
  eager = TinyJit(em.step)
  losses_eager = []
  with Context(JIT=0):
    for step in range(STEPS):
      x, y = batch(step)
      losses_eager.append(eager(Tensor(x), Tensor(y)).numpy())
      Tensor.realize_many(*em.params)
    assert eager.call_count == 0  # calls with JIT=0 are not counted
  for step in range(STEPS): close(losses_jit[step], losses_eager[step], 1e-5, 1e-6, f"loss at step {step}")
  for i in range(4): close(jm.params[i].numpy(), em.params[i].numpy(), 1e-5, 1e-6, f"parameter {i}")
  losses_torch, params_torch = torch_sgd_losses()
  for step in range(STEPS): close(losses_jit[step], losses_torch[step], 1e-4, 1e-5, f"loss at step {step} vs torch")
  for i in range(4): close(jm.params[i].numpy(), params_torch[i], 1e-4, 1e-5, f"parameter {i} vs torch")
  assert np.mean(losses_jit[-4:]) < 0.8 * np.mean(losses_jit[:4])  # it trains


def test_replays_compute_new_inputs_each_call():
  calls = []
  @TinyJit
  def f(a, b):
    calls.append(1)
    return (a * b + a.exp()).sum(axis=1), a - b.relu()
  r = np.random.default_rng(0)
  for i in range(6):
    a, b = r.standard_normal((3, 5)).astype(np.float32), r.standard_normal((3, 5)).astype(np.float32)
    s, d = f(Tensor(a), Tensor(b))
    assert isinstance(s, Tensor) and s.shape == (3,) and d.shape == (3, 5)
    close(s.numpy(), (a * b + np.exp(a)).sum(axis=1), 1e-5, 1e-5, f"call {i}")
    close(d.numpy(), a - np.maximum(b, 0), what=f"call {i}")
    assert f.call_count == i + 1
  assert len(calls) == 2  # the warm-up and the capture; replays don't run the function


def test_outputs_of_a_replay_are_overwritten_by_the_next_call():
  f = TinyJit(lambda a: a * 2)
  for v in (1, 2): f(Tensor(np.full(4, v, np.float32)))
  out3 = f(Tensor(np.full(4, 3, np.float32)))
  close(out3.numpy(), np.full(4, 6, np.float32))
  kept = out3.numpy()  # a copy survives
  f(Tensor(np.full(4, 5, np.float32)))
  close(out3.numpy(), np.full(4, 10, np.float32))  # the capture's buffer, written again
  close(kept, np.full(4, 6, np.float32))


def test_inputs_as_views_and_lazy_graphs():
  f = TinyJit(lambda a: a + 1)
  base = np.arange(24, dtype=np.float32).reshape(4, 6)
  for i in range(4):
    x = Tensor(base + i)
    view = x.transpose(0, 1)[1:5] if i % 2 else (x * 1).transpose(0, 1)[1:5]
    close(f(view).numpy(), (base + i).T[1:5] + 1, what=f"call {i}")


def test_assign_is_captured_without_being_returned():
  acc = Tensor(np.zeros(5, np.float32)).realize()
  @TinyJit
  def f(x):
    acc.assign(acc + x)
    return x * 3
  total = np.zeros(5, np.float32)
  r = np.random.default_rng(2)
  for i in range(6):
    x = r.standard_normal(5).astype(np.float32)
    total += x
    close(f(Tensor(x)).numpy(), x * 3, what=f"call {i}")
    close(acc.numpy(), total, 1e-6, 1e-6, f"running sum after call {i}")


def test_returning_the_assigned_tensor():
  acc = Tensor(np.zeros(4, np.float32)).realize()
  f = TinyJit(lambda x: acc.assign(acc * 0.5 + x))
  want = np.zeros(4, np.float32)
  for i in range(5):
    x = np.arange(4, dtype=np.float32) + i
    want = want * 0.5 + x
    close(f(Tensor(x)).numpy(), want, what=f"call {i}")
    close(acc.numpy(), want, what=f"call {i}")


def test_return_structures():
  acc = Tensor(np.zeros(3, np.float32)).realize()
  def only_assign(x): acc.assign(acc + x)
  jits = {"tensor": TinyJit(lambda x: x + 1), "tuple": TinyJit(lambda x: (x + 1, x * 2)), "list": TinyJit(lambda x: [x - 1]),
          "none": TinyJit(only_assign), "same twice": TinyJit(lambda x: (x + 1,) * 2), "input": TinyJit(lambda x: x)}
  for i in range(4):
    v = np.full(3, i, np.float32)
    close(jits["tensor"](Tensor(v)).numpy(), v + 1)
    t = jits["tuple"](Tensor(v))
    assert type(t) is tuple and len(t) == 2
    close(t[0].numpy(), v + 1), close(t[1].numpy(), v * 2)
    lst = jits["list"](Tensor(v))
    assert type(lst) is list and len(lst) == 1
    close(lst[0].numpy(), v - 1)
    assert jits["none"](Tensor(v)) is None
    close(acc.numpy(), np.full(3, i * (i + 1) / 2, np.float32), what=f"call {i}")
    a, b = jits["same twice"](Tensor(v))
    close(a.numpy(), v + 1), close(b.numpy(), v + 1)
    close(jits["input"](Tensor(v)).numpy(), v)


def test_mismatched_inputs_raise_naming_the_input():
  f = TinyJit(lambda a, b: a + b)
  for _ in range(2): f(Tensor(np.ones(4, np.float32)), Tensor(np.ones(4, np.float32)))
  before = tg.counters()["kernel_count"]
  with pytest.raises(ShapeError, match=r"input 1 has shape \(5,\), captured with \(4,\)"):
    f(Tensor(np.ones(4, np.float32)), Tensor(np.ones(5, np.float32)))
  with pytest.raises(TinygradError, match="input 0 is int") as e:
    f(Tensor(np.ones(4, np.int32)), Tensor(np.ones(4, np.float32)))
  assert e.value.status == "TG_ERROR_DTYPE"
  with pytest.raises(InvalidArgumentError, match="1 inputs, captured with 2"):
    f(Tensor(np.ones(4, np.float32)))
  assert tg.counters()["kernel_count"] == before  # nothing ran
  close(f(Tensor(np.full(4, 2, np.float32)), Tensor(np.full(4, 3, np.float32))).numpy(), np.full(4, 5, np.float32))


def test_non_tensor_arguments_pass_through_and_bad_outputs_are_type_errors():
  # as tinygrad: non-Tensor arguments reach fn when it runs; keyword Tensors are inputs like positional ones
  f = TinyJit(lambda a, b: (a * b).realize())
  np.testing.assert_allclose(f(Tensor([1.0]), 2.0).numpy(), [2.0])
  np.testing.assert_allclose(f(Tensor([1.0]), b=Tensor([3.0])).numpy(), [3.0])
  with pytest.raises(TypeError, match="output 1 is int"): TinyJit(lambda a: (a, 3))(Tensor([1.0]))
  with pytest.raises(TypeError): TinyJit(3)


class Boom(Exception):
  pass


@pytest.mark.parametrize("at_call", [0, 1])
def test_exception_in_the_function_propagates_as_itself(at_call):
  calls = []
  err = Boom("from fn")
  def fn(x):
    calls.append(1)
    if len(calls) == at_call + 1: raise err
    return x * 2
  f = TinyJit(fn)
  for i in range(at_call): f(Tensor([float(i)]))
  with pytest.raises(Boom) as e: f(Tensor([1.0]))
  assert e.value is err
  assert f.call_count == at_call  # a failed warm-up or capture runs the function again at the next call
  assert tg.C.last_error() == 0  # the library's error state was cleared
  for i in range(4): close(f(Tensor([float(i)])).numpy(), [2.0 * i], what=f"call {i}")
  assert f.call_count == at_call + 4 and len(calls) == 3  # the failed call, then a warm-up (if it failed there) and a capture


def test_library_error_inside_the_function_propagates():
  f = TinyJit(lambda a: a @ Tensor.ones(3, 2))
  with pytest.raises(ShapeError): f(Tensor.ones(2, 4))
  assert f.call_count == 0


def test_jit_is_not_reentrant():
  holder = []
  f = TinyJit(lambda a: holder[0](a))
  holder.append(f)
  with pytest.raises(RuntimeError, match="reentrant"): f(Tensor([1.0]))


def test_jit_off_runs_the_function_every_call():
  calls = []
  def fn(x):
    calls.append(1)
    return x + 1
  f = TinyJit(fn)
  with Context(JIT=0):
    assert tg.get_option("JIT") == 0
    for i in range(4): close(f(Tensor([float(i)])).numpy(), [i + 1.0])
    assert f.call_count == 0 and len(calls) == 4
  assert tg.get_option("JIT") == 1
  for i in range(4): close(f(Tensor([float(i)])).numpy(), [i + 1.0])
  assert f.call_count == 4 and len(calls) == 6


def test_reset_runs_the_function_again():
  calls = []
  def fn(x):
    calls.append(1)
    return x.sum()
  f = TinyJit(fn)
  for i in range(3): f(Tensor(np.full(4, i, np.float32)))
  assert f.call_count == 3 and f.plan() is not None
  f.reset()
  assert f.call_count == 0 and f.plan() is None
  for i in range(3): close(f(Tensor(np.full(6, i, np.float32))).numpy(), 6.0 * i)  # a new shape: captured again
  assert len(calls) == 4


def test_release_when_unreferenced():
  f = TinyJit(lambda x: x + 1)
  for i in range(3): f(Tensor([1.0]))
  h = f._h
  del f
  assert tg.C.jit_call_count(h) == -1  # released at once: the callback holds no reference to the jit
  tg.C.clear_error()
  gc.collect()


def test_plan_lists_kernels_and_times_after_run():
  r = np.random.default_rng(3)
  x, w = r.standard_normal((4, 6)).astype(np.float32), r.standard_normal((6, 3)).astype(np.float32)
  y = (Tensor(x) @ Tensor(w)).relu().sum(axis=1)
  z = Tensor(x).exp()
  before = tg.counters()["kernel_count"]
  p = y.plan(z)
  assert isinstance(p, Plan) and len(p) >= 2 and len(p.kernels) == len(p)
  assert tg.counters()["kernel_count"] == before  # made, not run
  for k in p.kernels:
    assert k.name and isinstance(k.source, str) and k.name in k.source
    assert k.time_s is None and k.threads >= 1 and k.ops >= 0 and k.mem > 0
    assert len(k.buffer_nbytes) >= 1 and all(n > 0 for n in k.buffer_nbytes)
  assert {16, 4 * 6 * 4} <= {k.buffer_nbytes[0] for k in p.kernels}  # y's and z's outputs
  mem = p.memory
  assert 0 <= mem.peak_bytes <= mem.intermediate_bytes
  assert p.run() is p
  assert all(k.time_s is not None and k.time_s >= 0 for k in p.kernels)
  assert tg.counters()["kernel_count"] == before + len(p)
  close(y.numpy(), np.maximum(x @ w, 0).sum(axis=1), 1e-5, 1e-5)
  close(z.numpy(), np.exp(x), 1e-6, 1e-6)
  with pytest.raises(InvalidArgumentError, match="already ran"): p.run()
  q = tg.plan(Tensor(x) * 2)
  assert len(q.run().kernels) == 1
  with pytest.raises(TypeError): tg.plan(x)
  with pytest.raises(InvalidArgumentError): p.kernel(len(p))


def test_jit_plan_has_the_captured_kernels():
  f = TinyJit(lambda a, b: ((a @ b).relu(), (a * 2).sum()))
  r = np.random.default_rng(4)
  assert f.plan() is None
  for i in range(3):
    a, b = r.standard_normal((3, 4)).astype(np.float32), r.standard_normal((4, 2)).astype(np.float32)
    m, s = f(Tensor(a), Tensor(b))
    close(m.numpy(), np.maximum(a @ b, 0), 1e-5, 1e-5), close(s.numpy(), (a * 2).sum(), 1e-5, 1e-5)
  p = f.plan()
  assert len(p) >= 2 and all(k.source and k.time_s is not None and k.time_s >= 0 for k in p.kernels)
  with pytest.raises(InvalidArgumentError, match="jit"): p.run()


def test_counters_have_schedule_and_lower_counts():
  c0 = tg.counters()
  assert {"kernel_count", "global_ops", "global_mem", "time_sum_s", "compile_count", "schedule_count", "lower_count"} <= set(c0)
  (Tensor(np.arange(7, dtype=np.float32)) * 3 + 1).realize()
  c1 = tg.counters()
  assert c1["lower_count"] >= c0["lower_count"] + 1 and c1["kernel_count"] >= c0["kernel_count"] + 1


def test_options():
  with Context(DEBUG=0, JIT=0):
    assert tg.get_option("JIT") == 0
    with Context(JIT=1): assert tg.get_option("JIT") == 1
    assert tg.get_option("JIT") == 0
  with pytest.raises(InvalidArgumentError): tg.set_option("NO_SUCH_OPTION", 1)
  with pytest.raises(InvalidArgumentError): tg.get_option("NO_SUCH_OPTION")
  with pytest.raises(InvalidArgumentError): tg.set_option("JIT", "many")
  with pytest.raises(TypeError): tg.set_option("JIT", [0])
  with Context(JIT="0"): assert tg.get_option("JIT") == 0


def test_jit_over_a_variable_batch_compiles_once():
  """A TinyJit captured with a Variable batch replays for every batch size 1..32 with no new compile."""
  rng = np.random.default_rng(7)
  xv, wv = rng.standard_normal((32, 12)).astype(np.float32), rng.standard_normal((12, 5)).astype(np.float32)
  x_full, w = Tensor(xv).realize(), Tensor(wv).realize()
  n = tg.Variable("batch", 1, 32)

  @tg.TinyJit
  def f(x):
    return (x @ w).relu().softmax(-1)

  compiles = None
  for b in range(1, 33):
    out = f(x_full.shrink_var(0, n, b)).numpy()
    assert out.shape == (b, 5)
    logits = np.maximum(xv[:b] @ wv, 0)
    want = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(out, want / want.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    if b == 2: compiles = tg.counters()["compile_count"]
    if b > 2: assert tg.counters()["compile_count"] == compiles, f"batch {b} compiled again"

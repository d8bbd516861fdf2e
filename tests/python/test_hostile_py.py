"""Issue 26, hostile input round 3, Python side: copy.copy, copy.deepcopy and pickle of objects that own a library handle
used to copy the raw handle without a reference (the copy died with the original: "not a live handle", or a double
release), and environment values that the library took without the range tg_set_option enforces."""
import copy
import gc
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tinygrad_c as tg
from tinygrad_c import Tensor, TinyJit, Variable, dtypes, nn
from tinygrad_c.nn import optim

COPIES = {
  "copy": copy.copy,
  "deepcopy": copy.deepcopy,
  "pickle": lambda x: pickle.loads(pickle.dumps(x)),
  "pickle5": lambda x: pickle.loads(pickle.dumps(x, protocol=5)),
}


def _tensors():
  return {
    "float32": lambda: Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5),
    "int32": lambda: Tensor(np.array([-7, 0, 2**31 - 1], dtype=np.int32)),
    "int64": lambda: Tensor(np.array([[-2**63, 5], [2**62, -1]], dtype=np.int64)),
    "uint8": lambda: Tensor(np.array([0, 200, 255], dtype=np.uint8)),
    "bool": lambda: Tensor(np.array([True, False, True])),
    "float16": lambda: Tensor(np.array([0.5, -1e4, np.inf], dtype=np.float16)),
    "bfloat16": lambda: Tensor([1.5, -2.25, 3e38], dtype=dtypes.bfloat16),
    "float64": lambda: Tensor(np.array([np.pi, -0.0, np.nan])),
    "0d": lambda: Tensor(np.float32(4.25)),
    "empty": lambda: Tensor.empty(0, 3),
    "view": lambda: Tensor.arange(12).reshape(3, 4).permute(1, 0)[1:3],  # non-contiguous, offset
    "lazy": lambda: Tensor.ones(2, 2) * 3 + 1,  # never realized
  }


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("name", list(_tensors()))
def test_tensor_copy_outlives_original(name, how):
  t = _tensors()[name]()
  want, dt, shape, dev = t.numpy(), t.dtype, t.shape, t.device
  c = COPIES[how](t)
  del t
  gc.collect()
  assert c is not None and (c.dtype, c.shape, c.device) == (dt, shape, dev)
  np.testing.assert_array_equal(c.numpy(), want)
  assert (c + 0).numpy().shape == shape  # still usable in a graph


def test_tensor_copy_shares_deepcopy_and_pickle_do_not():
  t = Tensor([1.0, 2.0, 3.0]).contiguous().realize()
  shallow, deep, pick = copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))
  assert shallow is not t  # another Python object holding its own reference (tensor_retain)
  t.assign(Tensor([7.0, 8.0, 9.0])).realize()
  np.testing.assert_array_equal(shallow.numpy(), [7, 8, 9])  # the same tensor, as a shallow copy of a tinygrad Tensor
  np.testing.assert_array_equal(deep.numpy(), [1, 2, 3])
  np.testing.assert_array_equal(pick.numpy(), [1, 2, 3])
  deep.assign(Tensor([0.0, 0.0, 0.0])).realize()
  np.testing.assert_array_equal(t.numpy(), [7, 8, 9])


@pytest.mark.parametrize("how", COPIES)
def test_tensor_copy_keeps_requires_grad_and_grad(how):
  t = Tensor([1.0, -2.0], requires_grad=True)
  (t * t).sum().backward()
  c = COPIES[how](t)
  del t
  gc.collect()
  assert c.requires_grad
  np.testing.assert_array_equal(c.grad.numpy(), [2.0, -4.0])
  (c * 3).sum().backward()
  np.testing.assert_array_equal(c.grad.numpy(), [5.0, -1.0])
  assert not COPIES[how](Tensor([1.0])).requires_grad


def test_tensor_pickle_out_of_band_and_shared_objects():
  t = Tensor(np.arange(1000, dtype=np.float32))
  bufs = []
  s = pickle.dumps([t, t], protocol=5, buffer_callback=bufs.append)
  assert len(bufs) == 1 and len(s) < 1000  # the data went out of band, once
  a, b = pickle.loads(s, buffers=bufs)
  assert a is b
  np.testing.assert_array_equal(a.numpy(), np.arange(1000))
  d = copy.deepcopy({"x": t, "y": t})
  assert d["x"] is d["y"] and d["x"] is not t


def test_copy_of_copy_and_many_copies_release_cleanly():
  t = Tensor([1, 2, 3])
  cs = [copy.copy(t) for _ in range(50)]
  cc = copy.copy(cs[-1])
  del t, cs
  gc.collect()
  np.testing.assert_array_equal(cc.numpy(), [1, 2, 3])


def _modules():
  return {
    "Linear": (lambda: nn.Linear(3, 4), lambda: Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))),
    "Linear_nobias": (lambda: nn.Linear(3, 2, bias=False), lambda: Tensor(np.ones((1, 3), np.float32))),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), lambda: Tensor(np.linspace(-1, 1, 50, dtype=np.float32).reshape(1, 2, 5, 5))),
    "Conv1d": (lambda: nn.Conv1d(2, 2, 3), lambda: Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(1, 2, 6))),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 1, 2, stride=2), lambda: Tensor(np.ones((1, 2, 2, 2), np.float32))),
    "BatchNorm": (lambda: nn.BatchNorm(3), lambda: Tensor(np.arange(12, dtype=np.float32).reshape(2, 3, 2))),
    "LayerNorm": (lambda: nn.LayerNorm(4), lambda: Tensor(np.arange(8, dtype=np.float32).reshape(2, 4))),
    "LayerNorm2d": (lambda: nn.LayerNorm2d(2), lambda: Tensor(np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4))),
    "RMSNorm": (lambda: nn.RMSNorm(4), lambda: Tensor(np.arange(8, dtype=np.float32).reshape(2, 4))),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: Tensor(np.arange(16, dtype=np.float32).reshape(2, 4, 2))),
    "InstanceNorm": (lambda: nn.InstanceNorm(2), lambda: Tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 4))),
    "Embedding": (lambda: nn.Embedding(5, 3), lambda: Tensor(np.array([[0, 4, 2]], np.int32))),
  }


def _perturb(m):
  """Values a fresh module of the same arguments would not have (its init is random or constant)."""
  for n in m._names:
    t = getattr(m, n)
    if t is not None and t.dtype.is_float: t.assign(t + Tensor(np.linspace(0.1, 0.9, t.numel(), dtype=np.float32).reshape(t.shape))).realize()


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("name", list(_modules()))
def test_module_copy_outlives_original(name, how):
  make, x = _modules()[name]
  m = make()
  _perturb(m)
  state = {k: v.numpy() for k, v in nn.state.get_state_dict(m).items()}
  want, cls = m(x()).numpy(), type(m)
  c = COPIES[how](m)
  del m
  gc.collect()
  assert type(c) is cls
  got = {k: v.numpy() for k, v in nn.state.get_state_dict(c).items()}
  assert got.keys() == state.keys()
  for k in state: np.testing.assert_array_equal(got[k], state[k], err_msg=k)
  np.testing.assert_allclose(c(x()).numpy(), want, rtol=1e-6, atol=1e-6)


def test_module_deepcopy_is_independent_copy_is_not():
  m = nn.Linear(2, 2)
  shallow, deep, pick = copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))
  before = m.weight.numpy()
  m.weight.assign(Tensor.zeros(2, 2)).realize()
  np.testing.assert_array_equal(shallow.weight.numpy(), 0)
  np.testing.assert_array_equal(deep.weight.numpy(), before)
  np.testing.assert_array_equal(pick.weight.numpy(), before)
  deep.weight = Tensor.zeros(2, 2)  # a plain attribute, as tinygrad's; the original keeps its own
  np.testing.assert_array_equal(deep(Tensor.ones(1, 2)).numpy(), [deep.bias.numpy()])
  np.testing.assert_array_equal(m.weight.numpy(), 0)


def test_module_copy_keeps_attributes_requires_grad_and_training_state():
  m = nn.BatchNorm(2)
  m.note = {"epoch": 3}
  m.weight.requires_grad = True
  with Tensor.train():
    m(Tensor(np.arange(8, dtype=np.float32).reshape(2, 2, 2))).realize()  # moves running stats, num_batches_tracked
  for how in COPIES:
    c = COPIES[how](m)
    assert c.note == {"epoch": 3} and (c.note is m.note) == (how == "copy")
    assert c.weight.requires_grad and not c.bias.requires_grad
    np.testing.assert_array_equal(c.running_mean.numpy(), m.running_mean.numpy())
    assert c.num_batches_tracked.numpy().item() == 1


def test_model_of_modules_deepcopy_and_pickle():
  class Net:
    def __init__(self): self.l1, self.l2, self.layers = nn.Linear(3, 4), nn.Linear(4, 2), []
    def __call__(self, x): return self.l2(self.l1(x).relu())
  net = Net()
  net.layers = [net.l1, net.l2]
  x = Tensor(np.ones((1, 3), np.float32))
  want = net(x).numpy()
  for how in ("deepcopy", "pickle"):
    if how == "pickle":
      Net.__module__, Net.__qualname__ = __name__, "_PickledNet"
      globals()["_PickledNet"] = Net
    c = COPIES[how](net)
    assert c.layers[0] is c.l1 and c.l1 is not net.l1
    np.testing.assert_allclose(c(x).numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_jit_and_plan_refuse_copies(how):
  jit = TinyJit(lambda a: a * 2)
  p = Tensor([1.0]).plan()
  for obj in (jit, p):
    with pytest.raises(TypeError, match=f"cannot {'pickle' if how == 'pickle' else how} {type(obj).__name__} objects"):
      COPIES[how](obj)
  np.testing.assert_array_equal(jit(Tensor([3.0])).numpy(), [6.0])  # unharmed


def test_optimizer_copy_shares_deepcopy_and_pickle_refuse():
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = optim.SGD([w], lr=0.5)
  c = copy.copy(opt)
  del opt
  gc.collect()
  assert c.kind == "sgd" and c.lr.numpy()[0] == 0.5
  (w * w).sum().backward()
  with tg.Context(TRAINING=1): c.step()
  np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
  for how in ("deepcopy", "pickle"):
    with pytest.raises(TypeError, match="optimizer"): COPIES[how](c)


def test_expr_copy_and_deepcopy_share_pickle_refuses():
  v = Variable("i", 1, 10)
  e = v * 2 + 1
  c, d = copy.copy(e), copy.deepcopy(e)
  del e
  gc.collect()
  assert c.eval(i=3) == 7 and d.eval(i=4) == 9 and d.bounds() == (3, 21)
  with pytest.raises(TypeError, match="cannot pickle Expr objects"): pickle.dumps(v)


def test_state_copy():
  st = nn.state._State(tg.C.state_create(), "state_create")
  c = copy.copy(st)
  del st
  gc.collect()
  assert c.tensors() == {}
  with pytest.raises(TypeError): copy.deepcopy(c)


# ---- environment values: range-checked as tg_set_option checks them ---------------------------------------------------
def _child(env: dict, code: str) -> subprocess.CompletedProcess:
  e = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "BEAM", "JIT", "NOOPT", "JITBEAM", "BEAM_TIMEOUT_SEC", "TRAINING")}
  e.update(env)
  e["PYTHONPATH"] = os.pathsep.join(sys.path)
  return subprocess.run([sys.executable, "-c", "import tinygrad_c as tg\n" + code], env=e, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name,value,default", [
  ("BEAM", "1e9", 0), ("BEAM", "-1", 0), ("BEAM", "abc", 0), ("BEAM", "2x", 0), ("BEAM", "nan", 0), ("BEAM", "inf", 0),
  ("DEBUG", "99", 0), ("DEBUG", "0x7", 0), ("JIT", "3", 1), ("JITBEAM", "65", 0), ("BEAM_TIMEOUT_SEC", "1e300", 10),
  ("BEAM_UPCAST_MAX", "0", 256), ("TRAINING", "2", 0), ("NOOPT", " 1", 0),
])
def test_bad_option_env_value_is_refused_with_a_message(name, value, default):
  r = _child({name: value}, f"print(tg.get_option({name!r})); print(tg.get_option({name!r}))")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == [str(default)] * 2
  assert r.stderr.count(f"tinygrad: environment variable {name}=") == 1, r.stderr  # reported once, naming it
  assert "not a number in [" in r.stderr


@pytest.mark.parametrize("name,value,want", [("BEAM", "3", 3), ("DEBUG", "0", 0), ("BEAM_MIN_PROGRESS", "0.5", 0.5), ("JIT", "0", 0),
                                             ("BEAM", "64", 64), ("BEAM", "2.0", 2)])
def test_good_option_env_value_is_taken_quietly(name, value, want):
  r = _child({name: value}, f"print(tg.get_option({name!r}))")
  assert r.returncode == 0 and r.stdout.split() == [str(want)] and "environment variable" not in r.stderr, r.stderr


def test_option_env_value_and_set_option_agree():
  # one check serves both: every value the environment refuses, set_option refuses, with the same range in the message
  r = _child({"BEAM": "65"}, "import sys\ntg.get_option('BEAM')\n"
             "try: tg.set_option('BEAM', '65')\nexcept tg.InvalidArgumentError as e: print(e, file=sys.stderr)")
  assert r.returncode == 0
  env_msg, api_msg = r.stderr.splitlines()
  assert "environment variable BEAM='65'" in env_msg and "set_option BEAM: '65'" in api_msg
  assert "in [0, 64]" in env_msg and "in [0, 64]" in api_msg


@pytest.mark.parametrize("name,value", [("NUM_CPU_THREADS", "-5"), ("NUM_CPU_THREADS", "1e9"), ("NUM_CPU_THREADS", "lots"),
                                        ("TG_ALLOC_CACHE_MB", "-1"), ("TG_ALLOC_CACHE_MB", "99999999999999999999"),
                                        ("TG_PROGRAM_CACHE", "-3"), ("TG_SCHEDULE_CACHE", "0x10"), ("TG_MAX_FUSED_ALU", "0"),
                                        ("REDUCEOP_SPLIT_SIZE", "99"), ("TG_TILE_ROWS", "100000"), ("THREADS", "yes"),
                                        ("TG_DISK_CACHE_MB", "1e30")])
def test_bad_numeric_env_value_falls_back_with_a_message(name, value):
  r = _child({name: value}, "import numpy as np\n"
             "x = (tg.Tensor(np.arange(64, dtype=np.float32).reshape(8, 8)) @ tg.Tensor.ones(8, 8)).sum(1)\n"
             "print(float(x.numpy()[1]))")
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == [str(float(sum(range(8, 16)) * 8))]
  assert r.stderr.count(f"tinygrad: environment variable {name}=") == 1, r.stderr


# ---- nested TinyJit (the library runs a nested call's function at once; the binding must neither replay nor lock) ----

def test_nested_jit_is_captured_by_the_outer():
  inner = TinyJit(lambda x: (x + 1).realize())
  outer = TinyJit(lambda x: inner(x) * 2)
  for i in range(6):
    got = outer(Tensor([float(i)])).numpy()
    np.testing.assert_array_equal(got, np.array([2.0 * (i + 1)], dtype=np.float32), err_msg=f"call {i}")
  assert outer.call_count >= 2 and inner.call_count == 0  # the inner only ever ran nested: it keeps no state


def test_jit_calling_itself_is_refused():
  box = {}
  box["j"] = TinyJit(lambda x: box["j"](x))
  with pytest.raises(RuntimeError, match="reentrant"):
    box["j"](Tensor([1.0]))


def test_jits_calling_each_other_from_two_threads_do_not_deadlock():
  # in a child: a deadlock there is a timeout here, not a hung suite; JIT=0 runs the functions at every call (a replay
  # would not call the other jit)
  code = """
import threading
from tinygrad_c import Tensor, TinyJit
import numpy as np
js, tls = {}, threading.local()
def body(other):
  def fn(x):
    if getattr(tls, "depth", 0): return x + 1  # nested: the other jit's function called us
    tls.depth = 1
    try: return js[other](x) + 1
    finally: tls.depth = 0
  return fn
js["a"], js["b"] = TinyJit(body("b")), TinyJit(body("a"))
errs, start = [], threading.Barrier(2)
def run(name):
  start.wait()
  try:
    for i in range(200):
      got = js[name](Tensor([float(i)])).numpy()
      assert got[0] == i + 2, (name, i, got)
  except Exception as e: errs.append(repr(e))
ts = [threading.Thread(target=run, args=(n,)) for n in "ab"]
for t in ts: t.start()
for t in ts: t.join()
print("ERRS", errs)
"""
  r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "JIT": "0"},
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert "ERRS []" in r.stdout, r.stdout + r.stderr

"""tinygrad_c.nn.optim against PyTorch (SGD, Adam, AdamW) and against a numpy re-implementation of tinygrad's rules (LARS,
LAMB, Muon: PyTorch 1.13 has none of them), over 10 steps of tinygrad's own TinyNet, with options varied.

Every element of every param is compared: atol 1e-5 and rtol 1e-4 for float32 steps against the float64 reference
(PyTorch runs float32 like us); fixed seeds.
"""
import inspect

import numpy as np
import pytest
import torch

from tinygrad_c import Context, Tensor, TinyJit, TinygradError, InvalidArgumentError
from tinygrad_c.nn.optim import LAMB, LARS, SGD, Adam, AdamW, Muon, OptimizerGroup, _defaults

ATOL, RTOL = 1e-5, 1e-4


@pytest.fixture(autouse=True)
def training():
  with Context(TRAINING=1): yield


def inits(seed):
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(s).astype(np.float32) for s in ((1, 4), (4, 4), (1, 4))]  # x, W (the params), m


def tiny_net(x, W, m):  # tinygrad's test_optim TinyNet: either library's tensors
  return (x.matmul(W).relu().log_softmax(1) * m + m).sum()


def run_tinygrad(opt_fn, seed, steps=10, **kw):
  x0, W0, m0 = inits(seed)
  x, W, m = Tensor(x0), Tensor(W0), Tensor(m0)
  opt = opt_fn([x, W], **kw)
  for _ in range(steps):
    opt.zero_grad()
    loss = tiny_net(x, W, m)
    loss.backward()
    opt.step()
  return [x.numpy(), W.numpy()]


def run_torch(opt_cls, seed, steps=10, **kw):
  x0, W0, m0 = inits(seed)
  x, W, m = torch.tensor(x0, requires_grad=True), torch.tensor(W0, requires_grad=True), torch.tensor(m0)
  opt = opt_cls([x, W], **kw)
  for _ in range(steps):
    opt.zero_grad()
    tiny_net(x, W, m).backward()
    opt.step()
  return [x.detach().numpy(), W.detach().numpy()]


def check(got, want, what, atol=ATOL, rtol=RTOL):
  for name, g, w in zip(("x", "W"), got, want):
    np.testing.assert_allclose(g, w, atol=atol, rtol=rtol, err_msg=f"{what}: {name}")


TORCH_CASES = [
  (SGD, torch.optim.SGD, {"lr": 0.001}),
  (SGD, torch.optim.SGD, {"lr": 0.5}),
  (SGD, torch.optim.SGD, {"lr": 0.1, "weight_decay": 0.1}),
  (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
  (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
  (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
  (SGD, torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
  (Adam, torch.optim.Adam, {"lr": 0.001}),
  (Adam, torch.optim.Adam, {"lr": 0.1}),
  (Adam, torch.optim.Adam, {"lr": 0.05, "b1": 0.8, "b2": 0.99, "eps": 1e-6}),
  (AdamW, torch.optim.AdamW, {"lr": 0.001}),
  (AdamW, torch.optim.AdamW, {"lr": 0.1}),
  (AdamW, torch.optim.AdamW, {"lr": 0.05, "weight_decay": 0.2}),
]


def case_id(fn, kw): return f"{fn.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"


@pytest.mark.parametrize("ours,theirs,kw", TORCH_CASES, ids=[case_id(o, kw) for o, _, kw in TORCH_CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_torch(ours, theirs, kw, seed):
  torch_kw = dict(kw)
  if "b1" in torch_kw: torch_kw["betas"] = (torch_kw.pop("b1"), torch_kw.pop("b2"))
  check(run_tinygrad(ours, seed, **kw), run_torch(theirs, seed, **torch_kw), f"{ours.__name__} {kw}")


def test_classic_sgd_matches_torch():
  # classic momentum scales the grad by lr before the momentum buffer: the same trajectory at a constant lr
  check(run_tinygrad(SGD, 3, lr=0.1, momentum=0.9, weight_decay=0.1, classic=True),
        run_torch(torch.optim.SGD, 3, lr=0.1, momentum=0.9, weight_decay=0.1), "classic SGD")


# ---- numpy re-implementation of tinygrad's LARS and LAMB rules, gradients from torch in float64 ----------------------
def grads64(params, m0):
  x, W = (torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params)
  tiny_net(x, W, torch.tensor(m0, dtype=torch.float64)).backward()
  return [x.grad.numpy(), W.grad.numpy()]


def newton_schulz(G, steps, coef, eps=1e-7):
  if G.shape[0] > G.shape[1]: return newton_schulz(G.T, steps, coef, eps).T
  G = G / (np.sqrt((G * G).sum()) + eps)
  for _ in range(steps):
    A, power, total = G @ G.T, G, 0
    for i, c in enumerate(coef):
      if i: power = A @ power
      total = total + c * power
    G = total
  return G


def lars_reference(seed, steps=10, lr=0.001, momentum=0.9, weight_decay=1e-4, ns_steps=0, ns_coefficients=None, nesterov=False, classic=True,
                   pre_wd=True, tcoef=0.001):
  x0, W0, m0 = inits(seed)
  ps, bs = [x0.astype(np.float64), W0.astype(np.float64)], [np.zeros((1, 4)), np.zeros((4, 4))]
  for _ in range(steps):
    for i, (t, g) in enumerate(zip(ps, grads64(ps, m0))):
      r = 1.0
      if tcoef != 0:
        r1, r2 = np.sqrt((t * t).sum()), np.sqrt((g * g).sum())
        r = tcoef * r1 / (r2 + weight_decay * r1) if r1 > 0 and r2 > 0 else 1.0
      if pre_wd and weight_decay > 0: g = g + weight_decay * t
      if classic: g = g * r * lr
      if momentum:
        bs[i] = momentum * bs[i] + g
        g = g + momentum * bs[i] if nesterov else bs[i]
      if ns_coefficients: g = newton_schulz(g.reshape(g.shape[0], -1), ns_steps, ns_coefficients).reshape(g.shape)
      if not classic: g = g * r * lr
      decay = 1 - weight_decay * lr if not pre_wd and weight_decay > 0 else 1.0  # Muon's decoupled weight decay
      ps[i] = t * decay - g
  return ps


def lamb_reference(seed, steps=10, lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False):
  x0, W0, m0 = inits(seed)
  ps = [x0.astype(np.float64), W0.astype(np.float64)]
  ms, vs = [np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps]
  b1_t = b2_t = 1.0
  for _ in range(steps):
    b1_t, b2_t = b1_t * b1, b2_t * b2
    for i, (t, g) in enumerate(zip(ps, grads64(ps, m0))):
      ms[i] = b1 * ms[i] + (1 - b1) * g
      vs[i] = b2 * vs[i] + (1 - b2) * g * g
      up = (ms[i] / (1 - b1_t)) / (np.sqrt(vs[i] / (1 - b2_t)) + eps) + weight_decay * t
      r1, r2 = np.sqrt((t * t).sum()), np.sqrt((up * up).sum())
      r = r1 / r2 if not adam and r1 > 0 and r2 > 0 else 1.0
      ps[i] = t - lr * r * up
  return ps


MUON_DEFAULTS = {"momentum": 0.95, "weight_decay": 0.1, "ns_steps": 5, "ns_coefficients": (3.4445, -4.775, 2.0315), "nesterov": True,
                 "classic": False, "pre_wd": False, "tcoef": 0.0}
NUMPY_CASES = [
  (LARS, lars_reference, {}, {}),
  (LARS, lars_reference, {"lr": 0.1}, {}),
  (LARS, lars_reference, {"lr": 0.1, "momentum": 0.5, "nesterov": True, "weight_decay": 0.01}, {}),
  (LARS, lars_reference, {"lr": 0.05, "classic": False, "tcoef": 0.01}, {}),
  (LARS, lars_reference, {"lr": 0.05, "momentum": 0.0, "pre_wd": False, "weight_decay": 0.05}, {}),
  (LARS, lars_reference, {"lr": 0.02, "ns_steps": 3, "ns_coefficients": (2.0, -1.5, 0.5)}, {}),
  (LAMB, lamb_reference, {}, {}),
  (LAMB, lamb_reference, {"lr": 0.05}, {}),
  (LAMB, lamb_reference, {"lr": 0.05, "weight_decay": 0.1}, {}),
  (LAMB, lamb_reference, {"lr": 0.05, "b1": 0.8, "b2": 0.99, "eps": 1e-8, "adam": True}, {}),
  (Muon, lars_reference, {}, MUON_DEFAULTS),
  (Muon, lars_reference, {"lr": 0.02}, MUON_DEFAULTS),
  (Muon, lars_reference, {"lr": 0.02, "nesterov": False}, MUON_DEFAULTS),
  (Muon, lars_reference, {"lr": 0.02, "weight_decay": 0.0}, MUON_DEFAULTS),
  (Muon, lars_reference, {"lr": 0.02, "momentum": 0.9, "weight_decay": 0.01, "ns_steps": 3, "ns_coefficients": (2.0, -1.5, 0.5)}, MUON_DEFAULTS),
]


@pytest.mark.parametrize("ours,ref,kw,fixed", NUMPY_CASES, ids=[case_id(o, kw) for o, _, kw, _ in NUMPY_CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_numpy_rule(ours, ref, kw, fixed, seed):
  check(run_tinygrad(ours, seed, **kw), ref(seed, **{**fixed, **kw}), f"{ours.__name__} {kw}")


# ---- the binding's surface ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,kind", [(SGD, "sgd"), (Adam, "adam"), (AdamW, "adamw"), (LARS, "lars"), (LAMB, "lamb"), (Muon, "muon")])
def test_python_defaults_are_the_librarys(fn, kind):
  c = _defaults(kind)
  for name, p in inspect.signature(fn).parameters.items():
    if name in ("params", "device", "fused"): continue  # tinygrad's placement and speed choices, not options
    if name == "ns_coefficients":
      assert tuple(p.default or ()) == tuple(c.ns_coefficients[:c.n_ns_coefficients]), name
    else: assert getattr(c, name) == p.default, name


def test_step_needs_training_and_grads():
  w = Tensor(np.ones((2, 2), np.float32))
  opt = Adam([w])
  (w * w).sum().backward()
  with Context(TRAINING=0):
    with pytest.raises(RuntimeError, match="TRAINING=0"): opt.step()
  opt.zero_grad()
  assert w.grad is None
  with pytest.raises(InvalidArgumentError, match=r"params\[0\] \(2,2\) has no grad"): opt.step()
  np.testing.assert_array_equal(w.numpy(), np.ones((2, 2)))


def test_bad_arguments():
  w = Tensor(np.ones(3, np.float32))
  with pytest.raises(AssertionError, match="at least one param"): SGD([])  # tinygrad's assert
  with pytest.raises(TypeError, match=r"params\[1\]"): Adam([w, np.ones(3)])
  with pytest.raises(InvalidArgumentError, match="lr -1"): AdamW([w], lr=-1)
  with pytest.raises(InvalidArgumentError, match="momentum -0.5"): SGD([w], momentum=-0.5)
  with pytest.raises(InvalidArgumentError, match="weight_decay -1"): LAMB([w], weight_decay=-1)
  with pytest.raises(TinygradError, match="float"): SGD([Tensor(np.ones(3, np.int32))])
  with pytest.raises(TinygradError, match="0-d"): Muon([Tensor(np.float32(1.0))])


def test_duplicated_params_step_once():  # tinygrad's test_duped_weights
  for opt_fn in (Adam, AdamW, SGD):
    losses = []
    for params in (lambda w: [w], lambda w: [w, w]):
      w = Tensor(inits(0)[0])
      opt = opt_fn(params(w), lr=0.1)
      assert len(opt.params) == 1
      for _ in range(3):
        loss = w.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
      losses.append(loss.numpy())
    np.testing.assert_allclose(losses[0], losses[1], atol=1e-6)


def test_schedule_step_realized_with_the_loss_and_lr_setter():
  x0, W0, m0 = inits(5)
  x, W, m = Tensor(x0), Tensor(W0), Tensor(m0)
  opt = Adam([x, W], lr=0.1)
  for step in range(4):
    if step == 2: opt.lr = 0.05
    if step == 3: opt.lr = Tensor(np.float32(0.02))
    opt.zero_grad()
    loss = tiny_net(x, W, m)
    loss.backward()
    ts = opt.schedule_step()
    assert len(ts) == 2 + 2 * 2 + 2
    Tensor.realize_many(loss, *ts)
  np.testing.assert_allclose(opt.lr.numpy(), [0.02])
  # torch with the same lr schedule
  tx, tW = torch.tensor(x0, requires_grad=True), torch.tensor(W0, requires_grad=True)
  topt = torch.optim.Adam([tx, tW], lr=0.1)
  for step in range(4):
    for g in topt.param_groups: g["lr"] = {2: 0.05, 3: 0.02}.get(step, g["lr"])
    topt.zero_grad()
    tiny_net(tx, tW, torch.tensor(m0)).backward()
    topt.step()
  check([x.numpy(), W.numpy()], [tx.detach().numpy(), tW.detach().numpy()], "Adam with an lr schedule")


@pytest.mark.parametrize("realize_in_fn", [True, False])
def test_jit_step_with_lr_change_matches_eager(realize_in_fn):
  def train(jit_on):
    x0, W0, m0 = inits(6)
    x, W = Tensor(x0), Tensor(W0)
    opt = SGD([x, W], lr=0.1, momentum=0.9)
    def step(m):
      opt.zero_grad()
      loss = tiny_net(x, W, m)
      loss.backward()
      ts = opt.schedule_step()  # a TinyJit captures the assigns without their being realized or returned
      if realize_in_fn or not jit_on: Tensor.realize_many(loss, *ts)
      return loss
    fn = TinyJit(step) if jit_on else step
    losses = []
    for i in range(6):
      if i == 4: opt.lr = 0.01
      losses.append(fn(Tensor(m0 + i)).numpy())
    return losses, W.numpy()
  (lj, wj), (le, we) = train(True), train(False)
  np.testing.assert_allclose(lj, le, atol=ATOL, rtol=RTOL)
  np.testing.assert_allclose(wj, we, atol=ATOL, rtol=RTOL)


def test_optimizer_group():
  x0, W0, m0 = inits(7)
  x, W, m = Tensor(x0), Tensor(W0), Tensor(m0)
  group = OptimizerGroup(SGD([x], lr=0.1), Adam([W], lr=0.1))
  assert len(group.params) == 2 and isinstance(group[1], LAMB)
  for _ in range(3):
    group.zero_grad()
    tiny_net(x, W, m).backward()
    group.step()
  tx, tW = torch.tensor(x0, requires_grad=True), torch.tensor(W0, requires_grad=True)
  opts = [torch.optim.SGD([tx], lr=0.1), torch.optim.Adam([tW], lr=0.1)]
  for _ in range(3):
    for o in opts: o.zero_grad()
    tiny_net(tx, tW, torch.tensor(m0)).backward()
    for o in opts: o.step()
  check([x.numpy(), W.numpy()], [tx.detach().numpy(), tW.detach().numpy()], "OptimizerGroup")

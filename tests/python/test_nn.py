"""tinygrad_c.nn modules against PyTorch 1.13: forward and every gradient (input and each parameter) with the same weights
(ours copied into torch), state dict keys, save/load round trips, initialisation bounds, and nn.datasets.mnist against
the .gz files read with gzip + numpy. RMSNorm (torch 1.13 has none) against its formula in numpy.

Inputs and upstream gradients are random with fixed seeds; every element is compared. Tolerances (atol, rtol) per dtype
are in TOL: the modules hold float32, as torch's; a float64 input promotes the computation (weights upcast) and is
compared against torch's module in double. Integer results (Embedding's gather, mnist) must be exact.
"""
import gzip
import math

import numpy as np
import pytest
import torch

from tinygrad_c import Context, Tensor, TinygradError, dtypes, get_option
from tinygrad_c import nn
from tinygrad_c.nn.datasets import FASHION_MNIST_DIR, load_idx, mnist
from tinygrad_c.nn.state import get_parameters, get_state_dict, load_state_dict, safe_load, safe_save

# (forward, gradient) tolerances as (atol, rtol); gradients sum over the batch, so they get more room
TOL = {np.float32: ((2e-5, 1e-5), (1e-4, 1e-4)), np.float64: ((1e-10, 1e-10), (1e-10, 1e-10))}
# convolutions sum in(ch) * k terms per output and batch * spatial terms per weight gradient
CONV_TOL = {np.float32: ((1e-4, 1e-5), (5e-4, 1e-4)), np.float64: ((1e-10, 1e-10), (1e-10, 1e-10))}


@pytest.fixture(autouse=True)
def eval_mode():
  """Every test starts in eval (TRAINING=0); the option is restored after it."""
  with Context(TRAINING=0): yield


def names_of(m): return [n for n in m._names if getattr(m, n, None) is not None]


BUFFERS = ("num_batches_tracked", "running_mean", "running_var")  # state, not parameters: no gradient


def float_params(m): return [n for n in names_of(m) if n not in BUFFERS]


def randomize(m, rng, names=None):
  """Norm layers start at weight 1, bias 0: random values make a swapped or ignored parameter visible."""
  for n in names or float_params(m):
    t = getattr(m, n)
    t.assign(rng.standard_normal(t.shape).astype(np.float32)).realize()


def copy_to_torch(ours, theirs, names):
  with torch.no_grad():
    for n in names: getattr(theirs, n).copy_(torch.from_numpy(getattr(ours, n).numpy()))


def close(got, want, tol, what):
  np.testing.assert_allclose(got, want, atol=tol[0], rtol=tol[1], err_msg=what)


def check(ours, theirs, x, *, seed, tol=TOL, call=None, tcall=None, params=None):
  """ours(x) against theirs(x) with ours' weights copied into theirs; the loss is sum(out * g) with g random, so every
  gradient element depends on a different upstream value. Gradients w.r.t. x and every float parameter."""
  rng = np.random.default_rng(seed)
  params = float_params(ours) if params is None else params
  copy_to_torch(ours, theirs, params)
  if x.dtype == np.float64: theirs = theirs.double()
  fwd_tol, bwd_tol = tol[x.dtype.type]
  call, tcall = call or (lambda m, t: m(t)), tcall or (lambda m, t: m(t))
  for n in params: getattr(ours, n).requires_grad = True
  xt, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
  out, tout = call(ours, xt), tcall(theirs, tx)
  assert out.shape == tuple(tout.shape)
  g = rng.standard_normal(out.shape).astype(x.dtype)
  (out * Tensor(g)).sum().backward()
  (tout * torch.from_numpy(g)).sum().backward()
  close(out.numpy(), tout.detach().numpy(), fwd_tol, "forward")
  close(xt.grad.numpy(), tx.grad.numpy(), bwd_tol, "d/dx")
  for n in params:  # parameters stay float32: their gradients are cast back to it
    close(getattr(ours, n).grad.numpy(), getattr(theirs, n).grad.numpy(), TOL[np.float32][1] if x.dtype == np.float64 else bwd_tol, f"d/d{n}")
  return out


def randn(seed, *shape, dtype=np.float32): return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- Linear and convolutions ----
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 8), (3, 2, 8)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear(bias, shape, dtype):
  Tensor.manual_seed(1)
  ours = nn.Linear(8, 16, bias=bias)
  assert (ours.bias is None) == (not bias)
  check(ours, torch.nn.Linear(8, 16, bias=bias), randn(2, *shape, dtype=dtype), seed=3)


CONV2D = [  # stride, padding, dilation, groups, kernel
  (1, 0, 1, 1, (3, 3)), (2, 1, 1, 1, (3, 3)), (1, 2, 2, 1, (3, 3)), (1, 1, 1, 2, (3, 3)), (1, 1, 1, 4, (3, 3)),
  (2, 1, 1, 1, (2, 3)), (3, 2, 2, 2, (3, 2)),
]


@pytest.mark.parametrize("stride,padding,dilation,groups,kernel", CONV2D)
def test_conv2d(stride, padding, dilation, groups, kernel):
  Tensor.manual_seed(4)
  ours = nn.Conv2d(4, 8, kernel, stride=stride, padding=padding, dilation=dilation, groups=groups)
  theirs = torch.nn.Conv2d(4, 8, kernel, stride=stride, padding=padding, dilation=dilation, groups=groups)
  check(ours, theirs, randn(5, 2, 4, 9, 10), seed=6, tol=CONV_TOL)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_no_bias(dtype):
  Tensor.manual_seed(7)
  ours = nn.Conv2d(3, 5, 3, padding=1, bias=False)
  assert ours.bias is None
  check(ours, torch.nn.Conv2d(3, 5, 3, padding=1, bias=False), randn(8, 2, 3, 6, 6, dtype=dtype), seed=9, tol=CONV_TOL)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 3, 2, 1), (2, 2, 1, 3), (3, 1, 2, 3)])
def test_conv1d(stride, padding, dilation, groups):
  Tensor.manual_seed(10)
  ours = nn.Conv1d(6, 9, 5, stride=stride, padding=padding, dilation=dilation, groups=groups)
  assert ours.weight.shape == (9, 6 // groups, 5)
  theirs = torch.nn.Conv1d(6, 9, 5, stride=stride, padding=padding, dilation=dilation, groups=groups)
  check(ours, theirs, randn(11, 3, 6, 23), seed=12, tol=CONV_TOL)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups,kernel", [
  (1, 0, 0, 1, 1, (3, 3)), (2, 1, 0, 1, 1, (3, 3)), (2, 1, 1, 1, 1, (3, 3)), (3, 2, 2, 1, 1, (4, 3)), (2, 0, 1, 1, 2, (3, 3)),
  (1, 1, 0, 2, 4, (3, 3)), (2, 1, 1, 2, 2, (2, 2)),
])
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups, kernel):
  Tensor.manual_seed(13)
  ours = nn.ConvTranspose2d(4, 8, kernel, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)
  assert ours.weight.shape == (4, 8 // groups, *kernel)
  theirs = torch.nn.ConvTranspose2d(4, 8, kernel, stride=stride, padding=padding, output_padding=output_padding, groups=groups, dilation=dilation)
  check(ours, theirs, randn(14, 2, 4, 5, 6), seed=15, tol=CONV_TOL)


def test_conv_arguments_the_c_module_cannot_take_raise():
  with pytest.raises(ValueError): nn.Conv2d(4, 4, 3, padding="full")  # tinygrad's error; tuples and "same" work (test_tg_conv.py)
  with pytest.raises(TinygradError): nn.Conv2d(4, 6, 3, groups=4)
  with pytest.raises(TinygradError): nn.Linear(0, 3)


# ---- BatchNorm ----
def batchnorm_pair(sz, seed, ndim=4, **kw):
  """Ours and torch's BatchNorm for inputs of rank ndim (torch's class checks the rank), with random weights and stats."""
  ours = {3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}.get(ndim, nn.BatchNorm1d)(sz, **kw)
  theirs = {4: torch.nn.BatchNorm2d, 5: torch.nn.BatchNorm3d}.get(ndim, torch.nn.BatchNorm1d)(sz, **kw)
  rng = np.random.default_rng(seed)
  if ours.weight is not None: randomize(ours, rng, ["weight", "bias"])
  if getattr(ours, "running_mean", None) is not None:  # unset without running stats, as tinygrad
    ours.running_mean.assign(rng.standard_normal(sz).astype(np.float32)).realize()
    ours.running_var.assign(rng.uniform(0.5, 2, sz).astype(np.float32)).realize()
  copy_to_torch(ours, theirs, [n for n in ("weight", "bias", "running_mean", "running_var") if getattr(ours, n, None) is not None])
  return ours, theirs


def check_running(ours, theirs, what):
  close(ours.running_mean.numpy(), theirs.running_mean.numpy(), (1e-6, 1e-5), f"{what}: running_mean")
  close(ours.running_var.numpy(), theirs.running_var.numpy(), (1e-6, 1e-5), f"{what}: running_var")
  assert ours.num_batches_tracked.numpy() == theirs.num_batches_tracked.item(), what
  assert ours.num_batches_tracked.dtype == dtypes.int64


@pytest.mark.parametrize("shape", [(4, 6, 5, 3), (8, 6), (3, 6, 7), (2, 6, 3, 2, 2)])
def test_batchnorm_eval_uses_running_stats(shape):
  ours, theirs = batchnorm_pair(6, seed=20, ndim=len(shape))
  check(ours, theirs.eval(), randn(21, *shape), seed=22)
  check_running(ours, theirs, "eval leaves the running stats")
  assert ours.num_batches_tracked.numpy() == 0


@pytest.mark.parametrize("momentum", [0.1, 0.3])
@pytest.mark.parametrize("shape", [(4, 6, 5, 3), (8, 6), (3, 6, 7), (2, 6, 3, 2, 2)])
def test_batchnorm_training_batch_stats_and_running_updates(momentum, shape):
  """Several steps: the output and gradients use the batch's statistics (biased variance), the running ones follow with
  the unbiased variance and `momentum`, num_batches_tracked counts the steps."""
  ours, theirs = batchnorm_pair(6, seed=23, ndim=len(shape), momentum=momentum)
  theirs.train()
  with Tensor.train():
    assert Tensor.training and get_option("TRAINING") == 1
    for step in range(3):
      x = randn(24 + step, *shape) * (step + 1) + step  # batches with different statistics
      check(ours, theirs, x, seed=30 + step)
      check_running(ours, theirs, f"step {step}")
      for n in ("weight", "bias"): getattr(ours, n).grad, getattr(theirs, n).grad = None, None
  assert ours.num_batches_tracked.numpy() == 3


def test_batchnorm_running_stats_chain_lazily():
  """Three training calls whose in-place running updates are realized only at the end."""
  ours, theirs = batchnorm_pair(4, seed=40)
  theirs.train()
  with Tensor.train():
    outs = []
    for step in range(3):
      x = randn(41 + step, 5, 4, 3, 3) + step
      outs.append((ours(Tensor(x)), theirs(torch.from_numpy(x))))
  check_running(ours, theirs, "after 3 lazy steps")
  for o, t in outs: close(o.numpy(), t.detach().numpy(), TOL[np.float32][0], "output")


def test_batchnorm_affine_off():
  ours, theirs = batchnorm_pair(5, seed=50, affine=False)
  assert ours.weight is None and ours.bias is None
  assert list(get_state_dict(ours)) == ["num_batches_tracked", "running_mean", "running_var"]
  theirs.train()
  with Tensor.train(): check(ours, theirs, randn(51, 4, 5, 3, 3), seed=52)
  check_running(ours, theirs, "affine off")


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_track_running_stats_off(training):
  """Batch statistics in training and in eval, as torch; tinygrad keeps num_batches_tracked (torch has no entry)."""
  ours, theirs = batchnorm_pair(5, seed=53, track_running_stats=False)
  assert not hasattr(ours, "running_mean") and not hasattr(ours, "running_var")  # as tinygrad
  assert list(get_state_dict(ours)) == ["weight", "bias", "num_batches_tracked"]
  theirs.train(training)
  with Tensor.train(training): check(ours, theirs, randn(54, 4, 5, 3, 3), seed=55)
  assert ours.num_batches_tracked.numpy() == 0


def test_batchnorm_eval_after_training_uses_updated_stats():
  ours, theirs = batchnorm_pair(3, seed=56)
  theirs.train()
  with Tensor.train():
    for step in range(2):
      x = randn(57 + step, 6, 3, 2, 2) * 2 + 1
      ours(Tensor(x)).realize()
      theirs(torch.from_numpy(x))
  theirs.eval()
  check(ours, theirs, randn(59, 2, 3, 2, 2), seed=60)


# ---- LayerNorm, LayerNorm2d, RMSNorm, GroupNorm, InstanceNorm ----
@pytest.mark.parametrize("normalized", [(7,), (5, 7)])
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm(normalized, affine):
  ours, theirs = nn.LayerNorm(normalized, elementwise_affine=affine), torch.nn.LayerNorm(normalized, elementwise_affine=affine)
  assert (ours.weight is None) == (not affine)
  if affine:
    assert ours.weight.shape == normalized and np.all(ours.weight.numpy() == 1) and np.all(ours.bias.numpy() == 0)
    randomize(ours, np.random.default_rng(61))
  check(ours, theirs, randn(62, 3, 4, 5, 7) * 3 + 1, seed=63)


def test_layernorm_int_shape_and_eps():
  ours, theirs = nn.LayerNorm(6, eps=0.5), torch.nn.LayerNorm(6, eps=0.5)
  randomize(ours, np.random.default_rng(64))
  check(ours, theirs, randn(65, 4, 6) * 0.3, seed=66)


def test_layernorm2d():
  ours, theirs = nn.LayerNorm2d(5), torch.nn.LayerNorm(5)
  randomize(ours, np.random.default_rng(67))
  check(ours, theirs, randn(68, 3, 5, 4, 6), seed=69, tcall=lambda m, t: m(t.permute(0, 2, 3, 1)).permute(0, 3, 1, 2))


def rmsnorm_numpy(x, w, g, eps):
  """y = x * r * w with r = (mean(x^2) + eps)^-1/2 over the last dim, and its gradients for the upstream g:
  dx = r * w * g - x * r^3 / D * sum(g * w * x), dw = sum over the batch of g * x * r."""
  x, g = x.astype(np.float64), g.astype(np.float64)
  w = np.ones(x.shape[-1]) if w is None else w.astype(np.float64)
  r = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
  dx = r * w * g - x * r ** 3 / x.shape[-1] * (g * w * x).sum(-1, keepdims=True)
  return x * r * w, dx, (g * x * r).reshape(-1, x.shape[-1]).sum(0)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("eps", [1e-6, 0.25])
def test_rmsnorm_against_formula(affine, eps):
  ours = nn.RMSNorm(12, eps=eps, elementwise_affine=affine)
  if affine: randomize(ours, np.random.default_rng(70))
  else: assert ours.weight is None and list(get_state_dict(ours)) == []
  x, g = randn(71, 3, 5, 12) * 2, randn(72, 3, 5, 12)
  want, dx, dw = rmsnorm_numpy(x, ours.weight.numpy() if affine else None, g, eps)
  xt = Tensor(x, requires_grad=True)
  if affine: ours.weight.requires_grad = True
  out = ours(xt)
  (out * Tensor(g)).sum().backward()
  fwd, bwd = TOL[np.float32]
  close(out.numpy(), want, fwd, "forward")
  close(xt.grad.numpy(), dx, bwd, "d/dx")
  if affine: close(ours.weight.grad.numpy(), dw, bwd, "d/dweight")


@pytest.mark.parametrize("groups,channels", [(3, 6), (1, 4), (4, 4), (2, 8)])
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm(groups, channels, affine):
  ours, theirs = nn.GroupNorm(groups, channels, affine=affine), torch.nn.GroupNorm(groups, channels, affine=affine)
  if affine: randomize(ours, np.random.default_rng(73))
  check(ours, theirs, randn(74, 4, channels, 5, 3) * 2 - 1, seed=75)


@pytest.mark.parametrize("shape", [(3, 5, 6, 4), (2, 5, 7)])
def test_instancenorm(shape):
  ours = nn.InstanceNorm(5)
  theirs = torch.nn.InstanceNorm2d(5, affine=True) if len(shape) == 4 else torch.nn.InstanceNorm1d(5, affine=True)
  randomize(ours, np.random.default_rng(76))
  check(ours, theirs, randn(77, *shape) * 3 + 2, seed=78)


def test_instancenorm_affine_off():
  ours = nn.InstanceNorm(4, affine=False)
  assert ours.weight is None
  check(ours, torch.nn.InstanceNorm2d(4, affine=False), randn(79, 2, 4, 5, 5), seed=80)


# ---- Embedding ----
def test_embedding_forward_exact_and_weight_grad_with_repeats():
  Tensor.manual_seed(81)
  ours, theirs = nn.Embedding(11, 6), torch.nn.Embedding(11, 6)
  copy_to_torch(ours, theirs, ["weight"])
  idx = np.array([[1, 5, 5, 0], [10, 5, 1, 1], [3, 3, 3, 3]], dtype=np.int32)  # repeats accumulate; 2, 4, 6..9 get none
  ours.weight.requires_grad = True
  out, tout = ours(Tensor(idx)), theirs(torch.from_numpy(idx).long())
  np.testing.assert_array_equal(out.numpy(), tout.detach().numpy())
  g = randn(82, 3, 4, 6)
  (out * Tensor(g)).sum().backward()
  (tout * torch.from_numpy(g)).sum().backward()
  close(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), TOL[np.float32][1], "d/dweight")
  assert np.all(ours.weight.grad.numpy()[[2, 4, 6, 7, 8, 9]] == 0)


@pytest.mark.parametrize("rank", range(5))
def test_embedding_index_shapes(rank):
  ours = nn.Embedding(10, 4)
  idx = np.full((2,) * rank, 7, dtype=np.int64)
  out = ours(Tensor(idx))
  assert out.shape == idx.shape + (4,)
  np.testing.assert_array_equal(out.numpy(), np.broadcast_to(ours.weight.numpy()[7], idx.shape + (4,)))


def test_embedding_empty_indices():
  assert nn.Embedding(10, 4)(Tensor(np.zeros((4, 0), np.int32))).numpy().shape == (4, 0, 4)


def test_embedding_rejects_float_indices():
  with pytest.raises(TinygradError): nn.Embedding(10, 4)(Tensor(np.zeros(3, np.float32)))


# ---- LSTMCell ----
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell(bias):
  """Two steps: from the zero state, then from the first step's (h, c); gradients of sum(h*gh + c*gc) w.r.t. x, the
  given h and c, and all 4 parameters."""
  Tensor.manual_seed(83)
  ours, theirs = nn.LSTMCell(7, 5, bias=bias), torch.nn.LSTMCell(7, 5, bias=bias)
  params = float_params(ours)
  assert params == (["weight_ih", "weight_hh", "bias_ih", "bias_hh"] if bias else ["weight_ih", "weight_hh"])
  if bias: randomize(ours, np.random.default_rng(84), ["bias_ih", "bias_hh"])  # they start at 0
  copy_to_torch(ours, theirs, params)
  for n in params: getattr(ours, n).requires_grad = True
  x0, x1, h0, c0 = randn(85, 3, 7), randn(86, 3, 7), randn(87, 3, 5), randn(88, 3, 5)
  gh, gc = randn(89, 3, 5), randn(90, 3, 5)
  fwd, bwd = TOL[np.float32]

  h, c = ours(Tensor(x0))
  th, tc = theirs(torch.from_numpy(x0))
  close(h.numpy(), th.detach().numpy(), fwd, "h, zero state")
  close(c.numpy(), tc.detach().numpy(), fwd, "c, zero state")
  h, c = ours(Tensor(x1), (h, c))
  th, tc = theirs(torch.from_numpy(x1), (th, tc))
  close(h.numpy(), th.detach().numpy(), fwd, "h, second step")
  close(c.numpy(), tc.detach().numpy(), fwd, "c, second step")

  xs = [Tensor(a, requires_grad=True) for a in (x1, h0, c0)]
  txs = [torch.tensor(a, requires_grad=True) for a in (x1, h0, c0)]
  h, c = ours(xs[0], (xs[1], xs[2]))
  th, tc = theirs(txs[0], (txs[1], txs[2]))
  for n in params: getattr(ours, n).grad, getattr(theirs, n).grad = None, None
  (h * Tensor(gh) + c * Tensor(gc)).sum().backward()
  (th * torch.from_numpy(gh) + tc * torch.from_numpy(gc)).sum().backward()
  close(h.numpy(), th.detach().numpy(), fwd, "h")
  close(c.numpy(), tc.detach().numpy(), fwd, "c")
  for name, a, b in zip(("x", "h", "c"), xs, txs): close(a.grad.numpy(), b.grad.numpy(), bwd, f"d/d{name}")
  for n in params: close(getattr(ours, n).grad.numpy(), getattr(theirs, n).grad.numpy(), bwd, f"d/d{n}")


def test_lstm_cell_module_call_without_state_matches_zero_state():
  ours = nn.LSTMCell(4, 3)
  x = Tensor(randn(91, 2, 4))
  h, c = ours(x)
  h0, c0 = ours(x, (Tensor.zeros(2, 3), Tensor.zeros(2, 3)))
  np.testing.assert_array_equal(h.numpy(), h0.numpy())
  np.testing.assert_array_equal(c.numpy(), c0.numpy())
  with pytest.raises(TinygradError, match="LSTMCell"): ours(Tensor(randn(92, 2, 5)))


# ---- state dicts ----
def module_pairs():
  return [
    ("Linear", lambda: nn.Linear(3, 4), lambda: torch.nn.Linear(3, 4)),
    ("Linear nobias", lambda: nn.Linear(3, 4, bias=False), lambda: torch.nn.Linear(3, 4, bias=False)),
    ("Conv1d", lambda: nn.Conv1d(2, 4, 3), lambda: torch.nn.Conv1d(2, 4, 3)),
    ("Conv2d", lambda: nn.Conv2d(2, 4, (3, 2), groups=2), lambda: torch.nn.Conv2d(2, 4, (3, 2), groups=2)),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2d(4, 6, 3, groups=2), lambda: torch.nn.ConvTranspose2d(4, 6, 3, groups=2)),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), lambda: torch.nn.BatchNorm2d(3)),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3)),
    ("LayerNorm", lambda: nn.LayerNorm((2, 3)), lambda: torch.nn.LayerNorm((2, 3))),
    ("GroupNorm", lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4)),
    ("InstanceNorm", lambda: nn.InstanceNorm(4), lambda: torch.nn.InstanceNorm2d(4, affine=True)),
    ("Embedding", lambda: nn.Embedding(5, 3), lambda: torch.nn.Embedding(5, 3)),
    ("LSTMCell", lambda: nn.LSTMCell(3, 2), lambda: torch.nn.LSTMCell(3, 2)),
  ]


@pytest.mark.parametrize("what,make,make_torch", module_pairs(), ids=[p[0] for p in module_pairs()])
def test_state_dict_keys_and_shapes_match_torch(what, make, make_torch):
  ours, theirs = get_state_dict(make()), make_torch().state_dict()
  assert sorted(ours) == sorted(theirs), what
  for k, t in theirs.items():
    assert ours[k].shape == tuple(t.shape), k
    assert ours[k].dtype == (dtypes.int64 if t.dtype == torch.int64 else dtypes.float32), k


def test_state_dict_order_is_tinygrads():
  assert list(get_state_dict(nn.BatchNorm2d(3))) == ["weight", "bias", "num_batches_tracked", "running_mean", "running_var"]
  assert list(get_state_dict(nn.LSTMCell(3, 2))) == ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
  assert list(get_state_dict(nn.RMSNorm(4))) == ["weight"]
  assert list(get_state_dict(nn.LayerNorm2d(4))) == ["weight", "bias"]


class Model:
  def __init__(self):
    self.conv = nn.Conv2d(1, 4, 3, padding=1)
    self.bn = nn.BatchNorm2d(4)
    self.layers = [nn.Linear(4 * 5 * 5, 8), nn.Linear(8, 3)]
    self.emb = nn.Embedding(7, 2)

  def __call__(self, x):
    x = self.bn(self.conv(x)).relu().reshape(x.shape[0], -1)
    return self.layers[1](self.layers[0](x).relu())


class TorchModel(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.conv, self.bn = torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
    self.layers = torch.nn.ModuleList([torch.nn.Linear(4 * 5 * 5, 8), torch.nn.Linear(8, 3)])
    self.emb = torch.nn.Embedding(7, 2)

  def forward(self, x):
    x = self.bn(self.conv(x)).relu().reshape(x.shape[0], -1)
    return self.layers[1](self.layers[0](x).relu())


MODEL_KEYS = ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.num_batches_tracked", "bn.running_mean", "bn.running_var",
              "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "emb.weight"]


def test_model_state_dict_round_trips_through_safetensors(tmp_path):
  Tensor.manual_seed(100)
  a = Model()
  with Tensor.train(): a(Tensor(randn(101, 6, 1, 5, 5))).realize()  # running stats and num_batches_tracked move off their start
  sd = get_state_dict(a)
  assert list(sd) == MODEL_KEYS
  assert len(get_parameters(a)) == len(MODEL_KEYS)
  safe_save(sd, tmp_path / "model.safetensors")
  loaded = safe_load(tmp_path / "model.safetensors")
  assert list(loaded) == MODEL_KEYS
  b = Model()
  assert not np.array_equal(b.layers[0].weight.numpy(), a.layers[0].weight.numpy())
  load_state_dict(b, loaded, verbose=False)
  for k, v in get_state_dict(b).items():
    np.testing.assert_array_equal(v.numpy(), sd[k].numpy(), err_msg=k)
    assert v.dtype == sd[k].dtype, k
  assert b.bn.num_batches_tracked.numpy() == 1
  x = Tensor(randn(102, 2, 1, 5, 5))
  np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())


def test_model_state_dict_loads_into_torch_and_back():
  """Our keys are torch's: torch's load_state_dict(strict=True) takes ours, ours takes torch's, and the outputs agree."""
  Tensor.manual_seed(103)
  ours, theirs = Model(), TorchModel()
  randomize(ours.bn, np.random.default_rng(104))
  assert sorted(get_state_dict(ours)) == sorted(theirs.state_dict())
  theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in get_state_dict(ours).items()}, strict=True)
  x = randn(105, 3, 1, 5, 5)
  close(ours(Tensor(x)).numpy(), theirs.eval()(torch.from_numpy(x)).detach().numpy(), TOL[np.float32][0], "ours -> torch")
  back = TorchModel()
  load_state_dict(ours, {k: Tensor(v.numpy()) for k, v in back.state_dict().items()}, verbose=False)
  close(ours(Tensor(x)).numpy(), back.eval()(torch.from_numpy(x)).detach().numpy(), TOL[np.float32][0], "torch -> ours")


def test_load_state_dict_strict_errors_name_the_key():
  m = Model()
  sd = get_state_dict(Model())
  missing = {k: v for k, v in sd.items() if k != "layers.1.bias"}
  with pytest.raises(KeyError, match=r"layers\.1\.bias"): load_state_dict(m, missing, verbose=False)
  with pytest.raises(KeyError, match=r"head\.weight"): load_state_dict(m, {**sd, "head.weight": Tensor.zeros(2)}, verbose=False)
  with pytest.raises(ValueError, match=r"`layers\.0\.weight`.*\(8, 100\).*\(100, 8\)"):
    load_state_dict(m, {**sd, "layers.0.weight": Tensor.zeros(100, 8)}, verbose=False)
  # not strict: the missing one keeps its value, the others load
  before = m.layers[1].bias.numpy()
  assert len(load_state_dict(m, missing, strict=False, verbose=False)) == len(MODEL_KEYS) - 1
  np.testing.assert_array_equal(m.layers[1].bias.numpy(), before)
  np.testing.assert_array_equal(m.layers[1].weight.numpy(), sd["layers.1.weight"].numpy())


def test_attributes_share_the_c_module():
  lin = nn.Linear(2, 2)
  lin.weight = Tensor.zeros(2, 2)  # a plain attribute, as tinygrad's: the module calls with the new tensor
  np.testing.assert_array_equal(lin(Tensor([[3.0, 4.0]])).numpy(), [lin.bias.numpy()])
  lin.weight.assign(np.eye(2, dtype=np.float32)).realize()
  lin.bias.assign(np.array([1, -1], np.float32)).realize()
  np.testing.assert_array_equal(lin(Tensor([[3.0, 4.0]])).numpy(), [[4.0, 3.0]])


# ---- initialisation ----
def check_uniform(t, bound, what):
  """Within [-bound, bound], reaching near both ends, mean ~0 and variance ~bound^2/3 (n >= 1e5 draws)."""
  a = t.numpy().astype(np.float64).ravel()
  assert a.min() >= -bound and a.max() <= bound, what
  assert a.min() < -0.99 * bound and a.max() > 0.99 * bound, what
  assert abs(a.mean()) < 0.01 * bound, what
  assert abs(a.var() / (bound * bound / 3) - 1) < 0.02, what


def test_initialisation():
  Tensor.manual_seed(110)
  lin = nn.Linear(600, 400)
  check_uniform(lin.weight, 1 / math.sqrt(600), "Linear weight")
  assert np.abs(lin.bias.numpy()).max() <= 1 / math.sqrt(600)
  conv = nn.Conv2d(64, 96, (5, 4))
  check_uniform(conv.weight, 1 / math.sqrt(64 * 20), "Conv2d weight")
  assert np.abs(conv.bias.numpy()).max() <= 1 / math.sqrt(64 * 20)
  check_uniform(nn.Conv1d(50, 300, 7).weight, 1 / math.sqrt(50 * 7), "Conv1d weight")
  check_uniform(nn.ConvTranspose2d(80, 64, 5).weight, 1 / math.sqrt(80 * 25), "ConvTranspose2d weight")
  check_uniform(nn.Embedding(1000, 300).weight, math.sqrt(6 / 1300), "Embedding weight (glorot)")
  cell = nn.LSTMCell(300, 100)
  check_uniform(cell.weight_ih, 1 / math.sqrt(100), "LSTMCell weight_ih")
  assert np.all(cell.bias_ih.numpy() == 0) and np.all(cell.bias_hh.numpy() == 0)
  bn = nn.BatchNorm2d(3)
  for n, v in (("weight", 1), ("bias", 0), ("running_mean", 0), ("running_var", 1)): assert np.all(getattr(bn, n).numpy() == v), n
  assert bn.num_batches_tracked.numpy() == 0
  for m in (nn.GroupNorm(2, 4), nn.InstanceNorm(4), nn.LayerNorm(4)):
    assert np.all(m.weight.numpy() == 1) and np.all(m.bias.numpy() == 0)
  assert np.all(nn.RMSNorm(4).weight.numpy() == 1)


def test_layers_draw_different_weights():
  a, b = nn.Linear(16, 16), nn.Linear(16, 16)
  assert not np.array_equal(a.weight.numpy(), b.weight.numpy())
  Tensor.manual_seed(111)
  c = nn.Linear(16, 16).weight.numpy()
  Tensor.manual_seed(111)
  np.testing.assert_array_equal(nn.Linear(16, 16).weight.numpy(), c)


# ---- data sets ----
def read_idx_gz(name):
  """The file by the format's spec: magic 0, 0, type 0x08, ndim, big-endian uint32 dims, then the bytes."""
  raw = gzip.open(f"{FASHION_MNIST_DIR}/{name}.gz").read()
  assert raw[:3] == b"\0\0\x08"
  ndim = raw[3]
  dims = np.frombuffer(raw[4:4 + 4 * ndim], ">u4").astype(int)
  return np.frombuffer(raw[4 + 4 * ndim:], np.uint8).reshape(dims)


def test_mnist():
  X_train, Y_train, X_test, Y_test = mnist()
  assert X_train.shape == (60000, 1, 28, 28) and Y_train.shape == (60000,)
  assert X_test.shape == (10000, 1, 28, 28) and Y_test.shape == (10000,)
  for t in (X_train, Y_train, X_test, Y_test): assert t.dtype == dtypes.uint8
  for y in (Y_train, Y_test): np.testing.assert_array_equal(np.unique(y.numpy()), np.arange(10))
  np.testing.assert_array_equal(X_train.numpy()[:, 0], read_idx_gz("train-images-idx3-ubyte"))
  np.testing.assert_array_equal(Y_train.numpy(), read_idx_gz("train-labels-idx1-ubyte"))
  np.testing.assert_array_equal(X_test.numpy()[:, 0], read_idx_gz("t10k-images-idx3-ubyte"))
  np.testing.assert_array_equal(Y_test.numpy(), read_idx_gz("t10k-labels-idx1-ubyte"))


def test_load_idx_and_mnist_errors(tmp_path):
  np.testing.assert_array_equal(load_idx(f"{FASHION_MNIST_DIR}/t10k-labels-idx1-ubyte.gz").numpy(), read_idx_gz("t10k-labels-idx1-ubyte"))
  with pytest.raises(TinygradError, match="cannot open"): load_idx(tmp_path / "none")
  with pytest.raises(ValueError): mnist(fashion=False)
  with pytest.raises(TinygradError, match="train-images"): mnist(dir=str(tmp_path))


def test_conv_transpose1d_matches_torch():
  torch.manual_seed(3)
  m = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
  t = torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
  with torch.no_grad():
    t.weight.copy_(torch.from_numpy(m.weight.numpy())), t.bias.copy_(torch.from_numpy(m.bias.numpy()))
  x = np.random.default_rng(5).standard_normal((2, 4, 7)).astype(np.float32)
  np.testing.assert_allclose(m(Tensor(x)).numpy(), t(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)

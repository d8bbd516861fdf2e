"""The gradients of a convolution: conv takes its own backward (a transposed convolution for the input, a reduce over
batch and output positions for the weight) instead of differentiating its window view. Checked element by element
against torch (float32: atol 1e-3, rtol 1e-4; the sums run over up to a few hundred products) over strides that do and
don't divide the input, dilation, groups, depthwise, asymmetric and negative padding, 1-3 spatial dims, second order,
and a batch that is a bound Variable inside TinyJit."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinygrad_c import Tensor, TinyJit, Variable

TOL = dict(atol=1e-3, rtol=1e-4)


def rnd(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def torch_grads(x, w, g, groups, stride, dilation, pads, nsp):
  """torch's d x, d w of sum(conv(x, w) * g) with tinygrad's flat (before, after) pads per dim (negative crops)"""
  tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  flat = []
  for b, a in reversed(pads): flat += [b, a]  # F.pad takes the last dim first
  conv = [F.conv1d, F.conv2d, F.conv3d][nsp - 1]
  (conv(F.pad(tx, flat), tw, None, stride, 0, dilation, groups) * torch.tensor(g)).sum().backward()
  return tx.grad.numpy(), tw.grad.numpy()


CASES = [  # (batch, cin, cout, input, kernel, groups, stride, dilation, pads)
  (2, 3, 4, (9, 8), (3, 3), 1, (1, 1), (1, 1), [(0, 0), (0, 0)]),
  (2, 4, 6, (11, 10), (3, 2), 2, (2, 3), (1, 1), [(1, 1), (0, 2)]),  # strides that leave rows past the last window
  (3, 4, 4, (10, 9), (3, 3), 4, (1, 2), (2, 1), [(2, 1), (1, 1)]),  # depthwise, dilation
  (2, 3, 5, (12, 12), (5, 5), 1, (3, 3), (1, 2), [(-1, 2), (2, -2)]),  # negative pads crop
  (2, 2, 3, (13,), (4,), 1, (2,), (3,), [(1, 0)]),  # conv1d
  (1, 2, 4, (6, 5, 7), (3, 2, 3), 2, (1, 2, 2), (1, 1, 2), [(1, 1), (0, 1), (2, 0)]),  # conv3d
  # depthwise with stride 2: computed over the input's four phases (conv_depthwise_s2): odd and even sizes, 2x2 to 5x5
  (2, 6, 6, (12, 12), (3, 3), 6, (2, 2), (1, 1), [(1, 1), (1, 1)]),
  (2, 5, 5, (7, 9), (3, 3), 5, (2, 2), (1, 1), [(1, 1), (1, 1)]),
  (1, 4, 4, (11, 10), (5, 5), 4, (2, 2), (1, 1), [(2, 2), (2, 2)]),
  (2, 3, 3, (8, 8), (2, 2), 3, (2, 2), (1, 1), [(0, 1), (0, 1)]),
  (1, 3, 3, (6, 7), (3, 3), 3, (2, 2), (1, 1), [(0, 0), (0, 0)]),
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_conv_gradients_match_torch(case):
  bs, cin, cout, hw, k, groups, stride, dilation, pads = case
  nsp = len(hw)
  x, w = rnd(bs, cin, *hw, seed=1), rnd(cout, cin // groups, *k, seed=2)
  out = Tensor(x).conv2d(Tensor(w), groups=groups, stride=stride, dilation=dilation, padding=[p for bp in reversed(pads) for p in bp])
  conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
  flat = [p for bp in reversed(pads) for p in bp]
  want = conv(F.pad(torch.tensor(x), flat), torch.tensor(w), None, stride, 0, dilation, groups).numpy() if min(flat) >= 0 else None
  if want is not None: np.testing.assert_allclose(out.numpy(), want, **TOL)
  g = rnd(*out.shape, seed=3)
  want_x, want_w = torch_grads(x, w, g, groups, stride, dilation, pads, nsp)
  ox, ow = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  (ox.conv2d(ow, groups=groups, stride=stride, dilation=dilation, padding=[p for bp in reversed(pads) for p in bp]) * Tensor(g)).sum().backward()
  np.testing.assert_allclose(ox.grad.numpy(), want_x, **TOL)
  np.testing.assert_allclose(ow.grad.numpy(), want_w, **TOL)


def test_conv_second_order_gradient_matches_torch():
  x, w = rnd(2, 3, 7, 7, seed=4), rnd(4, 3, 3, 3, seed=5)
  tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  gx, = torch.autograd.grad(F.conv2d(tx, tw, stride=2).square().sum(), tx, create_graph=True)
  gx.square().sum().backward()
  ox, ow = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  ogx = ox.conv2d(ow, stride=2).square().sum().gradient(ox)[0]
  np.testing.assert_allclose(ogx.numpy(), gx.detach().numpy(), **TOL)
  ogx.square().sum().backward()
  np.testing.assert_allclose(ow.grad.numpy(), tw.grad.numpy(), atol=1e-2, rtol=1e-3)


def test_conv_gradients_with_a_variable_batch_in_tinyjit():
  w = Tensor(rnd(4, 3, 3, 3, seed=6), requires_grad=True)

  @TinyJit
  def step(x):
    w.grad = None
    x.conv2d(w, padding=1).relu().sum().backward()
    return w.grad.realize()

  vb = Variable("bs", 1, 8)
  for n in [3, 5, 2, 7]:
    x = rnd(8, 3, 6, 6, seed=n)
    got = step(Tensor(x)[:vb.bind(n)]).numpy()
    tx, tw = torch.tensor(x[:n]), torch.tensor(w.numpy(), requires_grad=True)
    F.conv2d(tx, tw, padding=1).relu().sum().backward()
    np.testing.assert_allclose(got, tw.grad.numpy(), **TOL)

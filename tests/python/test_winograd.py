"""Winograd F(4, 3) convolutions (WINO): values and gradients against torch element by element, over 1-3 spatial dims,
padding that does and doesn't make whole tiles, groups, depthwise and a bias; which convolutions take it (WINO=1 every
3-tap stride-1 one, WINO=0 none, unset the rule in docs/nn.md); and a training step under TinyJit that replays it.
Tolerance float32: atol 1e-3, rtol 1e-4 (the transforms add and subtract up to 4x the inputs before the products, so
the rounding is a few times the direct sum's; sums here run over up to 27 * 64 products)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinygrad_c import Context, GlobalCounters, Tensor, TinyJit

TOL = dict(atol=1e-3, rtol=1e-4)


def rnd(*shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CASES = [  # (batch, cin, cout, input, groups, padding per dim (before, after))
  (2, 8, 16, (10, 10), 1, [(0, 0), (0, 0)]),  # 8x8 out: whole tiles
  (2, 8, 16, (9, 7), 2, [(1, 1), (1, 1)]),  # 9x7 out: partial tiles, groups
  (1, 6, 6, (11, 13), 6, [(1, 0), (0, 2)]),  # depthwise, asymmetric padding
  (3, 64, 32, (6, 6), 1, [(1, 1), (1, 1)]),  # many channels, one tile and a half
  (1, 3, 5, (13,), 1, [(2, 2)]),  # conv1d
  (1, 2, 3, (6, 5, 7), 1, [(1, 1), (0, 0), (1, 0)]),  # conv3d
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_winograd_matches_torch(case):
  bs, cin, cout, hw, groups, pads = case
  nsp = len(hw)
  x, w, b = rnd(bs, cin, *hw, seed=1), rnd(cout, cin // groups, *(3,) * nsp, seed=2), rnd(cout, seed=3)
  flat = [p for bp in reversed(pads) for p in bp]  # F.pad's order, which tinygrad's padding= takes too
  tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
  want = [F.conv1d, F.conv2d, F.conv3d][nsp - 1](F.pad(tx, flat), tw, tb, groups=groups)
  g = rnd(*want.shape, seed=4)
  (want * torch.tensor(g)).sum().backward()
  ox, ow, ob = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True), Tensor(b, requires_grad=True)
  with Context(WINO=1):
    out = ox.conv2d(ow, ob, groups=groups, padding=flat)
    (out * Tensor(g)).sum().backward()
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), **TOL)
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(ow.grad.numpy(), tw.grad.numpy(), **TOL)
    np.testing.assert_allclose(ob.grad.numpy(), tb.grad.numpy(), **TOL)


def kernels(x, w, **kw):
  """the kernels one realize of conv2d(x, w) runs: the direct conv is one; Winograd seven (the tiles gathered, the
  kernels transposed, three transforms, the products, the tiles put back)"""
  x.realize(), w.realize()
  before = GlobalCounters.kernel_count
  x.conv2d(w, **kw).realize()
  return GlobalCounters.kernel_count - before


def test_which_convolutions_take_winograd():
  x, w = Tensor(rnd(1, 8, 12, 12)), Tensor(rnd(8, 8, 3, 3))
  with Context(WINO=1):
    assert kernels(x, w, padding=1) == 7
    assert kernels(x, w, padding=1, stride=2) == 1  # strided: direct
    assert kernels(x, w, padding=2, dilation=2) == 1  # dilated: direct
    assert kernels(x, Tensor(rnd(8, 8, 5, 5)), padding=2) == 1  # 5x5: direct
  with Context(WINO=0):
    assert kernels(x, w, padding=1) == 1
  # unset: only where it pays (float32 2-d, >= 64 channels in and out, output >= 24 wide), see docs/nn.md
  assert kernels(x, w, padding=1) == 1
  assert kernels(Tensor(rnd(1, 64, 24, 24)), Tensor(rnd(64, 64, 3, 3) * 0.05), padding=1) == 7
  assert kernels(Tensor(rnd(1, 48, 24, 24)), Tensor(rnd(48, 48, 3, 3) * 0.05), padding=1) == 1
  assert kernels(Tensor(rnd(1, 64, 22, 22)), Tensor(rnd(64, 64, 3, 3) * 0.05), padding=1) == 1
  big, wbig = Tensor(rnd(1, 128, 28, 28)), Tensor(rnd(128, 128, 3, 3) * 0.05)
  assert kernels(big, wbig, padding=1) == 7
  assert kernels(Tensor(rnd(1, 128, 14, 14)), wbig, padding=1) == 1
  assert kernels(big.cast("float16"), wbig.cast("float16"), padding=1) == 1


def test_winograd_training_step_replays_under_jit():
  x, w0 = rnd(4, 8, 12, 12, seed=5), rnd(8, 8, 3, 3, seed=6)

  def train(wino):
    with Context(WINO=wino):
      w = Tensor(w0, requires_grad=True)

      @TinyJit
      def step(x):
        loss = x.conv2d(w, padding=1).relu().conv2d(w, padding=1).square().mean()
        loss.backward()
        w.assign(w - w.grad * 0.01).realize()
        w.grad = None
        return loss.realize()
      return [step(Tensor(x * (i + 1) / 4)).item() for i in range(4)], w.numpy()

  (l1, w1), (l0, w_direct) = train(1), train(0)
  np.testing.assert_allclose(l1, l0, rtol=1e-4)
  np.testing.assert_allclose(w1, w_direct, **TOL)


def test_beam_times_both_forms_once_per_shape():
  # under BEAM (WINO unset) the two forms are timed once for these shapes and the faster kept: the same choice, and so
  # the same kernels, at every later call; the values either way within the tolerance
  x, w = Tensor(rnd(1, 8, 12, 12, seed=7)), Tensor(rnd(8, 8, 3, 3, seed=8))
  want = F.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()), padding=1).numpy()
  with Context(BEAM=1):
    x.conv2d(w, padding=1).realize()  # the timing (its two probe inputs are realized too)
    second = kernels(x, w, padding=1)
    assert second in (1, 6)
    assert kernels(x, w, padding=1) == second
    np.testing.assert_allclose(x.conv2d(w, padding=1).numpy(), want, **TOL)

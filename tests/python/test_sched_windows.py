# tinygrad's beautiful_mnist model evaluated on a view of a uint8 buffer (what nn.datasets.mnist() returns: a
# (N,28,28) -> (N,1,28,28) reshape) plans no sliding-window buffer: its peak memory is the same as for a contiguous input.
import numpy as np
import pytest

from tinygrad_c import Tensor, dtypes, nn

def model():
  Tensor.manual_seed(0)
  return [nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu, nn.BatchNorm(32), Tensor.max_pool2d,
          nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu, nn.BatchNorm(64), Tensor.max_pool2d,
          lambda x: x.flatten(1), nn.Linear(576, 10)]

def run(layers, x):
  for f in layers: x = f(x)
  return x

VIEWS = {
  "reshape": lambda b, n: b.reshape(n, 1, 28, 28),
  "permute": lambda b, n: b.permute(0, 2, 1).reshape(n, 1, 28, 28),
  "shrink": lambda b, n: b.pad(((1, 1), None, None)).shrink(((1, n + 1), None, None)).reshape(n, 1, 28, 28),
  "cast": lambda b, n: b.reshape(n, 1, 28, 28).cast(dtypes.float32),
}

@pytest.mark.parametrize("view", VIEWS)
def test_mnist_model_on_a_view_plans_no_window(view):
  n = 10000
  b = Tensor.randint(n, 28, 28, high=255, dtype=dtypes.uint8).realize()
  p = run(model(), VIEWS[view](b, n)).argmax(axis=1).plan()
  windows = [k.name for k in p.kernels if k.name.startswith("E_") and "_3_3" in k.name]
  assert windows == []
  assert p.memory.peak_bytes < 2 << 30

@pytest.mark.parametrize("view", VIEWS)
def test_mnist_model_on_a_view_matches_contiguous_input(view):
  n = 4
  layers = model()
  b = Tensor.randint(n, 28, 28, high=255, dtype=dtypes.uint8).realize()
  want = run(layers, VIEWS[view](b, n).contiguous().realize()).numpy()
  np.testing.assert_allclose(run(layers, VIEWS[view](b, n)).numpy(), want, rtol=1e-4, atol=1e-3)


def test_conv_reads_its_input_realized():
  # an elementwise producer (a residual add and ReLU) is realized before the conv's windows read it, not recomputed at
  # every tap and tile of output channels: two kernels, the conv's reading one buffer; a reduce's output with its ReLU is
  # that reduce's epilogue (still two kernels for two convs); a plain buffer costs no copy
  import torch
  import torch.nn.functional as F
  from tinygrad_c import GlobalCounters
  rng = np.random.default_rng(0)
  a, b = (rng.standard_normal((2, 8, 14, 14)).astype(np.float32) for _ in range(2))
  w1, w2 = (rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2 for _ in range(2))
  ta, tb, tw1, tw2 = (Tensor(v).realize() for v in (a, b, w1, w2))

  def count(f):
    before = GlobalCounters.kernel_count
    out = f().realize()
    return GlobalCounters.kernel_count - before, out.numpy()

  n, got = count(lambda: (ta + tb).relu().conv2d(tw1, stride=2, padding=1))
  assert n == 2
  np.testing.assert_allclose(got, F.conv2d((torch.tensor(a) + torch.tensor(b)).relu(), torch.tensor(w1), stride=2, padding=1).numpy(),
                             atol=1e-4, rtol=1e-4)
  n, got = count(lambda: ta.conv2d(tw1, padding=1).relu().conv2d(tw2, padding=1))
  assert n == 2
  np.testing.assert_allclose(got, F.conv2d(F.conv2d(torch.tensor(a), torch.tensor(w1), padding=1).relu(), torch.tensor(w2), padding=1).numpy(),
                             atol=1e-4, rtol=1e-4)
  assert count(lambda: ta.conv2d(tw1, padding=1))[0] == 1

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

# Make the in-tree binding importable (bindings/python/tinygrad_c) without installing it.
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python"))


@pytest.fixture(autouse=True)
def _seeded():
  """The binding seeds from the clock, as tinygrad; each test starts from seed 0 so its numbers don't depend on the
  time or on the tests run before it."""
  import tinygrad_c
  tinygrad_c.Tensor.manual_seed(0)
  yield


def pytest_make_parametrize_id(config, val, argname):
  """Stable ids for parameters whose repr holds an address (lambdas, bare objects): every pytest-xdist worker must
  collect the same names."""
  if callable(val) and getattr(val, "__name__", None) == "<lambda>": return f"{argname}-lambda"
  if type(val) is object: return f"{argname}-object"
  return None

# Make the in-tree binding importable (bindings/python/tinygrad_c) without installing it.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python"))


def pytest_make_parametrize_id(config, val, argname):
  """Stable ids for parameters whose repr holds an address (lambdas, bare objects): every pytest-xdist worker must
  collect the same names."""
  if callable(val) and getattr(val, "__name__", None) == "<lambda>": return f"{argname}-lambda"
  if type(val) is object: return f"{argname}-object"
  return None

"""tinygrad's engine package paths: `from tinygrad_c.engine.jit import TinyJit`."""
from . import jit  # noqa: F401 (tinygrad.engine.jit after import tinygrad)

"""`from tinygrad_c.engine.jit import TinyJit`, as tinygrad code imports it from tinygrad.engine.jit."""
from .. import TinyJit  # noqa: F401

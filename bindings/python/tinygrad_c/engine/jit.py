"""`from tinygrad_c.engine.jit import TinyJit, JitError`, as tinygrad code imports them from tinygrad.engine.jit."""
from .. import TinyJit, JitError  # noqa: F401

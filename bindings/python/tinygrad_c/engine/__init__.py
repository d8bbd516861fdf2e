"""tinygrad's engine package paths: `from tinygrad_c.engine.jit import TinyJit`."""

"""`from tinygrad_c.uop import UOp, Ops`, as tinygrad code imports them from tinygrad.uop."""
from .. import UOp, Ops  # noqa: F401

"""`from tinygrad_c.uop.ops import UOp, Ops`, as tinygrad code imports them from tinygrad.uop.ops."""
from .. import UOp, Ops  # noqa: F401

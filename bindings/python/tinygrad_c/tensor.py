"""`from tinygrad_c.tensor import Tensor`, as tinygrad code imports it from tinygrad.tensor."""
from . import Tensor  # noqa: F401

"""`from tinygrad_c.dtype import dtypes, DType, least_upper_dtype`, as tinygrad code imports them from tinygrad.dtype."""
from . import DType, dtypes, least_upper_dtype, to_dtype  # noqa: F401

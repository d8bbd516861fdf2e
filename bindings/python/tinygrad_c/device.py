"""`from tinygrad_c.device import Device`, as tinygrad code imports it from tinygrad.device."""
from . import Device  # noqa: F401

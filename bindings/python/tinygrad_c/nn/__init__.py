"""tinygrad's nn: modules over the C modules (tg_nn_*), with nn.optim and nn.state."""
from . import optim, state  # noqa: F401

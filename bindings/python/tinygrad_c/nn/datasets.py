"""tinygrad's nn.datasets over the C IDX reader: mnist() from a directory of IDX files (Debian's dataset-fashion-mnist
by default)."""
from __future__ import annotations

import ctypes
import os
from typing import Optional, Tuple

from .. import C, Tensor, _ok

__all__ = ["mnist", "load_idx"]


FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def load_idx(path, device: Optional[str] = None) -> Tensor:
  """An IDX file (plain or .gz) as a tensor of its dims and element type."""
  return Tensor._wrap(C.tensor_from_idx(os.fspath(path).encode(), device.encode() if device else None), "tensor_from_idx")


def mnist(device: Optional[str] = None, fashion: bool = True, dir: Optional[str] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
  """X_train (N, 1, 28, 28) uint8, Y_train (N,) uint8, X_test, Y_test, as tinygrad's nn.datasets.mnist. The files are read
  from `dir`, by default Fashion-MNIST from Debian's dataset-fashion-mnist (this machine has no network to fetch the
  original MNIST: pass dir= for a directory holding its four IDX files)."""
  if dir is None:
    if not fashion: raise ValueError("mnist(fashion=False) needs dir=, a directory holding the four MNIST IDX files")
    dir = FASHION_MNIST_DIR
  outs = [ctypes.c_void_p() for _ in range(4)]
  _ok(C.dataset_mnist(os.fspath(dir).encode(), device.encode() if device else None, *[ctypes.byref(o) for o in outs]), "dataset_mnist")
  return tuple(Tensor._wrap(o.value, "dataset_mnist") for o in outs)  # type: ignore[return-value]

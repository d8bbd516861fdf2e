"""mlp_sgd: examples/c/mlp_sgd.c through the Python binding, printing the same lines (docs/bindings.md)."""
import gc
import struct

import numpy as np
import tinygrad_c as tg
from tinygrad_c import Tensor, TinygradError, nn

N, IN, HID, OUT, STEPS = 32, 8, 16, 4, 20


def train():
  x = Tensor(np.array([[((7 * i + 3 * j) % 11 - 5) / 5.0 for j in range(IN)] for i in range(N)], dtype=np.float32))
  y = Tensor(np.array([(7 * i % 11) % 4 for i in range(N)], dtype=np.int32))
  layers = [nn.Linear(IN, HID), Tensor.relu, nn.Linear(HID, OUT)]
  opt = nn.optim.SGD(nn.state.get_parameters(layers), lr=0.1)
  for step in range(1, STEPS + 1):
    opt.zero_grad()
    h = x
    for layer in layers: h = layer(h)
    loss = h.sparse_categorical_crossentropy(y)
    loss.backward()
    Tensor.realize_many(loss, *opt.schedule_step())
    v = float(loss.numpy())
    print(f"step {step} loss {struct.unpack('<I', struct.pack('<f', v))[0]:08x} {v:.6f}")


def bad_matmul():
  try:
    Tensor.zeros(2, 3) @ Tensor.zeros(4, 5)
    raise SystemExit("the bad matmul succeeded")
  except TinygradError as e:
    print(f"error {e.status}: {e.message}")


if __name__ == "__main__":
  Tensor.manual_seed(1337)
  Tensor.training = True
  train()
  bad_matmul()
  gc.collect()
  print(f"live handles: {tg.live_handles()}")

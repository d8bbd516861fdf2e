#!/usr/bin/env python3
"""A small convolutional classifier for Fashion-MNIST, written the way tinygrad programs are written: nn layers held as
plain attributes, Tensor.sequential, nn.state.get_parameters for the optimizer, a TinyJit'd training method under
@Context(TRAINING=1), `function` on the forward, and tinygrad_c.helpers' getenv/trange.

  PYTHONPATH=bindings/python TINYGRAD_LIB=build/libtinygrad.so /usr/bin/python3 examples/python/mnist_cnn.py

Environment: STEPS (default 200), BS (batch size, 128), LR (Adam's, 0.002), EVAL_EVERY (steps, 50), TEST_N (test
images evaluated, all 10,000 by default), TARGET (fail unless the final test accuracy in % reaches it; 0: no check),
SEED (0), GPUS (1).
"""
from tinygrad_c import Context, Device, Tensor, TinyJit, function, nn
from tinygrad_c.helpers import getenv, trange
from tinygrad_c.nn.datasets import mnist


GPUS = tuple(f"{Device.DEFAULT}:{i}" for i in range(getenv("GPUS", 1)))


class ConvNet:
  def __init__(self):
    self.layers = [
      nn.Conv2d(1, 16, 3), nn.BatchNorm(16), Tensor.relu, Tensor.max_pool2d,  # 28 -> 26 -> 13
      nn.Conv2d(16, 32, 3), nn.BatchNorm(32), Tensor.relu, Tensor.max_pool2d,  # 13 -> 11 -> 5
      lambda x: x.flatten(1), nn.Linear(32 * 5 * 5, 10)]

  @function
  def __call__(self, x: Tensor) -> Tensor: return (x.float() / 255.0 - 0.2860).sequential(self.layers)

  @TinyJit
  @Context(TRAINING=1)
  def train_step(self, X: Tensor, Y: Tensor) -> Tensor:
    self.opt.zero_grad()
    idx = Tensor.randint(self.bs, high=X.shape[0])
    x, y = X[idx], Y[idx]
    if len(GPUS) > 1: x, y = x.shard(GPUS, axis=0), y.shard(GPUS, axis=0)  # each device takes its share of the batch
    loss = self(x).sparse_categorical_crossentropy(y).backward()
    return loss.realize(*self.opt.schedule_step())

  @TinyJit
  def accuracy(self, X: Tensor, Y: Tensor) -> Tensor: return (self(X).argmax(axis=1) == Y).mean() * 100


def main():
  Tensor.manual_seed(getenv("SEED", 0))
  X_train, Y_train, X_test, Y_test = mnist(fashion=True)
  if (n := getenv("TEST_N", 0)) > 0: X_test, Y_test = X_test[:n].contiguous().realize(), Y_test[:n].contiguous().realize()

  model = ConvNet()
  if len(GPUS) > 1:
    for x in nn.state.get_state_dict(model).values(): x.to_(GPUS)  # a copy of every weight on every device
    X_test, Y_test = X_test.shard(GPUS, axis=0), Y_test.shard(GPUS, axis=0)
  # get_parameters includes BatchNorm's running statistics; the optimizer keeps the tensors that take gradients
  model.opt, model.bs = nn.optim.Adam(nn.state.get_parameters(model), lr=getenv("LR", 0.002)), getenv("BS", 128)

  steps, every, acc = getenv("STEPS", 200), getenv("EVAL_EVERY", 50), float("nan")
  for i in (t := trange(steps)):
    loss = model.train_step(X_train, Y_train)
    if (i + 1) % every == 0 or i == steps - 1: acc = model.accuracy(X_test, Y_test).item()
    t.set_description(f"loss {loss.item():6.3f}  test accuracy {acc:5.2f}%")
  print(f"after {steps} steps of batch {model.bs}: test accuracy {acc:.2f}% on {X_test.shape[0]} images")
  if (target := getenv("TARGET", 0.0)) and not acc >= target: raise SystemExit(f"test accuracy {acc:.2f}% < target {target}%")


if __name__ == "__main__":
  main()

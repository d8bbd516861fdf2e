"""PyTorch CPU reference for bench_ops' `train cnn fashion-mnist` row: the training examples/c/train_cnn.c runs, in
PyTorch: tinygrad's beautiful_mnist convnet (conv 5x5 32, ReLU, conv 5x5 32, ReLU, BatchNorm, max-pool, conv 3x3 64,
ReLU, conv 3x3 64, ReLU, BatchNorm, max-pool, Linear 576 -> 10), torch.optim.Adam (lr 2e-3 decayed along a cosine),
cross-entropy with label smoothing 0.1, batches of 512 drawn at random from the 60,000 Fashion-MNIST training images
(uint8 as float, as the C example feeds them), each image mirrored at random. Prints
the steps per second after 2 warm-up steps as the last line.

usage: train_cnn_torch.py THREADS STEPS
exit status 2 if torch can't be imported."""
import gzip
import math
import sys
import time

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist"


def load(split: str):
    """Fashion-MNIST images (N, 28, 28 flattened, uint8) and labels of `split` ("train" or "t10k")."""
    with gzip.open(f"{DIR}/{split}-images-idx3-ubyte.gz") as f: x = np.frombuffer(f.read(), np.uint8, offset=16)
    with gzip.open(f"{DIR}/{split}-labels-idx1-ubyte.gz") as f: y = np.frombuffer(f.read(), np.uint8, offset=8)
    return x, y


def cnn_model(nn):
    """tinygrad's beautiful_mnist convnet in torch.nn (the module passed in, so importing this file needs no torch)."""
    return nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(576, 10))


def main() -> int:
    threads, steps = int(sys.argv[1]), int(sys.argv[2])
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print(f"train_cnn_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load("train")
    X = torch.tensor(x.reshape(-1, 1, 28, 28).astype(np.float32))
    Y = torch.tensor(y.astype(np.int64))
    model = cnn_model(nn)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    def step():
        idx = torch.randint(0, X.shape[0], (512,))
        opt.zero_grad()
        x = X[idx]
        x = torch.where(torch.rand(512, 1, 1, 1) < 0.5, x.flip(3), x)
        loss = nn.functional.cross_entropy(model(x), Y[idx], label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss

    def lr(i):  # the example's cosine decay, set before each step
        for g in opt.param_groups: g["lr"] = 2e-3 * 0.5 * (1 + math.cos(math.pi * i / steps))

    for i in range(2): lr(i), step()
    t0 = time.perf_counter()
    for i in range(2, steps): lr(i); loss = step()
    dt = time.perf_counter() - t0
    print(f"torch {torch.__version__} threads={torch.get_num_threads()} loss {float(loss):.4f}", file=sys.stderr)
    print(f"{(steps - 2) / dt:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

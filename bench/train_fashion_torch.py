"""PyTorch CPU reference for bench_ops' `train fashion-mnist` row: the training examples/c/train_fashion_mnist.c runs,
in PyTorch: a 784-HIDDEN-10 MLP with ReLU, torch.optim.Adam (lr 1e-3, tinygrad's defaults), cross-entropy, batch 128
drawn at random (randint indices) from the 60,000 Fashion-MNIST training images in [0, 1]. Prints the test accuracy,
then the training steps per second as the last line.

usage: train_fashion_torch.py THREADS STEPS [HIDDEN]
exit status 2 if torch can't be imported."""
import gzip
import sys
import time

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist"


def idx(name: str, offset: int) -> np.ndarray:
    with gzip.open(f"{DIR}/{name}.gz") as f: return np.frombuffer(f.read(), np.uint8, offset=offset)


def main() -> int:
    threads, steps = int(sys.argv[1]), int(sys.argv[2])
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"train_fashion_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(42)
    xtr = torch.from_numpy(idx("train-images-idx3-ubyte", 16).reshape(-1, 784).astype(np.float32) / 255)
    ytr = torch.from_numpy(idx("train-labels-idx1-ubyte", 8).astype(np.int64))
    xte = torch.from_numpy(idx("t10k-images-idx3-ubyte", 16).reshape(-1, 784).astype(np.float32) / 255)
    yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte", 8).astype(np.int64))
    model = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    t0 = time.perf_counter()
    for _ in range(steps):
        samples = torch.randint(0, xtr.shape[0], (128,))
        opt.zero_grad()
        loss = F.cross_entropy(model(xtr[samples]), ytr[samples])
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    with torch.no_grad(): acc = (model(xte).argmax(1) == yte).float().mean().item()
    print(f"test accuracy: {acc:.4f}")
    print(f"{steps / dt:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch CPU reference for bench_ops' `eval cnn 10000` row: the train cnn model (tinygrad's beautiful_mnist convnet,
as bench/train_cnn_torch.py builds it) in eval mode, its test accuracy over the 10,000 Fashion-MNIST test images in one
forward (uint8 as float, as the C example feeds them), under no_grad. Prints the median seconds of RUNS evals after a
warm-up as the last line, and the growth of the process's peak resident memory over the evals to stderr.

usage: eval_cnn_torch.py THREADS RUNS
exit status 2 if torch can't be imported."""
import os
import resource
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cnn_torch import cnn_model, load  # noqa: E402  the same model and data as the training reference


def main() -> int:
    threads, runs = int(sys.argv[1]), int(sys.argv[2])
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:
        print(f"eval_cnn_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x, y = load("t10k")
    X, Y = torch.tensor(x.reshape(-1, 1, 28, 28)), torch.tensor(y.astype(np.int64))
    model = cnn_model(nn).eval()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    with torch.no_grad():
        for i in range(1 + runs):
            t0 = time.perf_counter()
            acc = (model(X.float()).argmax(1) == Y).float().mean().item()
            if i >= 1: times.append(time.perf_counter() - t0)
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"torch {torch.__version__} threads={torch.get_num_threads()} runs={runs} accuracy {acc:.4f} peak RSS +{grew:.0f} MB", file=sys.stderr)
    print(f"{statistics.median(times):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch CPU reference for bench_ops' CNN layer rows, at the train cnn model's shapes at batch 512: prints the median
milliseconds of one call after 2 warm-up calls.
  maxpool:   F.max_pool2d(x, 2) of x (512, 32, 20, 20) and the gradient of x for an incoming (512, 32, 10, 10)
             (forward and backward, as autograd runs them)
  batchnorm: nn.BatchNorm2d(32) in training on the same x: the batch statistics, the running ones updated, and the
             gradients of x, weight and bias for an incoming gradient of x's shape

usage: layers_torch.py THREADS RUNS maxpool|batchnorm
The last line of stdout is the median in ms; exit status 2 if torch can't be imported."""
import statistics
import sys
import time


def main() -> int:
    threads, runs, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        print(f"layers_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.randn(512, 32, 20, 20, requires_grad=True)
    if mode == "maxpool":
        g = torch.randn(512, 32, 10, 10)
        call = lambda: torch.autograd.grad(F.max_pool2d(x, 2), x, g)[0]
    elif mode == "batchnorm":
        g = torch.randn(512, 32, 20, 20)
        bn = nn.BatchNorm2d(32).train()
        call = lambda: torch.autograd.grad(bn(x), [x, bn.weight, bn.bias], g)
    else:
        print(f"layers_torch.py: unknown mode {mode}", file=sys.stderr)
        return 1
    times = []
    for i in range(2 + runs):
        t0 = time.perf_counter()
        call()
        if i >= 2: times.append(time.perf_counter() - t0)
    print(f"torch {torch.__version__} threads={torch.get_num_threads()} runs={runs} {mode}", file=sys.stderr)
    print(f"{statistics.median(times) * 1e3:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

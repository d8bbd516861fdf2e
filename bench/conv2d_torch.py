"""PyTorch CPU reference for bench_ops' conv2d rows: prints the median milliseconds of one
F.conv2d(x, w, padding=1) call, x (32, 64, 56, 56) and w (64, 64, 3, 3) float32, no bias; or, with MODE weight or
input, of the gradient of that conv for an incoming gradient of the output's shape (aten's convolution_backward with
only that output asked for: what autograd runs), 2 warm-up calls.

usage: conv2d_torch.py THREADS [RUNS] [WARMUP | weight | input]
The last line of stdout is the median in ms; exit status 2 if torch can't be imported."""
import statistics
import sys
import time


def main() -> int:
    threads = int(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    mode = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] in ("weight", "input") else "forward"
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 and mode == "forward" else 2
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"conv2d_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    x = torch.randn(32, 64, 56, 56, dtype=torch.float32)
    w = torch.randn(64, 64, 3, 3, dtype=torch.float32)
    g = torch.randn(32, 64, 56, 56, dtype=torch.float32)
    def backward(which):
        return torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                   [which == "input", which == "weight", False])[0 if which == "input" else 1]
    call = {"forward": lambda: F.conv2d(x, w, padding=1), "weight": lambda: backward("weight"), "input": lambda: backward("input")}[mode]
    times = []
    with torch.no_grad():
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            y = call()
            dt = time.perf_counter() - t0
            if i >= warmup:
                times.append(dt)
    assert tuple(y.shape) == ((64, 64, 3, 3) if mode == "weight" else (32, 64, 56, 56))
    print(f"torch {torch.__version__} threads={torch.get_num_threads()} runs={runs}", file=sys.stderr)
    print(f"{statistics.median(times) * 1e3:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

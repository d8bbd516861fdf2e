"""PyTorch CPU reference for bench_ops' `jit step mlp` row: one training step of a 784-128-10 MLP, batch 64, with
Adam (no bias correction, as the libtinygrad step: torch.optim.Adam's update with step-independent constants is
m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g^2, w -= lr * m / (sqrt(v) + eps)), written with plain tensors and no_grad
updates so both sides do the same arithmetic. Prints the median microseconds of one step.

usage: mlp_torch.py THREADS [STEPS]
The last line of stdout is the median in us; exit status 2 if torch can't be imported."""
import statistics
import sys
import time


def main() -> int:
    threads = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"mlp_torch.py: can't import torch: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    params = [(torch.rand(784, 128) - 0.5) * 0.1, (torch.rand(128) - 0.5) * 0.1, (torch.rand(128, 10) - 0.5) * 0.1, (torch.rand(10) - 0.5) * 0.1]
    for p in params: p.requires_grad_(True)
    ms = [torch.zeros_like(p) for p in params]
    vs = [torch.zeros_like(p) for p in params]
    xs = [torch.rand(64, 784) - 0.5 for _ in range(4)]
    ys = [x[:, :10].argmax(1) for x in xs]
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def step(x, y):
        for p in params: p.grad = None
        h = F.relu(x @ params[0] + params[1])
        loss = F.cross_entropy(h @ params[2] + params[3], y)
        loss.backward()
        with torch.no_grad():
            for p, m, v in zip(params, ms, vs):
                g = p.grad
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.sub_(lr * m / (v.sqrt() + eps))
        return loss

    times = []
    first = step(xs[0], ys[0]).item()
    for i in range(steps + 3):
        t0 = time.perf_counter()
        loss = step(xs[i % 4], ys[i % 4])
        dt = time.perf_counter() - t0
        if i >= 3: times.append(dt)
    last = loss.item()
    assert last < first, (first, last)
    print(f"torch {torch.__version__} threads={torch.get_num_threads()} steps={steps} loss {first:.4f} -> {last:.4f}", file=sys.stderr)
    print(f"{statistics.median(times) * 1e6:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

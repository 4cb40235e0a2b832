"""wick quickstart: train a small MLP eagerly on real data, then compile its inference.

Data: scikit-learn's bundled digits dataset (1797 8x8 grey images of handwritten digits, loaded
offline). Model: 64 -> 32 -> 10 with GELU, trained with `torch.optim.SGD` (momentum) on
`F.cross_entropy`, exactly as one would in PyTorch with `import torch`. Then `@eager.compile`
captures `predict` from its bytecode, fuses its elementwise chains into LLVM kernels, and the
held-out split runs both ways. Run: `python examples/quickstart.py`; see every stage with
`wick dump examples/quickstart.py`.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits

import capture
import eager as torch

EPOCHS, BATCH, LR, MOMENTUM, SEED = 30, 64, 0.05, 0.9, 0


def load_split():
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(SEED).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def init_params(sizes=(64, 32, 10)):
    torch.manual_seed(SEED)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = torch.randn(fan_in, fan_out) * (2.0 / fan_in) ** 0.5
        params += [w.requires_grad_(), torch.zeros(fan_out, requires_grad=True)]
    return params


def forward(x, w1, b1, w2, b2):
    h = torch.nn.functional.gelu(x @ w1 + b1)
    return h @ w2 + b2


@torch.compile
def predict(x, w1, b1, w2, b2):
    """Logits of the trained MLP (the function wick captures and compiles)."""
    h = torch.nn.functional.gelu(x @ w1 + b1)
    return h @ w2 + b2


def train(params, x_train, y_train):
    optimizer = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    rng = np.random.default_rng(SEED)
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x_train))
        total = 0.0
        for start in range(0, len(order), BATCH):
            idx = order[start:start + BATCH]
            xb, yb = torch.from_numpy(x_train[idx]), torch.from_numpy(y_train[idx])
            loss = torch.nn.functional.cross_entropy(forward(xb, *params), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        if epoch % 10 == 9 or epoch == 0:
            print(f"epoch {epoch + 1:3d}  train loss {total / len(order):.4f}")


def timed(fn, *args, repeat=50):
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    t_start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_split()
    print(f"digits: {len(x_train)} train / {len(x_test)} test images of 8x8 pixels")
    params = init_params()
    train(params, x_train, y_train)
    weights = [p.detach() for p in params]
    xt = torch.from_numpy(x_test)

    with torch.no_grad():
        logits_eager = forward(xt, *weights)
    logits_compiled = predict(xt, *weights)

    acc = float((logits_compiled.numpy().argmax(1) == y_test).mean())
    diff = float(np.abs(logits_eager.numpy() - logits_compiled.numpy()).max())
    print(f"\ntest accuracy (compiled): {acc:.4f}")
    print(f"max |eager - compiled| logit difference: {diff:.3e}")

    report = capture.explain(predict)(xt, *weights)
    print(f"\ncaptured graphs: {report.graph_count}, graph breaks: {report.graph_break_count}")
    for g in report.graphs:
        print(g)
    entry = predict.__wick_compiled__.entries[0]  # the cache entry serving these shapes
    kernels = getattr(entry.compiled, "kernels", [])
    print(f"\nfused kernels: {len(kernels)}")
    for k in kernels:
        print(f"  {k.name}: {' -> '.join(n.target.name for n in k.nodes)}")

    with torch.no_grad():
        t_eager = timed(forward, xt, *weights)
    t_comp = timed(predict, xt, *weights)
    print(f"\ninference on {len(x_test)} images: eager {t_eager * 1e3:.3f} ms, "
          f"compiled {t_comp * 1e3:.3f} ms ({t_eager / t_comp:.2f}x)")
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    assert acc >= 0.90, f"accuracy {acc:.3f} is below 90%"
    assert diff < 1e-4, f"compiled logits differ from eager by {diff}"


if __name__ == "__main__":
    main()

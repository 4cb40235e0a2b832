"""PyTorch-style snippets run as `import eager as torch`: ordinary tensor code people write
(normalisation, softmax by hand, masking, clamping, accuracy, cumulative sums, statistics...).

Each snippet is Python text run twice: with `torch` bound to `eager` and, when PyTorch is
importable, to real `torch`; results (values, shapes, dtypes) must agree. Without PyTorch the
eager result is compared with a numpy version of the same computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf, logsumexp

import eager

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

X = [[0.5, -1.25, 2.0, 0.75], [1.5, 0.25, -0.5, -2.0], [-1.0, 3.0, 0.125, 1.0]]
LOGITS = [[2.0, 0.5, -1.0], [0.1, 0.2, 3.0], [1.0, 4.0, 0.0], [0.3, -0.2, 0.1]]
LABELS = [0, 2, 0, 1]
A = [7, -3, 12, 5, -8, 0]
NAN, INF = float("nan"), float("inf")

x = np.array(X, np.float32)
lg = np.array(LOGITS, np.float32)
lab = np.array(LABELS)
a = np.array(A)


def _softmax(v, axis):
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _cum_index(v, better):
    """Indices of cummin (better=less_equal) along dim 0: the last position of the best so far."""
    out = np.zeros(v.shape, np.int64)
    for j in range(v.shape[1]):
        best = 0
        for i in range(v.shape[0]):
            if better(v[i, j], v[best, j]):
                best = i
            out[i, j] = best
    return out


# (id, code ending in `out = ...`, numpy reference of `out`)
SNIPPETS = [
    ("standardize", ("x = torch.tensor(X)\n"
     "out = (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True)"),
     lambda: (x - x.mean(1, keepdims=True)) / x.std(1, ddof=1, keepdims=True)),
    ("softmax_by_hand", ("x = torch.tensor(X)\n"
     "e = (x - x.max(dim=1, keepdim=True).values).exp()\nout = e / e.sum(dim=1, keepdim=True)"),
     lambda: _softmax(x, 1)),
    ("softmax_builtin", "out = torch.softmax(torch.tensor(X), dim=0)", lambda: _softmax(x, 0)),
    ("log_softmax", "out = F.log_softmax(torch.tensor(LOGITS), dim=1)",
     lambda: np.log(_softmax(lg, 1))),
    ("where_mask", "x = torch.tensor(X)\nout = torch.where(x > 0, x, torch.zeros_like(x))",
     lambda: np.where(x > 0, x, 0)),
    ("where_scalar", "x = torch.tensor(X)\nout = torch.where(x < 0, -1.0, x * 2)",
     lambda: np.where(x < 0, -1.0, x * 2)),
    ("clamp", "out = torch.tensor(X).clamp(min=-1.0, max=1.0)", lambda: np.clip(x, -1, 1)),
    ("clip_inplace", "x = torch.tensor(X)\nx.clip_(-0.5, 0.5)\nout = x",
     lambda: np.clip(x, -0.5, 0.5)),
    ("accuracy", ("logits = torch.tensor(LOGITS)\nlabels = torch.tensor(LABELS)\n"
     "out = (logits.argmax(dim=1) == labels).float().mean()"),
     lambda: np.float32((lg.argmax(1) == lab).mean())),
    ("cross_entropy_by_hand", ("logp = torch.log_softmax(torch.tensor(LOGITS), dim=1)\n"
     "onehot = (torch.tensor(LABELS).unsqueeze(1) == torch.arange(3)).float()\n"
     "out = -(logp * onehot).sum(dim=1).mean()"),
     lambda: -np.mean(np.log(_softmax(lg, 1))[np.arange(4), lab])),
    ("mse", ("p = torch.tensor(X)\n"
     "out = ((p - p * 0.5) ** 2).mean()"), lambda: np.mean((x - x * 0.5) ** 2)),
    ("cumsum_running_mean", ("x = torch.tensor(X)\n"
     "out = x.cumsum(dim=0) / torch.arange(1, 4).unsqueeze(1)"),
     lambda: np.cumsum(x, 0) / np.arange(1, 4)[:, None]),
    ("cumprod_cummax", ("x = torch.tensor(X)\n"
     "out = (x.cumprod(dim=1), x.cummax(dim=1).values, x.cummin(dim=0).indices)"),
     lambda: (np.cumprod(x, 1), np.maximum.accumulate(x, 1),
              _cum_index(x, np.less_equal))),
    ("statistics", ("x = torch.tensor(X)\n"
     "out = (x.var(unbiased=False), x.std(dim=0), x.var(1, correction=0), x.median())"),
     lambda: (x.var(), x.std(0, ddof=1), x.var(1), np.sort(x.ravel())[(x.size - 1) // 2])),
    ("var_mean_std_mean", ("x = torch.tensor(X)\n"
     "out = torch.var_mean(x, dim=1) + torch.std_mean(x, dim=0, keepdim=True)"),
     lambda: (x.var(1, ddof=1), x.mean(1), x.std(0, ddof=1, keepdims=True),
              x.mean(0, keepdims=True))),
    ("quantiles", ("x = torch.tensor(X)\n"
     "out = (torch.quantile(x, 0.25), x.quantile(torch.tensor([0.1, 0.9]), dim=1))"),
     lambda: (np.quantile(x, 0.25), np.quantile(x, [0.1, 0.9], axis=1))),
    ("l2_normalize", "x = torch.tensor(X)\nout = x / x.norm(dim=1, keepdim=True)",
     lambda: x / np.linalg.norm(x, axis=1, keepdims=True)),
    ("functional_normalize", "out = F.normalize(torch.tensor(X), dim=0)",
     lambda: x / np.linalg.norm(x, axis=0, keepdims=True)),
    ("mlp_layer", ("x = torch.tensor(X)\nw = torch.tensor(LOGITS)\n"
     "out = torch.relu(x @ w + 0.5)"), lambda: np.maximum(x @ lg + 0.5, 0)),
    ("integer_arithmetic", "a = torch.tensor(A)\nout = (a // 3, a % 3, a / 2, -a // 4)",
     lambda: (a // 3, a % 3, a / 2, -a // 4)),
    ("div_rounding_modes", ("a = torch.tensor(A)\n"
     "out = (torch.div(a, 3, rounding_mode='trunc'), a.div(-3, rounding_mode='floor'))"),
     lambda: (np.trunc(a / 3).astype(np.int64), a // -3)),
    ("bool_masks", ("x = torch.tensor(X)\nm = x > 0\n"
     "out = (m.sum(), m.any(), m.all(dim=1), (~m).float().mean(), torch.count_nonzero(m, 0))"),
     lambda: ((x > 0).sum(), True, (x > 0).all(1), np.float32((x <= 0).mean()),
              (x > 0).sum(0))),
    ("bit_ops", "a = torch.tensor(A)\nout = ((a & 3) | (a >> 1), a << 2, a ^ 5, ~a)",
     lambda: ((a & 3) | (a >> 1), a << 2, a ^ 5, ~a)),
    ("activations", ("x = torch.tensor(X)\n"
     "out = (F.gelu(x), F.silu(x), F.leaky_relu(x, 0.1), F.hardtanh(x), F.elu(x),"
     " torch.sigmoid(x))"),
     lambda: (0.5 * x * (1 + erf(x / np.sqrt(2))), x / (1 + np.exp(-x)),
              np.where(x > 0, x, 0.1 * x), np.clip(x, -1, 1),
              np.where(x > 0, x, np.expm1(x)), 1 / (1 + np.exp(-x)))),
    ("softplus_logsigmoid", ("x = torch.tensor(X)\n"
     "out = (F.softplus(x), F.logsigmoid(x), F.softsign(x), F.relu6(x * 4))"),
     lambda: (np.log1p(np.exp(x)), -np.log1p(np.exp(-x)), x / (1 + np.abs(x)),
              np.clip(x * 4, 0, 6))),
    ("relu_inplace", "x = torch.tensor(X)\ny = F.relu(x, inplace=True)\nout = (x, y is x)",
     lambda: (np.maximum(x, 0), True)),
    ("bce_by_hand", ("p = torch.sigmoid(torch.tensor(X))\nt = (torch.tensor(X) > 0).float()\n"
     "out = -(t * p.log() + (1 - t) * (1 - p).log()).mean()"),
     lambda: np.mean(-((x > 0) * np.log(1 / (1 + np.exp(-x))) +
                       (x <= 0) * np.log(1 - 1 / (1 + np.exp(-x)))))),
    ("logsumexp", "out = torch.logsumexp(torch.tensor(LOGITS), dim=1)",
     lambda: logsumexp(lg, axis=1)),
    ("max_min_forms", ("x = torch.tensor(X)\n"
     "out = (x.max(), x.max(dim=0).indices, torch.min(x, 1, keepdim=True).values,"
     " torch.maximum(x, torch.zeros(4)), x.amax(dim=(0, 1)), x.argmin())"),
     lambda: (x.max(), x.argmax(0), x.min(1, keepdims=True), np.maximum(x, 0), x.max(),
              x.argmin())),
    ("nan_handling", ("t = torch.tensor([NAN, INF, -INF, 1.0])\n"
     "out = (torch.nan_to_num(t, nan=0.0, posinf=9.0), torch.isnan(t).sum(),"
     " torch.isfinite(t), t.nansum(), torch.tensor([NAN, 2.0, 4.0]).nanmean())"),
     lambda: (np.array([0, 9, np.finfo(np.float32).min, 1], np.float32), 1,
              np.array([False, False, False, True]), np.nan, np.float32(3.0))),
    ("rounding", ("x = torch.tensor(X) * 3\n"
     "out = (x.round(), x.round(decimals=1), x.floor(), x.ceil(), x.trunc(), x.frac())"),
     lambda: (np.round(x * 3), np.round(x * 3 * 10) / 10, np.floor(x * 3), np.ceil(x * 3),
              np.trunc(x * 3), x * 3 - np.trunc(x * 3))),
    ("powers_and_roots", ("x = torch.tensor(X)\n"
     "out = (x.abs().sqrt(), x.pow(2).sum().sqrt(), x.abs().rsqrt(), 2 ** x, x.square(),"
     " torch.exp2(x), x.reciprocal())"),
     lambda: (np.sqrt(np.abs(x)), np.sqrt((x ** 2).sum()), 1 / np.sqrt(np.abs(x)), 2 ** x,
              x ** 2, np.exp2(x), 1 / x)),
    ("trig_and_hyperbolic", ("x = torch.tensor(X) / 4\n"
     "out = (x.sin(), x.cos(), torch.atan2(x, x + 1), x.asin(), x.tanh(), x.atanh(),"
     " torch.hypot(x, x * 2))"),
     lambda: (np.sin(x / 4), np.cos(x / 4), np.arctan2(x / 4, x / 4 + 1), np.arcsin(x / 4),
              np.tanh(x / 4), np.arctanh(x / 4), np.hypot(x / 4, x / 2))),
    ("optimizer_updates", ("p = torch.tensor(X)\ng = torch.tensor(X) * 0.5\n"
     "avg = torch.zeros(3, 4)\navg.lerp_(g, 0.1)\np.addcmul_(g, g, value=-0.1)\n"
     "p.addcdiv_(g, avg.abs() + 1, value=0.01)\nout = (p, avg)"),
     lambda: (x - 0.1 * (x * 0.5) ** 2 + 0.01 * (x * 0.5) / (np.abs(0.1 * x * 0.5) + 1),
              0.1 * x * 0.5)),
    ("median_mode", ("t = torch.tensor([[3, 1, 3, 2], [5, 5, 1, 1]])\n"
     "out = (t.median(dim=1).values, t.mode(dim=1).values, t.median())"),
     lambda: (np.array([2, 1]), np.array([3, 1]), 2)),
    ("prod_and_sum_dtypes", ("a = torch.tensor(A[:4])\nb = torch.tensor([True, False, True])\n"
     "out = (a.prod(), b.sum(), a.sum(dtype=torch.float64), torch.tensor([1, 2]).mean("
     "dtype=torch.float32))"),
     lambda: (np.prod(a[:4]), 2, np.float64(a[:4].sum()), np.float32(1.5))),
    ("promotion_dtypes", ("i = torch.tensor([1, 2])\n"
     "out = [str(t.dtype).split('.')[-1] for t in (i + 0.5, i / 2, i // 2, i > 1,"
     " torch.clamp(i, 0.5), torch.sqrt(i), i.argmax(), torch.tensor([True]) + True)]"),
     lambda: ["float32", "float32", "int64", "bool", "float32", "float32", "int64", "bool"]),
    ("logical_ops", ("x = torch.tensor(X)\n"
     "out = (torch.logical_and(x > 0, x < 1), torch.logical_or(x > 1, x < -1),"
     " torch.logical_xor(x > 0, x > 1), torch.logical_not(x > 0))"),
     lambda: ((x > 0) & (x < 1), (x > 1) | (x < -1), (x > 0) ^ (x > 1), ~(x > 0))),
    ("fmax_fmod_remainder", ("x = torch.tensor(X)\n"
     "y = torch.tensor([NAN, 1.0, -1.0, 0.5])\n"
     "out = (torch.fmax(x, y), torch.fmod(x, 0.75), torch.remainder(x, -0.75), x % 2)"),
     lambda: (np.fmax(x, np.array([np.nan, 1, -1, 0.5], np.float32)), np.fmod(x, 0.75),
              np.remainder(x, -0.75), np.remainder(x, 2))),
]


def _run(module, code):
    ns = {"torch": module, "F": module.nn.functional, "X": X, "LOGITS": LOGITS,
          "LABELS": LABELS, "A": A, "NAN": NAN, "INF": INF}
    exec(compile(code, "<snippet>", "exec"), ns)  # noqa: S102  (the snippet under test)
    return ns["out"]


def _flat(v):
    """A result as a list of (numpy value, dtype name or None)."""
    if isinstance(v, (tuple, list)):
        return [item for e in v for item in _flat(e)]
    if hasattr(v, "numpy"):
        data = v.detach().numpy() if hasattr(v, "detach") else v.numpy()
        return [(np.asarray(data), str(v.dtype).split(".")[-1])]
    return [(np.asarray(v), None)]


def _compare(got, want, with_dtypes):
    g, w = _flat(got), _flat(want)
    assert len(g) == len(w)
    for (gv, gd), (wv, wd) in zip(g, w):
        if with_dtypes and gd is not None:
            assert gd == wd
        assert gv.shape == wv.shape
        if gv.dtype.kind in "US":
            assert gv.tolist() == wv.tolist()
        else:
            np.testing.assert_allclose(gv.astype(np.float64), wv.astype(np.float64),
                                       rtol=2e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name,code,ref", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_snippet(name, code, ref):
    got = _run(eager, code)
    if torch is not None:
        _compare(got, _run(torch, code), with_dtypes=True)
    else:
        _compare(got, ref(), with_dtypes=False)


@pytest.mark.parametrize("name,code,ref", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_snippet_numpy_reference(name, code, ref):
    """The numpy version of each snippet is checked too, so that the snippets stay meaningful
    when PyTorch is absent."""
    _compare(_run(eager, code), ref(), with_dtypes=False)

"""`F.grid_sample` and `F.affine_grid` as graph vocabulary (issue 14 item 1): the registry
composite `_grid_sample` (ir/ops/grid_sample.py) against PyTorch (values and the gradients for
input and grid, every mode x padding_mode x align_corners, 4-D and 5-D; skipped without
torch), and under `capture.compile`: one graph, no break, compiled values and gradients equal
to eager's."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import capture
import eager

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

F = eager.nn.functional
MODES = ("bilinear", "nearest", "bicubic")
PADS = ("zeros", "border", "reflection")
CASES = [(m, p, ac, nd) for m, p, ac, nd in itertools.product(MODES, PADS, (False, True), (2, 3))
         if not (m == "bicubic" and nd == 3)]


def _ids(case):
    m, p, ac, nd = case
    return f"{m}-{p}-{'ac' if ac else 'noac'}-{nd + 2}d"


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


def _data(nd, dtype=np.float64, seed=0, lo=-1.25, hi=1.25):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3) + (5, 6, 4)[:nd]).astype(dtype)
    grid = rng.uniform(lo, hi, (2,) + (4, 3, 2)[:nd] + (nd,)).astype(dtype)
    return x, grid


def _grads(lib, x, grid, kw, w):
    """Output and gradients of sum(out * w) for input and grid (None -> zeros)."""
    xt = lib.tensor(x, requires_grad=True)
    gt = lib.tensor(grid, requires_grad=True)
    out = lib.nn.functional.grid_sample(xt, gt, **kw)
    (out * lib.tensor(w)).sum().backward()
    grads = [np.zeros_like(a) if t.grad is None else t.grad.numpy() for t, a in
             ((xt, x), (gt, grid))]
    return [out.detach().numpy()] + grads


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_values_and_gradients_match_torch(case):
    mode, pad, ac, nd = case
    x, grid = _data(nd)
    kw = {"mode": mode, "padding_mode": pad, "align_corners": ac}
    w = np.random.default_rng(1).standard_normal((2, 3) + grid.shape[1:-1])
    for got, want, what in zip(_grads(eager, x, grid, kw, w), _grads(torch, x, grid, kw, w),
                               ("output", "d input", "d grid")):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10, err_msg=what)


@needs_torch
@pytest.mark.parametrize("pad", PADS)
@pytest.mark.parametrize("ac", (False, True))
def test_gradients_on_pixel_centres_and_borders_match_torch(pad, ac):
    """Grid points exactly on pixel centres (bilinear's fraction 0) and on the borders (where
    ATen's clip has gradient 0), from an identity affine grid and -1/0/1 entries."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 4, 5))
    ident = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    base = torch.nn.functional.affine_grid(torch.tensor(ident), (1, 2, 4, 5), ac).numpy()
    edges = np.array(list(itertools.product((-1.0, 0.0, 1.0, 1.5), repeat=2)))
    grid = np.concatenate([base.reshape(1, -1, 2), edges[None]], 1)[:, :, None, :]
    w = rng.standard_normal((1, 2) + grid.shape[1:-1])
    for mode in MODES:
        kw = {"mode": mode, "padding_mode": pad, "align_corners": ac}
        for got, want in zip(_grads(eager, x, grid, kw, w), _grads(torch, x, grid, kw, w)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10, err_msg=mode)


@needs_torch
def test_float32_matches_torch():
    x, grid = _data(2, np.float32)
    for mode, pad in itertools.product(MODES, PADS):
        got = F.grid_sample(eager.tensor(x), eager.tensor(grid), mode, pad, False)
        want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode, pad,
                                               False)
        assert got.dtype == eager.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_compiled_is_one_graph_and_matches_eager(case):
    mode, pad, ac, nd = case
    x, grid = _data(nd, np.float32)

    def f(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=ac) * 2

    args = (eager.tensor(x), eager.tensor(grid))
    want = f(*args)
    e = capture.explain(f)(*args)
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)
    got = capture.compile(f)(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_compiled_gradients_match_eager(mode):
    x, grid = _data(2, np.float64, seed=3)

    def f(x, grid):
        return (F.grid_sample(x, grid, mode=mode, padding_mode="reflection") ** 2).sum()

    def grads(fn):
        xt, gt = eager.tensor(x, requires_grad=True), eager.tensor(grid, requires_grad=True)
        fn(xt, gt).backward()
        return [t.grad.numpy() if t.grad is not None else np.zeros_like(a)
                for t, a in ((xt, x), (gt, grid))]

    for got, want in zip(grads(capture.compile(f)), grads(f)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)


@needs_torch
def test_affine_grid_is_graph_vocabulary_with_theta_gradient():
    rng = np.random.default_rng(4)
    th = rng.standard_normal((2, 3, 4))

    def f(theta):
        return F.affine_grid(theta, (2, 1, 3, 4, 5), align_corners=False).sin().sum()

    e = capture.explain(f)(eager.tensor(th))
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)
    t = eager.tensor(th, requires_grad=True)
    capture.compile(f)(t).backward()
    want = torch.tensor(th, requires_grad=True)
    torch.nn.functional.affine_grid(want, (2, 1, 3, 4, 5), align_corners=False).sin().sum() \
        .backward()
    np.testing.assert_allclose(t.grad.numpy(), want.grad.numpy(), rtol=1e-9, atol=1e-10)


def _stn(lib):
    nn = lib.nn

    class STN(nn.Module):
        """The spatial transformer of /work/notes/capture_bar (programs_d.py)."""

        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.ReLU(True),
                                     nn.Flatten(), nn.Linear(4 * 3 * 3, 6))

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3)
            grid = lib.nn.functional.affine_grid(theta, x.size(), align_corners=False)
            return lib.nn.functional.grid_sample(x, grid, align_corners=False)

    lib.manual_seed(0)
    return STN()


def test_spatial_transformer_compiles_whole_with_eager_gradients():
    m = _stn(eager)
    x = eager.tensor(np.random.default_rng(5).standard_normal((2, 1, 8, 8)).astype(np.float32))
    e = capture.explain(m)(x)
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)
    want = m(x)
    want.square().sum().backward()
    want_grads = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    got = capture.compile(m)(x)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    got.square().sum().backward()
    for p, g in zip(m.parameters(), want_grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-5)
    if torch is None:
        return
    t = _stn(torch)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    np.testing.assert_allclose(got.detach().numpy(), t(torch.tensor(x.numpy())).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("bad", [
    {"mode": "linear"}, {"padding_mode": "wrap"}, {"grid": (3, 4, 4, 2)},
    {"grid": (2, 4, 4, 3)}, {"x": (2, 3, 5), "grid": (2, 4, 2)},
    {"mode": "bicubic", "x": (2, 3, 4, 5, 6), "grid": (2, 2, 2, 2, 3)},
    {"x": (2, 3, 0, 6)}, {"gdtype": np.float64}, {"xdtype": np.int64, "gdtype": np.int64},
])
def test_bad_arguments_raise_as_torch(bad):
    bad = dict(bad)
    x_shape, g_shape = bad.pop("x", (2, 3, 5, 6)), bad.pop("grid", (2, 4, 4, 2))
    x = np.zeros(x_shape, bad.pop("xdtype", np.float32))
    g = np.zeros(g_shape, bad.pop("gdtype", np.float32))
    with pytest.raises(Exception) as want, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (torch: align_corners default)
        torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), **bad)
    with pytest.raises(want.type):
        F.grid_sample(eager.tensor(x), eager.tensor(g), **bad)


@needs_torch
@pytest.mark.parametrize("shapes", [((0, 2, 3, 3), (0, 2, 2, 2)), ((1, 0, 3, 3), (1, 2, 2, 2)),
                                    ((1, 2, 3, 3), (1, 0, 2, 2))])
def test_empty_batch_channels_or_points_as_torch(shapes):
    x, grid = np.ones(shapes[0]), np.ones(shapes[1])
    w = np.ones(shapes[0][:2] + shapes[1][1:-1])
    kw = {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False}
    for got, want in zip(_grads(eager, x, grid, kw, w), _grads(torch, x, grid, kw, w)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)

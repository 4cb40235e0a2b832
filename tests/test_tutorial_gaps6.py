"""Regression tests for gaps found by running new tutorial-style PyTorch programs unchanged
under `import eager as torch` (notes/tutorials/progs/p39..p58); each compares with torch."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _run_opt(lib, name, kw, shape):
    """Five steps of optimizer `name` on a parameter of `shape` (0-d included) in `lib`."""
    p = lib.nn.Parameter(lib.tensor(np.full(shape, 1.5, np.float32)))
    opt = getattr(lib.optim, name)([p], **kw)
    for i in range(5):
        loss = (p * (2.0 + i)).sum() ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("name,kw", [
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.001, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.001)),
])
def test_optimizer_step_on_0d_parameter(name, kw, shape):
    """A learnable 0-d scalar (CLIP's logit_scale) steps as in torch (Adam's array path wrote
    with out= into numpy scalars: TypeError)."""
    got = _run_opt(eager, name, kw, shape)
    want = _run_opt(torch, name, kw, shape)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), ()])
def test_where_condition_only_is_nonzero_as_tuple(shape):
    """`torch.where(cond)`: PyTorch's one-argument overload, the index tuple of
    `nonzero(cond, as_tuple=True)` (it raised TypeError: missing 'input')."""
    a = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    got = eager.where(eager.tensor(a) > 0)
    want = torch.where(torch.tensor(a) > 0)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == eager.int64
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    kw = eager.where(condition=eager.tensor(a) > 0)
    assert [k.tolist() for k in kw] == [w.tolist() for w in want]
    x = eager.tensor(a)
    np.testing.assert_array_equal(eager.where(x > 0, x, 0.0).numpy(),
                                  torch.where(torch.tensor(a) > 0, torch.tensor(a), 0.0).numpy())


def _ranges():
    rng = np.random.default_rng(1)
    for i in range(60):
        n = int(rng.integers(2, 90))
        a, b = (float(v) for v in rng.normal(0, 3, 2))
        if i % 3 == 0:
            a, b = float(int(a * 10)), float(int(b * 10))
        yield a, b, n
    yield -1.0, 1.0, 8  # the affine_grid / plotting staples
    yield -3.141592653589793, 3.141592653589793, 2000


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "float16",
                                "bfloat16"])
def test_linspace_bitwise_as_torch(dt):
    """linspace equals torch's CPU kernel bit for bit (fused multiply-add per half; integer
    dtypes truncate the end points; Half rounds every step): a 1-ulp difference flipped
    nearest-neighbour samples of affine grids (p34)."""
    for a, b, n in _ranges():
        got = eager.linspace(a, b, n, dtype=getattr(eager, dt)).float().numpy()
        want = torch.linspace(a, b, n, dtype=getattr(torch, dt)).float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {n})")


@pytest.mark.parametrize("dt", ["float32", "float64", "int64"])
@pytest.mark.parametrize("base", [10.0, 2.0, 0.5, -2.0])
def test_logspace_bitwise_as_torch(dt, base):
    """logspace as ATen's kernel: float64 exponents from the end points in the dtype, C pow."""
    for a, b, n in list(_ranges())[:30]:
        if dt == "int64":
            a, b = abs(a) % 6, abs(b) % 6
        got = eager.logspace(a, b, n, base=base, dtype=getattr(eager, dt)).numpy()
        want = torch.logspace(a, b, n, base=base, dtype=getattr(torch, dt)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"logspace({a}, {b}, {n}, {base})")


@pytest.mark.parametrize("align", [True, False])
def test_affine_grid_base_is_torch_linspace(align):
    """affine_grid's normalised pixel centres are torch's `linspace_from_neg_one` exactly (an
    identity theta gives the base grid itself)."""
    th = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], np.float32)
    got = eager.nn.functional.affine_grid(eager.tensor(th), (1, 1, 7, 13), align_corners=align)
    want = torch.nn.functional.affine_grid(torch.tensor(th), (1, 1, 7, 13),
                                           align_corners=align)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_small_bmm_bitwise_as_torch(dt):
    """Batched products of matrices with K * M * N < 400 equal ATen's small-bmm kernel bit for
    bit, forward and backward (in-order sums without FMA): affine_grid's (N, H*W, 3) @
    (N, 3, 2) product differed in the last bit and moved nearest samples (p34)."""
    rng = np.random.default_rng(0)
    shapes = [((2, 64, 3), (2, 3, 2)), ((5, 4, 7), (5, 7, 3)), ((3, 1, 60), (3, 60, 1)),
              ((2, 3, 4, 5), (2, 3, 5, 4)), ((2, 3, 4, 5), (1, 5, 2)), ((4, 0, 3), (4, 3, 2))]
    for sa, sb in shapes:
        a = rng.normal(size=sa).astype(dt)
        b = rng.normal(size=sb).astype(dt)
        ea, eb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        eo, to = eager.matmul(ea, eb), torch.matmul(ta, tb)
        np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy(), err_msg=str(sa))
        if dt == "float16" or 0 in sa or sa[:-2] != sb[:-2]:
            continue  # (a broadcast operand's gradient is a reduction: its own summation order)
        g = rng.normal(size=tuple(to.shape)).astype(dt)
        eo.backward(eager.tensor(g))
        to.backward(torch.tensor(g))
        np.testing.assert_array_equal(ea.grad.numpy(), ta.grad.numpy(), err_msg=str(sa))
        np.testing.assert_array_equal(eb.grad.numpy(), tb.grad.numpy(), err_msg=str(sa))


def test_version_attributes_as_torch():
    """`torch.__version__` (a str comparable by release numbers) and `torch.version.cuda` exist
    (`print(torch.__version__)` ended tutorial programs with AttributeError)."""
    v = eager.__version__
    assert isinstance(v, str) and isinstance(torch.__version__, str)
    assert v.split("+")[0].count(".") == 2
    assert v >= "2.0" and v >= (2, 1) and v < "99" and not v < (1, 13)
    assert (v >= "2.0") == (torch.__version__ >= "2.0")
    assert v == (2, 13, 0) and v != "1.0"
    assert eager.version.__version__ == v
    assert eager.version.cuda is None and eager.version.debug is False

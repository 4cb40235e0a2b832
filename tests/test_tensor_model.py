"""The eager tensor model: storage and views, version counters, dtypes and promotion, limits,
printing, creation and random numbers, `out=` and in-place semantics, devices, complex ops.

References: PyTorch when installed (the same calls side by side), else numpy; never values
recorded from wick itself.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import eager
from ir import dtypes as D

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")


def _cuda_ok() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001  (no cupy, no driver: no GPU)
        return False


needs_cuda = pytest.mark.skipif(not _cuda_ok(), reason="cupy cannot see a CUDA device")
NAMES = [d.name for d in D.ALL]


def tdt(d):
    return getattr(torch, d.name)


def both(data, dtype=None, **kw):
    """The same tensor in wick and in PyTorch."""
    e = eager.tensor(data, dtype=dtype and getattr(eager, dtype), **kw)
    t = torch.tensor(data, dtype=dtype and getattr(torch, dtype), **kw)
    return e, t


# ---------------------------------------------------------------- storage and views


def test_views_share_memory_and_version_counter():
    x = eager.arange(12.0).reshape(3, 4)
    views = [x.view(4, 3), x.transpose(0, 1), x.unsqueeze(0), x.unsqueeze(0).expand(2, 3, 4),
             x.as_strided((2, 2), (4, 1), 1), x.t(), x.detach()]
    for v in views:
        assert np.shares_memory(v.numpy(), x.numpy())
        assert v._base is x or v._base is x._base or v is views[-1]
    before = x._version
    views[0].add_(1.0)  # write through a view changes the base and bumps the shared counter
    assert x[0, 0].item() == 1.0 if hasattr(eager.Tensor, "__getitem__") else \
        x.numpy()[0, 0] == 1.0
    assert x._version == before + 1
    assert all(v._version == x._version for v in views)
    x.mul_(2.0)
    assert views[1]._version == before + 2
    np.testing.assert_array_equal(views[1].numpy(), x.numpy().T)


def test_every_inplace_op_bumps_the_shared_counter():
    x = eager.ones(3)
    v = x.view(3)
    ops = [lambda: x.add_(1), lambda: x.sub_(1), lambda: x.mul_(2), lambda: x.div_(2),
           lambda: x.neg_(), lambda: x.exp_(), lambda: x.zero_(), lambda: x.fill_(3.0),
           lambda: x.copy_(eager.zeros(3)), lambda: x.uniform_(), lambda: x.normal_()]
    for i, op in enumerate(ops, 1):
        op()
        assert x._version == i and v._version == i, i
    y = eager.ones(2)
    y += 1
    y *= 3
    assert y._version == 2 and y.tolist() == [6.0, 6.0]


def test_clone_and_contiguous_copy():
    x = eager.arange(6.0).reshape(2, 3)
    c = x.clone()
    assert not np.shares_memory(c.numpy(), x.numpy()) and c._version == 0
    t = x.t()
    assert not t.is_contiguous()
    tc = t.contiguous()
    assert tc.is_contiguous() and tc.stride() == (2, 1)
    np.testing.assert_array_equal(tc.numpy(), x.numpy().T)
    assert x.contiguous() is x


def test_storage_and_data_ptr():
    x = eager.arange(12, dtype=eager.float32)
    v = x.as_strided((3,), (2,), 4)
    assert v.storage_offset() == 4 and v.data_ptr() == x.data_ptr() + 16
    assert x.untyped_storage().size() == 48 == v.untyped_storage().nbytes()
    assert v.untyped_storage().data_ptr() == x.data_ptr()
    assert v.tolist() == [4.0, 6.0, 8.0]
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
        x.as_strided((3,), (5,), 4)
    with pytest.raises(RuntimeError, match="Negative strides"):
        x.as_strided((3,), (-1,))


@needs_torch
def test_strides_offsets_contiguity_match_torch():
    base = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        lambda t: t, lambda t: t.transpose(0, 2), lambda t: t.unsqueeze(1),
        lambda t: t.unsqueeze(-1).expand(2, 3, 4, 5), lambda t: t.view(6, 4),
        lambda t: t.transpose(0, 1).reshape(3, 8), lambda t: t.as_strided((3, 3), (4, 1), 2),
        lambda t: t.permute_all_reversed() if hasattr(t, "permute_all_reversed")
        else t.permute(2, 1, 0),
        lambda t: t.transpose(1, 2).contiguous(), lambda t: t.reshape(-1).unsqueeze(0),
    ]
    for f in cases:
        e, t = f(eager.tensor(base)), f(torch.tensor(base))
        assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
        assert e.is_contiguous() == t.is_contiguous() and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    z = torch.randn(3, 2, dtype=torch.complex64)
    ez = eager.tensor(z.numpy())
    for f in (lambda t: t.real, lambda t: t.imag, lambda t: eager.view_as_real(t)
              if isinstance(t, eager.Tensor) else torch.view_as_real(t)):
        e, t = f(ez), f(z)
        assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
        np.testing.assert_array_equal(e.numpy(), t.numpy())


# ---------------------------------------------------------------- dtypes and promotion


def test_dtype_names_and_aliases():
    assert eager.half is eager.float16 and eager.cfloat is eager.complex64
    assert eager.double is eager.float64 and eager.long is eager.int64
    assert eager.cdouble is eager.complex128 and eager.short is eager.int16
    assert eager.float16.is_floating_point and eager.bfloat16.is_floating_point
    assert eager.complex64.is_complex and not eager.complex64.is_floating_point
    assert eager.bfloat16.itemsize == 2 and eager.complex128.itemsize == 16
    assert eager.tensor([1, 2], dtype=eager.uint8).dtype is eager.uint8
    assert eager.ones(2, dtype=eager.bfloat16).is_floating_point()
    assert eager.tensor([1j]).is_complex() and eager.tensor([1j]).dtype is eager.complex64


@needs_torch
@pytest.mark.parametrize("a", NAMES)
def test_promote_types_matches_torch(a):
    for b in NAMES:
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert D.promote_types(D.from_name(a), D.from_name(b)).name == \
            str(want).removeprefix("torch."), (a, b)


@needs_torch
def test_result_type_matches_torch_exhaustively():
    """Every (dtype, 0-dim or n-dim) tensor against every tensor and Python scalar kind."""
    tensors = list(itertools.product(D.ALL, (0, 1)))
    scalars = [True, 3, 2.5, 1 + 2j]
    for (da, na), other in itertools.product(tensors, tensors + scalars):
        ta = torch.zeros((2,) * na, dtype=tdt(da))
        if isinstance(other, tuple):
            tb = torch.zeros((2,) * other[1], dtype=tdt(other[0]))
        else:
            tb = other
        want = str(torch.result_type(ta, tb)).removeprefix("torch.")
        if want == "complex32":
            with pytest.raises(TypeError, match="complex32"):
                D.result_type((da, na), other)
            continue
        assert D.result_type((da, na), other).name == want, ((da, na), other)


@needs_torch
def test_default_dtype_changes_scalar_results():
    try:
        eager.set_default_dtype(eager.float64)
        assert eager.tensor([1.5]).dtype is eager.float64
        assert (eager.tensor([1, 2]) / 2).dtype is eager.float64
        assert eager.tensor([1j]).dtype is eager.complex128
    finally:
        eager.set_default_dtype(eager.float32)
    with pytest.raises(TypeError):
        eager.set_default_dtype(eager.int64)


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_finfo_matches_torch(name):
    e, t = eager.finfo(getattr(eager, name)), torch.finfo(getattr(torch, name))
    for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, f) == getattr(t, f), f


@needs_torch
@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    e, t = eager.iinfo(getattr(eager, name)), torch.iinfo(getattr(torch, name))
    assert (e.bits, e.min, e.max, e.dtype) == (t.bits, t.min, t.max, t.dtype)
    with pytest.raises(TypeError):
        eager.iinfo(eager.float32)
    with pytest.raises(TypeError):
        eager.finfo(eager.int32)


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_arithmetic_computes_in_float32(name):
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    y = np.random.default_rng(1).uniform(0.5, 2, 64).astype(np.float32)
    tx, ty = (torch.tensor(v).to(getattr(torch, name)) for v in (x, y))
    ex, ey = (eager.tensor(v).to(getattr(eager, name)) for v in (x, y))
    for fe, ft in [(lambda a, b: a + b, None), (lambda a, b: a * b, None),
                   (lambda a, b: a / b, None), (lambda a, b: a.exp(), None),
                   (lambda a, b: a * 1.1 + b, None), (lambda a, b: a.sum(), None)]:
        e, t = fe(ex, ey), fe(tx, ty)
        assert e.dtype.name == str(t.dtype).removeprefix("torch.")
        got = e.float().numpy()
        want = t.float().numpy()
        if e.ndim:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-2)


@needs_torch
def test_narrow_integer_arithmetic_wraps_like_torch():
    e, t = both([1, 200, 255], "uint8")
    assert (e + 300).tolist() == (t + 300).tolist()
    assert (e - 2).tolist() == (t - 2).tolist()
    e8, t8 = both([-100, 100, 7], "int8")
    assert (e + e8).dtype.name == str((t + t8).dtype).removeprefix("torch.")
    assert (e8 * 2).tolist() == (t8 * 2).tolist()


# ---------------------------------------------------------------- printing


PRINT_CASES = [
    ([[0.1234, -1.0]], None), ([1.0, 2.0], None), ([1, 2, 3], None), ([True, False], None),
    ([True, True], None), ([[1.5, 2.25], [3.0, -4.125]], "float64"), (3.5, None), (7, None),
    ([1e-5, 1.0], None), ([1e10, 1.0], None), ([1.0, 1000.0, 1e6], None),
    ([float("nan"), float("inf"), -float("inf"), 1.5], None), ([0.0, 0.0], None),
    ([1.0, 2.0, 3.0], "float16"), ([1.25, -2.5], "bfloat16"), ([1, 2], "uint8"),
    ([1, -2], "int32"), ([1 + 2j, -3.5 - 1j], None), ([1j, 2.0], "complex128"),
    ([], None), ([[]], None), ([[], []], "int64"),
    (list(np.linspace(-3, 3, 30)), None), ([[1e-8, 2.0], [3.0, 4.0]], "float64"),
    ([123456789.0, 0.5], None), ([-0.0, 0.5], None),
]


@needs_torch
@pytest.mark.parametrize("data,dtype", PRINT_CASES)
def test_repr_matches_torch(data, dtype):
    e, t = both(data, dtype)
    assert repr(e) == repr(t).replace("torch.", "eager.")


@needs_torch
def test_repr_summarised_and_autograd_suffixes_match_torch():
    rng = np.random.default_rng(0)
    arrays = [np.arange(2000, dtype=np.float32), rng.standard_normal((100, 50)),
              np.arange(24 * 50).reshape(2, 12, 50), rng.random((4, 1100)) < 0.5,
              (rng.standard_normal(1500) * 1e6).astype(np.float32)]
    for a in arrays:
        assert repr(eager.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "eager.")
    e, t = both([0.5, 1.5], requires_grad=True)
    assert repr(e) == repr(t).replace("torch.", "eager.")
    assert repr(e * 2) == repr(t * 2).replace("torch.", "eager.")
    assert repr((e * 2).sum()) == repr((t * 2).sum()).replace("torch.", "eager.")


@needs_torch
def test_set_printoptions_matches_torch():
    data = [[0.123456789, 12.5], [1e-3, 3.0]]
    options = [{"precision": 2}, {"sci_mode": True}, {"sci_mode": False, "precision": 6},
               {"threshold": 3, "edgeitems": 1}, {"linewidth": 20}, {"profile": "short"}]
    try:
        for opts in options:
            eager.set_printoptions(**opts)
            torch.set_printoptions(**opts)
            for d in (data, list(range(10)), [1e-6, 1.0]):
                e, t = both(d)
                assert repr(e) == repr(t).replace("torch.", "eager."), opts
    finally:
        eager.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---------------------------------------------------------------- creation


@needs_torch
def test_creation_functions_match_torch():
    cases = [
        lambda m: m.zeros(2, 3), lambda m: m.ones((2, 3), dtype=m.int32),
        lambda m: m.full((2,), 7), lambda m: m.full((2,), True), lambda m: m.full((2,), 1.5),
        lambda m: m.full((2,), 1 + 1j), lambda m: m.empty(3, 0), lambda m: m.eye(3),
        lambda m: m.eye(2, 4, dtype=m.int64), lambda m: m.arange(5), lambda m: m.arange(1, 10, 3),
        lambda m: m.arange(0, 1, 0.1), lambda m: m.arange(-1.0, 1.0, 0.25, dtype=m.float64),
        lambda m: m.arange(10, 0, -3), lambda m: m.linspace(0, 1, 7),
        lambda m: m.linspace(-5, 5, 11, dtype=m.float64), lambda m: m.linspace(0, 10, 5,
                                                                              dtype=m.int64),
        lambda m: m.logspace(0, 3, 4), lambda m: m.logspace(0, 1, 5, base=2.0),
        lambda m: m.zeros_like(m.ones(2, dtype=m.int16)),
        lambda m: m.full_like(m.ones(2, 2), 3.0), lambda m: m.ones_like(m.ones(3), dtype=m.bool),
        lambda m: m.tensor([[1, 2], [3, 4]], dtype=m.float16), lambda m: m.tensor(2.5),
        lambda m: m.as_tensor([1, 2, 3]), lambda m: m.tensor([m.tensor(1.0), m.tensor(2.0)]),
    ]
    for f in cases:
        e, t = f(eager), f(torch)
        assert e.dtype.name == str(t.dtype).removeprefix("torch.")
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.to(eager.complex128).numpy(),
                                   t.to(torch.complex128).numpy(), rtol=1e-6)


def test_from_numpy_is_zero_copy_and_as_tensor_reuses():
    a = np.arange(6.0)
    t = eager.from_numpy(a)
    a[0] = 42.0
    assert t.tolist()[0] == 42.0 and t.dtype is eager.float64
    assert eager.as_tensor(t) is t and eager.as_tensor(a).data_ptr() == t.data_ptr()
    with pytest.raises(TypeError):
        eager.from_numpy([1, 2])
    with pytest.raises(TypeError, match="not supported"):
        eager.from_numpy(np.zeros(2, np.uint32))


def test_creation_errors():
    with pytest.raises(RuntimeError, match="negative dimension"):
        eager.zeros(2, -1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        eager.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        eager.rand(2, dtype=eager.int64)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        eager.randint(5, 5, (2,))


def test_random_statistics_with_seeded_generator():
    g = eager.Generator().manual_seed(0)
    n = 200_000
    u = eager.rand(n, generator=g).numpy()
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = eager.randn(n, dtype=eager.float64, generator=g).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    r = eager.randint(3, 8, (n,), generator=g).numpy()
    assert r.dtype == np.int64 and set(np.unique(r)) == {3, 4, 5, 6, 7}
    p = eager.randperm(50, generator=g)
    assert sorted(p.tolist()) == list(range(50)) and p.dtype is eager.int64
    m = eager.normal(eager.full((n,), 3.0), eager.full((n,), 2.0), generator=g).numpy()
    assert abs(m.mean() - 3) < 0.03 and abs(m.std() - 2) < 0.03
    assert eager.normal(1.0, 2.0, (3, 4)).shape == (3, 4)
    b = eager.bernoulli(eager.full((n,), 0.3), generator=g).numpy()
    assert abs(b.mean() - 0.3) < 0.01 and set(np.unique(b)) == {0.0, 1.0}
    w = eager.tensor([1.0, 0.0, 3.0])
    s = eager.multinomial(w, n, replacement=True, generator=g).numpy()
    assert abs((s == 2).mean() - 0.75) < 0.01 and not (s == 1).any()
    s2 = eager.multinomial(eager.tensor([[1.0, 1, 1, 1]] * 2), 4, generator=g)
    assert s2.shape == (2, 4) and all(sorted(r) == [0, 1, 2, 3] for r in s2.tolist())
    assert eager.randn_like(eager.ones(2, 3, dtype=eager.float64)).dtype is eager.float64
    assert eager.rand_like(eager.ones(4)).shape == (4,)


def test_random_reproducibility():
    eager.manual_seed(123)
    a = eager.randn(5).tolist()
    eager.manual_seed(123)
    assert eager.randn(5).tolist() == a
    g1, g2 = eager.Generator().manual_seed(7), eager.Generator().manual_seed(7)
    assert eager.rand(4, generator=g1).tolist() == eager.rand(4, generator=g2).tolist()
    assert g1.initial_seed() == 7
    state = g1.get_state()
    assert state.dtype is eager.uint8
    x = eager.rand(3, generator=g1).tolist()
    g1.set_state(state)
    assert eager.rand(3, generator=g1).tolist() == x
    s = eager.Generator().seed()
    assert isinstance(s, int)


# ---------------------------------------------------------------- out= and in-place


@needs_torch
def test_out_semantics_match_torch():
    for mod in (eager, torch):
        a, b = mod.tensor([1.0, 2.0]), mod.tensor([3.0, 4.0])
        out = mod.empty(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = mod.add(a, b, out=out)  # empty out: resized silently
        assert r is out and out.tolist() == [4.0, 6.0]
        out3 = mod.zeros(3)
        with pytest.warns(UserWarning, match="was resized since it had shape \\[3\\]"):
            mod.mul(a, b, out=out3)
        assert out3.tolist() == [3.0, 8.0]
        iout = mod.zeros(2, dtype=mod.int64)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Long"):
            mod.add(a, b, out=iout)
        assert iout.tolist() == [0, 0]
        dout = mod.zeros(2, dtype=mod.float64)
        mod.add(a, b, out=dout)  # float into double is fine
        assert dout.tolist() == [4.0, 6.0]
        assert mod.sum(mod.ones(2, 3), 1, out=mod.empty(2)).tolist() == [3.0, 3.0]
        g = mod.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            mod.mul(g, 2, out=mod.empty(2))


@needs_torch
def test_inplace_failures_leave_tensor_unchanged():
    for mod in (eager, torch):
        i = mod.tensor([1, 2])
        v = i._version
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            i.add_(1.5)
        assert i.tolist() == [1, 2] and i._version == v
        with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast"):
            mod.ones(2).mul_(1j)
        x = mod.ones(3)
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                               r"broadcast shape \[2, 3\]"):
            x.add_(mod.ones(2, 3))
        assert x.tolist() == [1.0, 1.0, 1.0]
        b = mod.tensor([True, False])
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                               "output type Bool"):
            b.add_(1)
        f = mod.ones(2)
        f.add_(mod.tensor([1, 2]))  # int into float: allowed
        assert f.tolist() == [2.0, 3.0]
        h = mod.ones(2, dtype=mod.float16)
        h.mul_(mod.tensor([3.0, 0.5], dtype=mod.float64))  # computed wider, cast back
        assert h.dtype == mod.float16 and h.tolist() == [3.0, 0.5]


# ---------------------------------------------------------------- devices


def test_device_objects():
    assert str(eager.device("cuda:1")) == "cuda:1" and eager.device("cuda").index is None
    assert eager.device("cpu") == "cpu" and eager.device("cuda", 0) == eager.device("cuda:0")
    assert repr(eager.device("cuda:0")) == "device(type='cuda', index=0)"
    assert eager.ones(2).device == eager.device("cpu") and eager.ones(2).is_cpu
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda.* device type"):
        eager.device("tpu")
    x = eager.ones(2)
    assert x.to("cpu") is x and x.cpu() is x and x.to(eager.float64).dtype is eager.float64
    if torch is not None:
        assert repr(eager.device("cuda:0")) == repr(torch.device("cuda:0"))
        assert repr(eager.device("cpu")) == repr(torch.device("cpu"))


@pytest.mark.skipif(_cuda_ok(), reason="checks the error raised without a GPU")
def test_cuda_without_gpu_raises():
    assert not eager.cuda.is_available()
    with pytest.raises(RuntimeError):
        eager.ones(2).cuda()
    with pytest.raises(RuntimeError):
        eager.zeros(2, device="cuda")


def test_numpy_refuses_non_cpu_and_grad():
    x = eager.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()


@needs_cuda
def test_cuda_round_trip_and_mixed_device_error():
    x = eager.arange(6.0).reshape(2, 3)
    g = x.cuda()
    assert g.device == eager.device("cuda:0") and g.is_cuda
    assert "device='cuda:0'" in repr(g)
    y = (g * 2 + 1).exp().sum(1)
    np.testing.assert_allclose(y.cpu().numpy(), np.exp(x.numpy() * 2 + 1).sum(1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                                           "found at least two devices, cuda:0 and cpu!"):
        g + x
    assert (g + eager.tensor(1.0)).device == g.device  # cpu scalars join a cuda op
    w = eager.ones(3, device="cuda", requires_grad=True)
    (w.cpu() * 2).sum().backward()
    assert w.grad.device == w.device and w.grad.cpu().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="cuda:0 device type tensor to numpy"):
        g.numpy()


# ---------------------------------------------------------------- complex ops


@needs_torch
def test_complex_ops_match_torch():
    rng = np.random.default_rng(0)
    z = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    ez, tz = eager.tensor(z), torch.tensor(z)
    pairs = [
        (ez.real, tz.real), (ez.imag, tz.imag), (eager.view_as_real(ez), torch.view_as_real(tz)),
        (ez.conj(), tz.conj().resolve_conj()), (ez.angle(), tz.angle()), (abs(ez), abs(tz)),
        (eager.view_as_complex(eager.view_as_real(ez)), torch.view_as_complex(
            torch.view_as_real(tz))),
        (eager.angle(eager.tensor([-1.0, 0.0, 2.0])), torch.angle(torch.tensor([-1.0, 0.0, 2.0]))),
        (eager.polar(eager.tensor([1.0, 2.0]), eager.tensor([0.5, -1.0])),
         torch.polar(torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))),
        (eager.complex(eager.tensor([1.0]), eager.tensor([2.0])),
         torch.complex(torch.tensor([1.0]), torch.tensor([2.0]))),
        (ez * 2 + 1j, tz * 2 + 1j), (ez.exp() if False else ez * ez, tz * tz),
    ]
    for e, t in pairs:
        assert e.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(e.numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)
    re = ez.real
    re.mul_(0.0)  # the real part is a view: writing it changes the complex tensor
    assert np.all(ez.numpy().real == 0) and ez._version == 1
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        _ = eager.ones(2).imag
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        eager.view_as_complex(eager.ones(3))


@needs_torch
def test_complex_backward_rules_match_torch():
    rng = np.random.default_rng(1)
    z = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    w = rng.standard_normal(3)
    for f in (lambda m, x: m.real(x) if m is torch else x.real,
              lambda m, x: m.imag(x) if m is torch else x.imag,
              lambda m, x: x.angle(),
              lambda m, x: m.view_as_real(x)[:, 1] if m is torch else
              eager.view_as_real(x).transpose(0, 1)[1] if hasattr(eager.Tensor, "__getitem__")
              else m.imag(x)):
        ez = eager.tensor(z, requires_grad=True)
        tz = torch.tensor(z, requires_grad=True)
        (f(eager, ez) * eager.tensor(w)).sum().backward()
        (f(torch, tz) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(ez.grad.numpy(), tz.grad.numpy(), rtol=1e-10)
    a, t = rng.uniform(0.5, 2, 3), rng.standard_normal(3)
    grads = []
    for m in (eager, torch):
        ea, et = m.tensor(a, requires_grad=True), m.tensor(t, requires_grad=True)
        out = m.polar(ea, et)  # real/imag are ours: g reaches polar as w1 + 1j * w2
        re, im = (m.real(out), m.imag(out)) if m is torch else (out.real, out.imag)
        (re * m.tensor(z.real) + im * m.tensor(z.imag)).sum().backward()
        c = m.complex(ea, et)
        (c.imag * 3.0).sum().backward()
        grads.append((ea.grad.numpy(), et.grad.numpy()))
    for g_e, g_t in zip(grads[0], grads[1]):
        np.testing.assert_allclose(g_e, g_t, rtol=1e-10)


def test_fast_path_promotion_depends_on_zero_dim_operands():
    f = eager.tensor([1.0, 2.0])
    assert (f + eager.tensor(1.0, dtype=eager.float64)).dtype is eager.float32
    assert (f + eager.tensor([1.0], dtype=eager.float64)).dtype is eager.float64
    i = eager.tensor([1, 2])
    assert (i / 2).dtype is eager.float32
    try:  # the cached dtype rules follow the default dtype
        eager.set_default_dtype(eager.float64)
        assert (i / 2).dtype is eager.float64 and (i + 0.5).dtype is eager.float64
    finally:
        eager.set_default_dtype(eager.float32)
    assert (i / 2).dtype is eager.float32
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(4,\)"):
        eager.ones(2, 3) + eager.ones(4)

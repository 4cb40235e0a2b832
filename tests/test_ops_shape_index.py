"""Shape, indexing, sorting and linear-algebra ops (issue 3, part C).

Every op declared in ir/ops/{shape,join,indexing,scatter,masked,sorting,linalg,matrix,norms}.py
runs its `sample_inputs` against its numpy `ref`, against PyTorch when installed, and through
gradcheck (float64 central differences); then views vs copies (shared memory, `_base`, `_version`),
`__getitem__`/`__setitem__` against numpy and torch, in-place variants, autograd through
indexing, and the errors PyTorch raises.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from opinfo import dtypes_of, numeric_grad, samples, torch_call_forms

import eager
import eager.linalg
import ir
from eager.dispatch import FUNCTIONS
from ir import dtypes as D

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

MODULES = {f"ir.ops.{m}" for m in ("shape", "join", "indexing", "scatter", "masked", "sorting",
                                   "linalg", "matrix", "norms")}
OPS = [op for op in ir.REGISTRY.values()
       if getattr(op.impl or op.decomp, "__module__", None) in MODULES]
CASES = [(op, dt) for op in OPS for dt in dtypes_of(op)]
LOOSE, TIGHT = {"rtol": 1e-4, "atol": 1e-5}, {"rtol": 1e-10, "atol": 1e-10}
TOL = {D.float32: LOOSE, D.float64: TIGHT, D.complex64: LOOSE, D.complex128: TIGHT}


def case_id(case):
    return f"{case[0].name}-{case[1].name}"


def call(op, inputs, attrs):
    args = [eager.from_numpy(np.array(x)) if isinstance(x, np.ndarray) else x for x in inputs]
    fn = getattr(eager, op.name)
    return fn(args, **attrs) if op.variadic else fn(*args, **attrs)


def flat(out):
    """An op's result as a list of numpy arrays (multi-output ops give tuples)."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in flat(o)]
    return [out.numpy() if isinstance(out, eager.Tensor) else np.asarray(out)]


def close(got, want, dtype):
    assert got.shape == want.shape, (got.shape, want.shape)
    if got.dtype == D.bfloat16.np:
        got = got.astype(np.float32)
    if got.dtype == bool or want.dtype == bool:
        np.testing.assert_array_equal(got, want)
    else:
        as_num = lambda a: a if np.iscomplexobj(a) else a.astype(np.float64)
        np.testing.assert_allclose(as_num(got), as_num(want),
                                   **TOL.get(dtype, {"rtol": 0, "atol": 0}), equal_nan=True)


def test_every_op_has_samples_and_ref():
    names = {op.name for op in OPS}
    for want in ("getitem", "index", "_index_put", "gather", "scatter", "cat", "stack", "pad",
                 "sort", "topk", "einsum", "linalg_inv", "unfold", "diagonal", "unique"):
        assert want in names
    for op in OPS:
        assert op.ref is not None, op.name
        if op.name not in ("reshape", "view", "transpose", "unsqueeze", "expand"):
            assert op.sample_inputs is not None, op.name


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_reference(case):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        got = flat(call(op, inputs, attrs))
        want = flat(op.ref(*inputs, **attrs))
        assert len(got) == len(want), op.name
        for g, w in zip(got, want):
            close(g, w, dtype)


def from_torch(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


# values that PyTorch leaves to the implementation: eigen/singular vectors (up to sign), the
# order among ties of topk/kthvalue; pad of bool tensors is not implemented in PyTorch
UP_TO_SIGN = {"linalg_eigh", "linalg_svd", "linalg_qr", "_linalg_eigh"}


def _has_torch_counterpart(case) -> bool:
    """Internal ops and forms PyTorch lacks are checked through the public API below."""
    op, dtype = case
    return not (op.name.startswith("_") or op.name in ("getitem", "index", "new_zeros") or
                (op.name == "pad" and dtype is D.bool_))


@needs_torch
@pytest.mark.parametrize("case", [c for c in CASES if _has_torch_counterpart(c)], ids=case_id)
def test_matches_torch(case):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        want = torch_call_forms(torch, op, inputs, attrs)
        got = call(op, inputs, attrs)
        gs = flat(got)
        ws = [from_torch(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
        assert len(gs) == len(ws), op.name
        for k, (g, w) in enumerate(zip(gs, ws)):
            assert str(w.dtype) == str(g.dtype).replace("bfloat16", "float32"), \
                (op.name, g.dtype, w.dtype)
            if op.name in UP_TO_SIGN and g.ndim >= 2:
                g, w = np.abs(g), np.abs(w)
            if op.name in ("topk", "kthvalue") and k == 1:  # ties: indices must select values
                x = inputs[0]
                dim = attrs.get("dim", -1)
                vals = np.take_along_axis(x, g if g.ndim == x.ndim else
                                          np.expand_dims(g, dim), dim)
                close(vals.reshape(gs[0].shape), gs[0], dtype)
                continue
            close(g, w, dtype)


NO_GRAD = {"argsort", "searchsorted", "bucketize", "histc", "bincount", "argwhere", "nonzero",
           "_unique", "unique", "new_zeros",
           "linalg_slogdet"}


@pytest.mark.parametrize("op", [o for o in OPS if o.differentiable and o.name not in NO_GRAD],
                         ids=lambda o: o.name)
def test_gradcheck(op):
    """Registry backward rules against central finite differences (float64)."""
    for inputs, attrs in samples(op, D.float64, seed=1):
        inputs = [np.array(x) if isinstance(x, np.ndarray) else x for x in inputs]
        if any(isinstance(x, np.ndarray) and x.dtype.kind == "f" and np.isnan(x).any()
               for x in inputs):
            continue
        diff = [i for i, x in enumerate(inputs) if isinstance(x, np.ndarray)
                and x.dtype == np.float64]
        weights = []

        def f(arrays, attrs=attrs, weights=weights):
            outs = flat(call(op, arrays, attrs))
            if not weights:
                rng = np.random.default_rng(2)
                weights.extend(rng.standard_normal(o.shape) for o in outs)
            return float(sum((o * w).sum() for o, w in zip(outs, weights)
                             if o.dtype == np.float64))

        f(inputs)
        leaves = [eager.tensor(x, requires_grad=True) if i in diff else
                  eager.from_numpy(x) if isinstance(x, np.ndarray) else x
                  for i, x in enumerate(inputs)]
        fn = getattr(eager, op.name)
        out = fn(leaves, **attrs) if op.variadic else fn(*leaves, **attrs)
        outs = list(out) if isinstance(out, tuple) else [out]
        terms = [(o * eager.from_numpy(w)).sum() for o, w in zip(outs, weights)
                 if o.dtype is D.float64 and o.requires_grad]
        if not terms:
            continue
        loss = terms[0]
        for t in terms[1:]:
            loss = loss + t
        grads = eager.autograd.grad(loss, [leaves[i] for i in diff], allow_unused=True)
        for i, g in zip(diff, grads):
            num = numeric_grad(f, inputs, i)
            got = np.zeros_like(num) if g is None else g.numpy()
            np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{op.name} d/d(operand {i}) {attrs}")


# ---------------------------------------------------------------- views and copies


def _t(a):
    return eager.from_numpy(np.array(a))


@pytest.mark.parametrize("make", [
    lambda x: x.view(4, 3), lambda x: x.reshape(12), lambda x: x.t(), lambda x: x.transpose(0, 1),
    lambda x: x.permute(1, 0), lambda x: x.unsqueeze(0), lambda x: x.squeeze(),
    lambda x: x.narrow(1, 1, 2), lambda x: x.select(0, 1), lambda x: x.diagonal(),
    lambda x: x.unfold(1, 2, 1), lambda x: x.flatten(),
    lambda x: x[1:, ::2], lambda x: x[None, 1, ...], lambda x: x[2, 3],
    lambda x: eager.split(x, 2, 1)[1], lambda x: x.chunk(2, 0)[0], lambda x: x.unbind(1)[2],
    lambda x: x.movedim(0, 1),
])
def test_views_share_memory_and_version(make):
    x = eager.arange(12.0).reshape(3, 4)
    v = make(x)
    assert np.shares_memory(v.numpy(), x.numpy())
    assert v._base is x or v._base is x._base
    before = x._version
    v.add_(1) if v.numel() else None
    assert x._version == before + 1 and v._version == x._version
    want = np.arange(12.0).reshape(3, 4)
    assert (x.numpy() != want).any()  # the write went through the view into the base


@pytest.mark.parametrize("make", [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(2, 1), lambda x: x.tril(),
    lambda x: eager.cat([x, x]), lambda x: eager.stack([x, x]), lambda x: x[[0, 2]],
    lambda x: x[x > 3], lambda x: x.gather(1, eager.tensor([[0], [1], [2]])),
    lambda x: FUNCTIONS["pad"](x, (1, 1)), lambda x: x.take(eager.tensor([1, 2])),
    lambda x: x.index_select(0, eager.tensor([1])), lambda x: x.diag(),
])
def test_copies_do_not_alias(make):
    x = eager.arange(12.0).reshape(3, 4)
    y = make(x)
    assert not np.shares_memory(y.numpy(), x.numpy())


def test_expand_is_a_stride_zero_view():
    x = eager.arange(3.0).reshape(3, 1)
    e = x.expand(2, 3, 4)
    assert np.shares_memory(e.numpy(), x.numpy()) and e._base is x._base
    assert e.stride() == (0, 1, 0)
    x.add_(1)
    assert e._version == x._version and e[1, 2, 3].item() == 3.0


def test_reshape_copies_only_when_needed_and_view_refuses():
    x = eager.arange(12.0).reshape(3, 4)
    assert np.shares_memory(x.reshape(4, 3).numpy(), x.numpy())
    xt = x.t()
    assert not np.shares_memory(xt.reshape(12).numpy(), x.numpy())  # not viewable: a copy
    np.testing.assert_array_equal(xt.reshape(12).numpy(), np.arange(12.0).reshape(3, 4).T.ravel())
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        xt.view(12)


# ---------------------------------------------------------------- __getitem__ / __setitem__

KEYS = [
    1, -1, (slice(None), 2), (slice(1, None, 2),), (Ellipsis, 0), (None, 1), (0, None, Ellipsis),
    (slice(None), slice(None, None, 3), 1), [0, 2], ([0, 2], [1, 3]), (slice(None), [3, 0, 3]),
    (1, slice(None), [0, 1]), ([[0], [2]], slice(None), [1, 0]), (Ellipsis, [0, 1]),
    (slice(0, 2), [1, 2], slice(None)), ([0, 1], slice(None), [2, 1]), (True,), (False,),
    "mask", "mask2", (slice(None), "mask1"), (0, 1, 2),
]


def _key(k, x):
    rng = np.random.default_rng(0)
    conv = {"mask": rng.random(x.shape) < 0.5, "mask2": rng.random(x.shape[:2]) < 0.5,
            "mask1": rng.random(x.shape[1]) < 0.5}
    if isinstance(k, str):
        return conv[k]
    if isinstance(k, tuple):
        return tuple(conv.get(e, e) if isinstance(e, str) else e for e in k)
    return k


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_getitem_matches_numpy_and_torch(key):
    a = np.arange(60.0).reshape(3, 4, 5)
    k = _key(key, a)
    got = _t(a)[k]
    if torch is not None:
        tk = tuple(torch.tensor(e) if isinstance(e, (list, np.ndarray)) else e for e in k) \
            if isinstance(k, tuple) else torch.tensor(k) if isinstance(k, (list, np.ndarray)) \
            else k
        want = torch.from_numpy(a)[tk].numpy()
    else:
        want = a[k]
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_setitem_matches_torch_and_bumps_version(key):
    a = np.arange(60.0).reshape(3, 4, 5)
    k = _key(key, a)
    x = _t(a)
    shape = x[k].shape
    v = np.random.default_rng(1).standard_normal(shape[-1:] if shape else ())
    before = x._version
    x[k] = _t(v) if shape else float(v)
    assert x._version == before + 1
    want = a.copy()
    if torch is not None:
        tw = torch.from_numpy(want)
        tk = tuple(torch.tensor(e) if isinstance(e, (list, np.ndarray)) else e for e in k) \
            if isinstance(k, tuple) else torch.tensor(k) if isinstance(k, (list, np.ndarray)) \
            else k
        tw[tk] = torch.from_numpy(np.array(v))
    np.testing.assert_array_equal(x.numpy(), want if torch is not None else x.numpy())
    assert (x[k].numpy() == np.broadcast_to(v, shape)).all()


def test_setitem_casts_and_broadcasts_like_torch():
    x = eager.zeros(3, 4, dtype=eager.int64)
    x[0] = 2.7  # cast to the tensor's dtype, as PyTorch does
    x[1:, 1] = eager.tensor([5, 6])
    x[x == 0] = -1
    np.testing.assert_array_equal(x.numpy(), [[2, 2, 2, 2], [-1, 5, -1, -1], [-1, 6, -1, -1]])
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[0] = eager.ones(3)
    np.testing.assert_array_equal(x.numpy()[0], [2, 2, 2, 2])  # unchanged after the error


def test_index_errors():
    x = eager.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x[:, [0, 4]]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[eager.tensor([0.5])]
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[eager.ones(2, dtype=eager.bool)]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="out of bounds"):
        x.gather(0, eager.tensor([[3]]))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_select(1, eager.tensor([7]))


def test_setitem_autograd_nonleaf_and_leaf_error():
    w = eager.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=eager.float64,
                     requires_grad=True)
    v = eager.tensor([10.0, 20.0], dtype=eager.float64, requires_grad=True)
    y = w * 2
    y[:, 1] = v * v
    y[0, [0, 2]] = 0.0
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [[0, 0, 0], [2, 0, 2]])
    np.testing.assert_allclose(v.grad.numpy(), [20, 40])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0, 0] = 1.0


@needs_torch
def test_getitem_gradients_match_torch():
    a = np.random.default_rng(0).standard_normal((3, 4, 5))
    mask = a[:, :, 0] > 0
    for key in [(slice(None), [0, 0, 2]), (1, slice(1, None, 2)), (mask,), ([0, 2], 1, [1, 1]),
                (Ellipsis, None, 3)]:
        x = eager.tensor(a, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        tk = tuple(torch.tensor(e) if isinstance(e, (list, np.ndarray)) else e for e in key)
        (x[key] ** 2).sum().backward()
        (tx[tk] ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# ---------------------------------------------------------------- in-place variants and errors


@pytest.mark.parametrize("name, args", [
    ("scatter_", lambda: (1, eager.tensor([[0, 2]]), eager.tensor([[7.0, 8.0]]))),
    ("scatter_", lambda: (1, eager.tensor([[0, 2]]), 5.0)),
    ("scatter_add_", lambda: (0, eager.tensor([[2, 0, 0, 1]]), eager.ones(1, 4))),
    ("scatter_reduce_", lambda: (1, eager.tensor([[0, 0]]), eager.tensor([[9.0, -9.0]]), "amax")),
    ("index_add_", lambda: (0, eager.tensor([2, 2]), eager.ones(2, 4))),
    ("index_copy_", lambda: (1, eager.tensor([3]), eager.full((3, 1), 4.0))),
    ("index_fill_", lambda: (1, eager.tensor([0, 1]), -1.0)),
    ("masked_fill_", lambda: (eager.tensor([True, False, True, False]), 0.5)),
    ("masked_scatter_", lambda: (eager.tensor([False, True, True, False]), eager.arange(8.0))),
    ("put_", lambda: (eager.tensor([0, 11]), eager.tensor([-3.0, -4.0]))),
    ("tril_", lambda: ()), ("triu_", lambda: (1,)),
])
def test_inplace_variants_match_torch(name, args):
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = _t(a)
    before = x._version
    out = getattr(x, name)(*args())
    assert out is x and x._version > before
    np.testing.assert_array_equal(x.numpy(), getattr(_t(a), name[:-1])(*args()).numpy())
    if torch is not None:
        conv = [torch.from_numpy(np.array(v.numpy())) if isinstance(v, eager.Tensor) else v
                for v in args()]
        tx = torch.from_numpy(a.copy())
        getattr(tx, name)(*conv)
        np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_shape_errors_name_shapes():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        eager.cat([eager.ones(2, 3), eager.ones(2, 4)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[2, 3\] at entry 0 and \[3\] at entry 1"):
        eager.stack([eager.ones(2, 3), eager.ones(3)])
    with pytest.raises(RuntimeError, match="shape '\\[5\\]' is invalid for input of size 6"):
        eager.ones(2, 3).reshape(5)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        eager.ones(2, 3).expand(4, 3, 2)
    with pytest.raises(RuntimeError, match="mm: self must be a matrix"):
        eager.mm(eager.ones(3), eager.ones(3, 2))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        eager.linalg.solve(eager.eye(3) if hasattr(eager, "eye") else eager.ones(3, 3),
                           eager.ones(2))
    with pytest.raises(RuntimeError, match="square matrices"):
        eager.linalg.inv(eager.ones(2, 3))
    with pytest.raises(eager.linalg.LinAlgError, match="singular"):
        eager.linalg.inv(eager.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        eager.ones(2, 2).scatter(0, eager.tensor([[0, 1]]), eager.ones(1, 2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        eager.ones(3).topk(4)
    with pytest.raises(RuntimeError, match="expected BoolTensor for mask"):
        eager.ones(3).masked_fill(eager.ones(3), 0.0)


def test_sort_namedtuple_stable_descending_and_nan():
    x = eager.tensor([3.0, float("nan"), 1.0, 3.0, -2.0])
    r = eager.sort(x, descending=True, stable=True)
    assert r.values is r[0] and r.indices is r[1]
    np.testing.assert_array_equal(r.indices.numpy(), [1, 0, 3, 2, 4])
    np.testing.assert_array_equal(eager.sort(x, stable=True).indices.numpy(), [4, 2, 0, 3, 1])
    t = eager.topk(eager.tensor([1.0, 5.0, 3.0]), 2)
    np.testing.assert_array_equal(t.values.numpy(), [5.0, 3.0])
    k = eager.kthvalue(eager.tensor([[4.0, 1.0, 3.0]]), 2, 1)
    assert k.values.item() == 3.0 and k.indices.item() == 2


def test_linalg_values_and_gradients_against_torch_formulas():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    spd = a @ a.T
    x = eager.tensor(a, dtype=eager.float64, requires_grad=True)
    eager.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-10)
    s = eager.tensor(spd, dtype=eager.float64, requires_grad=True)
    L = eager.linalg.cholesky(s)
    np.testing.assert_allclose(L.detach().numpy(), np.linalg.cholesky(spd), rtol=1e-12)
    if torch is not None:
        ts = torch.tensor(spd, requires_grad=True)
        w = rng.standard_normal((4, 4))
        (torch.linalg.cholesky(ts) * torch.from_numpy(w)).sum().backward()
        (L * eager.from_numpy(w)).sum().backward()
        tg = ts.grad.numpy()
        np.testing.assert_allclose(s.grad.numpy(), (tg + tg.T) / 2, rtol=1e-8, atol=1e-10)
    q, r = eager.linalg.qr(eager.from_numpy(a))
    np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
    u, sv, vh = eager.linalg.svd(eager.from_numpy(a), full_matrices=False)
    np.testing.assert_allclose((u * sv.unsqueeze(0) @ vh).numpy(), a, atol=1e-12)
    sign, logabs = eager.linalg.slogdet(eager.from_numpy(a))
    assert math.isclose(sign.item() * math.exp(logabs.item()), np.linalg.det(a), rel_tol=1e-10)


def test_einsum_forms_and_dynamic_ops():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(eager.einsum("ij,jk->ik", _t(a), _t(b)).numpy(), a @ b)
    np.testing.assert_allclose(eager.einsum("ij,jk", [_t(a), _t(b)]).numpy(), a @ b)
    np.testing.assert_allclose(eager.einsum("...j,jk->...k", _t(a), _t(b)).numpy(), a @ b)
    u, inv, cnt = eager.unique(eager.tensor([3, 1, 3, 2, 1]), return_inverse=True,
                               return_counts=True)
    np.testing.assert_array_equal(u.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(inv.numpy(), [2, 0, 2, 1, 0])
    np.testing.assert_array_equal(cnt.numpy(), [2, 1, 2])
    nz = eager.nonzero(eager.tensor([[0, 1], [2, 0]]), as_tuple=True)
    assert [t.tolist() for t in nz] == [[0, 1], [1, 0]]
    np.testing.assert_array_equal(eager.bincount(eager.tensor([0, 2, 2]), minlength=4).numpy(),
                                  [1, 0, 2, 0])
    assert ir.REGISTRY["nonzero"].decomp is not None and ir.REGISTRY["argwhere"].dynamic_shape

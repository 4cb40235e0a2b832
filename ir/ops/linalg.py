"""Linear algebra: matmul (numpy.matmul broadcasting, as torch.matmul) and the products built
on it (mm, bmm, mv, dot, vdot, outer, addmm, baddbmm, linear, tensordot, kron, trace), einsum,
and `torch.linalg` (norms, inv, det, slogdet, solve, cholesky, qr, svd, eigh, pinv) on
numpy.linalg kernels. Decompositions with several outputs are composites over one primitive per
output (`part=`), returning `torch.return_types`-like namedtuples.

Backward rules follow PyTorch's derivatives.yaml / FunctionsManual.cpp (inv, det, slogdet,
solve, cholesky, qr, svd, eigh, pinv; the long `qr_backward` and `svd_backward` live here).
Cholesky and eigh read the Hermitian part of their input ((A + A^H) / 2), which equals
PyTorch's result for valid (Hermitian) input and makes their gradients those of a function of
all entries. Imports nothing outside `ir`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, TensorMeta, broadcast_shapes, register, sum_to_shape
from ..return_types import return_type
from .elementwise import FLOATS
from .indexing import arr, declare

FLOATS_COMPLEX = FLOATS + (D.complex64, D.complex128)


class LinAlgError(RuntimeError):
    """`torch.linalg.LinAlgError`: a matrix is singular or not positive-definite."""


slogdet_result = return_type("slogdet", ["sign", "logabsdet"])
qr_result = return_type("qr", ["Q", "R"])
svd_result = return_type("svd", ["U", "S", "Vh"])
eigh_result = return_type("eigh", ["eigenvalues", "eigenvectors"])


def _matmul_shape(a, b):
    if len(a) == 0 or len(b) == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(a)}D and {len(b)}D")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a))} and "
            f"{'x'.join(map(str, b))}): inner sizes {a2[-1]} and {b2[-2]} differ"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def mH(F, x):
    """The conjugate transpose of the last two dims (a plain transpose for real dtypes)."""
    t = F.transpose(x, -1, -2)
    return F.conj(t) if x.dtype.is_complex else t


def _matmul_backward(F, g, out, a, b):
    # view 1-D operands as matrices, take the 2-D rule, reduce broadcast batch dims back
    a2 = (1,) + tuple(a.shape) if a.ndim == 1 else tuple(a.shape)
    b2 = tuple(b.shape) + (1,) if b.ndim == 1 else tuple(b.shape)
    g2 = F.reshape(g, broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1]))
    ga = F.matmul(g2, mH(F, F.reshape(b, b2)))
    gb = F.matmul(mH(F, F.reshape(a, a2)), g2)
    return (F.reshape(sum_to_shape(F, ga, a2), tuple(a.shape)),
            F.reshape(sum_to_shape(F, gb, b2), tuple(b.shape)))


def _matmul_samples(rng, dt):
    for sa, sb in [((3, 4), (4, 5)), ((4,), (4, 5)), ((2, 3, 4), (4,)), ((2, 3, 4), (1, 4, 2)),
                   ((4,), (4,)), ((3, 1, 2, 4), (5, 4, 3)), ((4,), (2, 4, 3))]:
        yield (arr(rng, sa, dt), arr(rng, sb, dt)), {}


_SMALL_BMM_OPMATH = {np.dtype(np.float32): np.float32, np.dtype(np.float64): np.float64,
                     np.dtype(np.float16): np.float32, np.dtype(D.bfloat16.np): np.float32}


def _matmul_impl(xp, a, b):
    """numpy.matmul, except where torch.matmul takes ATen's small-bmm kernel (both operands
    batched, K * M * N < 400 per matrix, floating): there each entry is the products summed in
    order k = 0, 1, ... in the op-math type without fused multiply-adds (`baddbmm_cpu_kernel`),
    which an in-order loop over k (a sequential `cumsum` for long k) reproduces bit for bit
    (BLAS's blocked sums differ in the last bits)."""
    if xp is np and a.ndim >= 3 and b.ndim >= 3 and a.dtype == b.dtype \
            and a.shape[-1] * a.shape[-2] * b.shape[-1] < 400 and a.shape[-1] > 0 \
            and a.dtype in _SMALL_BMM_OPMATH:
        out_dt, op = a.dtype, _SMALL_BMM_OPMATH[a.dtype]
        a, b = a.astype(op, copy=False), b.astype(op, copy=False)
        k_len = a.shape[-1]
        if k_len > 32:  # few, long sums: one sequential scan over k
            prods = a[..., :, :, None] * b[..., None, :, :]  # (..., M, K, N)
            return np.cumsum(prods, axis=-2)[..., -1, :].astype(out_dt)
        acc = a[..., :, 0, None] * b[..., None, 0, :]
        tmp = np.empty_like(acc)
        for k in range(1, k_len):
            np.multiply(a[..., :, k, None], b[..., None, k, :], out=tmp)
            acc += tmp
        return acc.astype(out_dt, copy=False)
    return xp.matmul(a, b)


register(OpDef(
    "matmul", "matmul", "input, other", 2, "default", scalar_ok=False,
    shape=_matmul_shape, impl=_matmul_impl, backward=_matmul_backward,
    ref=np.matmul, dunders=("__matmul__", "__rmatmul__"), test_dtypes=(D.int64,) + FLOATS_COMPLEX,
    sample_inputs=_matmul_samples,
))


# ---------------------------------------------------------------- products built on matmul


def _need(op, *dims):
    """An attrs rule checking operand ranks, with PyTorch's messages."""
    names = ("self", "mat2") if op == "mm" else ("batch1", "batch2") if op == "bmm" else \
        ("self", "vec") if op == "mv" else ("self", "other")

    def rule(inputs, attrs):
        for m, n, name in zip(inputs, dims, names):
            if isinstance(m, TensorMeta) and m.ndim != n:
                what = {1: "1D", 2: "a matrix", 3: "a 3D tensor"}[n]
                raise RuntimeError(f"{op}: {name} must be {what}, got {m.ndim}D" if op != "dot"
                                   else f"1D tensors expected, but got {inputs[0].ndim}D and "
                                   f"{inputs[1].ndim}D tensors")
        if op in ("dot", "vdot"):
            a, b = inputs
            if a.dtype is not b.dtype:
                raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found "
                                   f"{a.dtype.title} and {b.dtype.title}")
            if a.shape != b.shape:
                raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] "
                                   f"and src [{b.shape[0]}] to have the same number of elements,"
                                   f" but got {a.shape[0]} and {b.shape[0]} elements "
                                   f"respectively")
        if op == "bmm" and inputs[0].shape[0] != inputs[1].shape[0]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{inputs[0].shape[0]}, {inputs[0].shape[2]}] but got: "
                               f"[{inputs[1].shape[0]}, {inputs[1].shape[1]}].")
        return attrs
    return rule


def _pairs(*shapes):
    def gen(rng, dt):
        for sa, sb in shapes:
            yield (arr(rng, sa, dt), arr(rng, sb, dt)), {}
    return gen


def product(name, dims, decomp, ref, shapes, **kw):
    return declare(name, "composite", "input, other" if name not in ("mm", "mv") else
                   ("input, mat2" if name == "mm" else "input, vec"), 2, scalar_ok=False,
                   attrs_rule=_need(name, *dims), decomp=decomp, ref=ref,
                   sample_inputs=_pairs(*shapes), test_dtypes=(D.int64,) + FLOATS_COMPLEX, **kw)


product("mm", (2, 2), lambda F, a, b: F.matmul(a, b), np.matmul, [((3, 4), (4, 2))])
product("bmm", (3, 3), lambda F, a, b: F.matmul(a, b), np.matmul, [((2, 3, 4), (2, 4, 5))])
product("mv", (2, 1), lambda F, a, b: F.matmul(a, b), np.matmul, [((3, 4), (4,))])
product("dot", (1, 1), lambda F, a, b: F.matmul(a, b), np.dot, [((4,), (4,))])
product("vdot", (1, 1), lambda F, a, b: F.matmul(F.conj(a) if a.dtype.is_complex else a, b),
        np.vdot, [((4,), (4,))])
product("outer", (1, 1), lambda F, a, b: F.mul(F.unsqueeze(a, 1), b), np.outer,
        [((3,), (4,))], aliases=("ger",))


def _addmm_decomp(F, x, a, b, *, beta=1, alpha=1):
    prod = F.matmul(a, b)
    if alpha != 1:
        prod = F.mul(prod, alpha)
    if beta == 0:  # PyTorch ignores `input` then (nan and inf in it are not propagated)
        return prod
    return F.add(F.mul(x, beta) if beta != 1 else x, prod)


def _addmm_attrs(op, n):
    def rule(inputs, attrs):
        for m, name in zip(inputs[1:], ("mat1", "mat2") if n == 2 else ("batch1", "batch2")):
            if m.ndim != n:
                raise RuntimeError(f"{name} must be a {'matrix' if n == 2 else '3D tensor'}, "
                                   f"got {m.ndim}D tensor")
        out = _matmul_shape(inputs[1].shape, inputs[2].shape)
        if broadcast_shapes(inputs[0].shape, out) != out:
            raise RuntimeError(f"The expanded size of the tensor ({out[-1]}) must match the "
                               f"existing size ({inputs[0].shape[-1]}): {op} input of shape "
                               f"{list(inputs[0].shape)} cannot take a product of shape "
                               f"{list(out)}")
        return attrs
    return rule


def _addmm_samples(n):
    def gen(rng, dt):
        b = (2,) if n == 3 else ()
        yield (arr(rng, b + (3, 5), dt), arr(rng, b + (3, 4), dt), arr(rng, b + (4, 5), dt)), {}
        yield (arr(rng, (5,), dt), arr(rng, b + (3, 4), dt), arr(rng, b + (4, 5), dt)), \
            {"beta": 2, "alpha": 3}
    return gen


for _name, _n in (("addmm", 2), ("baddbmm", 3)):
    declare(_name, "composite",
            f"input, {'mat1, mat2' if _n == 2 else 'batch1, batch2'}, *, beta=1, alpha=1", 3,
            scalar_ok=False, attrs_rule=_addmm_attrs(_name, _n), decomp=_addmm_decomp,
            ref=lambda x, a, b, beta=1, alpha=1: beta * x + alpha * np.matmul(a, b),
            sample_inputs=_addmm_samples(_n), test_dtypes=(D.int64,) + FLOATS_COMPLEX)


def _linear_decomp(F, x, weight, bias=None):
    # x W^T, not W^H: torch.nn.functional.linear does not conjugate a complex weight
    half = x.dtype in D.HALF and weight.dtype is x.dtype and (bias is None or
                                                           bias.dtype is x.dtype)
    half_dtype = x.dtype
    if half:  # float32 GEMM and bias, rounded once (as PyTorch's CPU addmm; rounding the
        x, weight = F.cast(x, D.float32), F.cast(weight, D.float32)  # product before adding
        bias = None if bias is None else F.cast(bias, D.float32)  # a bias cancels bits)
    wt = F.transpose(weight, -1, -2) if weight.ndim == 2 else weight
    if x.ndim > 2 and weight.ndim == 2:  # one 2-D GEMM over the flattened batch dims (a 3-D
        lead = tuple(x.shape[:-1])  # matmul runs one per leading index, its dW a batched one)
        rows = int(np.prod(lead))
        out = F.reshape(F.matmul(F.reshape(x, (rows, x.shape[-1])), wt), lead + (wt.shape[-1],))
    else:
        out = F.matmul(x, wt)
    out = out if bias is None else F.add(out, bias)
    return F.cast(out, half_dtype) if half else out


_LINEAR_WHOLE = (np.float32, np.float64) + tuple(d.np.type for d in D.HALF)


def _linear_whole(dts, x, weight, bias=None) -> bool:
    """Where eager runs linear whole: the operands' numpy dtypes `dts` all float32, float64,
    float16 or bfloat16, weight (out, in), x (..., in), bias (out,) or none (arrays or
    TensorMetas)."""
    return (dts[0].type in _LINEAR_WHOLE and all(d == dts[0] for d in dts)
            and len(weight.shape) == 2 and len(x.shape) >= 1
            and x.shape[-1] == weight.shape[1]
            and (bias is None or tuple(bias.shape) == tuple(weight.shape[:1])))


def _linear_eager(xp, x, weight, bias=None):
    """The decomposition's kernels (matmul with the transposed weight, then add; half types
    on float32 copies, the result rounded once) in one call, on numpy arrays of one dtype
    with weight (out, in) and bias (out,) or none; None otherwise (the decomposition runs,
    and raises for bad shapes)."""
    if xp is not np or not _linear_whole(
            (x.dtype, weight.dtype) + (() if bias is None else (bias.dtype,)), x, weight, bias):
        return None
    if x.dtype.type not in (np.float32, np.float64):  # half: float32 inside, rounded once
        out = _linear_eager(xp, x.astype(np.float32), weight.astype(np.float32),
                            None if bias is None else bias.astype(np.float32))
        return out.astype(x.dtype)
    if x.ndim > 2 and x.flags.c_contiguous:  # one GEMM over the flattened batch dims
        rows = int(np.prod(x.shape[:-1]))
        out = np.matmul(x.reshape(rows, x.shape[-1]), weight.T) \
            .reshape(x.shape[:-1] + weight.shape[:1])
    else:  # (numpy's matmul would run one GEMM per leading index)
        out = np.matmul(x, weight.T)
    return out if bias is None else np.add(out, bias, out=out)


def _linear_backward(F, g, out, x, weight, bias=None):
    """PyTorch's: g @ W, g^T x over the flattened batch dims, and g summed over them."""
    o, i = weight.shape
    rows = int(np.prod(g.shape[:-1]))  # (not -1: a dim of size 0 would leave it ambiguous)
    g2 = F.reshape(g, (rows, o))
    gx = F.matmul(g, weight) if g.ndim <= 2 else \
        F.reshape(F.matmul(g2, weight), tuple(g.shape[:-1]) + (i,))  # (one GEMM)
    grads = (gx, F.matmul(F.transpose(g2, 0, 1), F.reshape(x, (rows, i))))
    if bias is None:
        return grads
    # the bias's: a ones row times g2 (BLAS gemv; numpy's add.reduce over axis 0 is ~4x slower)
    return grads + (F.matmul(F.add(F.new_zeros(g2, rows), 1.0), g2),)


declare(
    "linear", "composite", "input, weight, bias=None", 3, scalar_ok=False, method=False,
    decomp=_linear_decomp, eager_impl=_linear_eager, eager_backward=_linear_backward,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _linear_whole(tuple(m.dtype.np for m in metas), *metas),
    ref=lambda x, w, b=None: x @ w.T + (0 if b is None else b),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (2, 3, 4), dt), arr(rng, (5, 4), dt), arr(rng, (5,), dt)), {}),
        ((arr(rng, (3, 4), dt), arr(rng, (2, 4), dt)), {}),
    ]),
    test_dtypes=FLOATS_COMPLEX,
)


def _tensordot_decomp(F, a, b, dims=2):
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    da = [d % a.ndim for d in da]
    db = [d % b.ndim for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in "
                               f"dim {j}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    a2 = F.reshape(F.permute(a, tuple(fa + da)), (-1, k))
    b2 = F.reshape(F.permute(b, tuple(db + fb)), (k, -1))
    return F.reshape(F.matmul(a2, b2), tuple(a.shape[d] for d in fa) +
                     tuple(b.shape[d] for d in fb))


declare(
    "tensordot", "composite", "a, b, dims=2", 2, scalar_ok=False, method=False,
    decomp=_tensordot_decomp, ref=lambda a, b, dims=2: np.tensordot(a, b, dims),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (2, 3, 4), dt), arr(rng, (3, 4, 5), dt)), {}),
        ((arr(rng, (2, 3, 4), dt), arr(rng, (4, 2), dt)), {"dims": ([0, 2], [1, 0])}),
        ((arr(rng, (2, 3), dt), arr(rng, (4,), dt)), {"dims": 0}),
    ]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


def _kron_decomp(F, a, b):
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    ea = F.reshape(a, tuple(v for s in sa for v in (s, 1)))
    eb = F.reshape(b, tuple(v for s in sb for v in (1, s)))
    return F.reshape(F.mul(ea, eb), tuple(x * y for x, y in zip(sa, sb)))


declare("kron", "composite", "input, other", 2, scalar_ok=False, decomp=_kron_decomp,
        ref=np.kron, sample_inputs=_pairs(((2, 3), (3, 2)), ((2,), (2, 3, 1))),
        test_dtypes=(D.int64,) + FLOATS_COMPLEX)


def _trace_decomp(F, x):
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    return F.sum(F.diagonal(x))


declare("trace", "composite", "input", decomp=_trace_decomp, ref=np.trace,
        sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt),), {})]),
        test_dtypes=(D.int64,) + FLOATS_COMPLEX)


# ---------------------------------------------------------------- einsum

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_prebind(args, kwargs):
    """`einsum(equation, *operands)` and `einsum(equation, [operands])` as PyTorch takes them."""
    if args and isinstance(args[0], str):
        ops = args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
        return (tuple(ops),), {**kwargs, "equation": args[0]}
    return args, kwargs


def _einsum_attrs(inputs, attrs):
    """Canonical equation: explicit output, ellipses spelled out with unused letters."""
    eq = attrs["equation"].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(inputs):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(inputs) > len(subs) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    used = {c for c in eq if c.isalpha()}
    for c in eq:
        if not (c.isalpha() or c in ",.->"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in "
                               f"the equation string, subscripts must be in [a-zA-Z]")
    free = [c for c in LETTERS if c not in used]
    ell_n = 0
    for s, m in zip(subs, inputs):
        n_letters = len(s.replace("...", ""))
        if "..." in s:
            ell_n = max(ell_n, m.ndim - n_letters)
        elif n_letters != m.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({n_letters}) does not match the number of dimensions "
                               f"({m.ndim}) for operand {subs.index(s)} and no ellipsis was "
                               f"given")
    ell = "".join(free[:ell_n])
    subs = [s.replace("...", ell[ell_n - (m.ndim - len(s.replace('...', ''))):]
                      if ell_n else "") for s, m in zip(subs, inputs)]
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    attrs["equation"] = ",".join(subs) + "->" + out
    return attrs


def _einsum_sizes(shapes, equation):
    lhs, out = equation.split("->")
    sizes = {}
    for s, shape in zip(lhs.split(","), shapes):
        for c, n in zip(s, shape):
            if sizes.get(c, 1) not in (1, n) and n != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped): subscript {c} has sizes "
                                   f"{sizes[c]} and {n}")
            sizes[c] = max(sizes.get(c, 1), n) if n != 1 or c not in sizes else sizes[c]
    return sizes, out


def _einsum_impl(xp, *arrays, equation):
    sizes, _ = _einsum_sizes([a.shape for a in arrays], equation)
    subs = equation.split("->")[0].split(",")
    arrays = [xp.broadcast_to(a, tuple(sizes[c] for c in s)) for a, s in zip(arrays, subs)]
    return xp.einsum(equation, *arrays, optimize=len(arrays) > 2)


def _einsum_backward(F, g, out, *xs, equation):
    lhs, outs = equation.split("->")
    subs = lhs.split(",")
    grads = []
    for i, x in enumerate(xs):
        si = subs[i]
        if len(set(si)) != len(si):  # a diagonal (x[..., i, i]): gradient of the unique letters
            grads.append(_einsum_diagonal_grad(F, g, xs, subs, outs, i))
            continue
        others = [subs[j] for j in range(len(xs)) if j != i]
        avail = set(outs).union(*others)
        keep = "".join(c for c in si if c in avail)
        ops = [xs[j] if not xs[j].dtype.is_complex else F.conj(xs[j])
               for j in range(len(xs)) if j != i]
        gi = F.einsum(",".join([outs] + others) + "->" + keep, g, *ops)
        if keep != si:
            it = iter(gi.shape)
            gi = F.reshape(gi, tuple(next(it) if c in keep else 1 for c in si))
            it = iter(gi.shape)
            gi = F.expand(gi, tuple(x.shape[k] if c not in keep else gi.shape[k]
                                    for k, c in enumerate(si)))
        grads.append(gi)
    return tuple(grads)


def _einsum_diagonal_grad(F, g, xs, subs, outs, i):
    """The gradient of operand i whose subscripts repeat a letter (each at most twice, as
    "bii->b" or "ii->i"): the gradient for its unique letters, placed on the diagonals
    (`diag_embed`), zero elsewhere, as PyTorch's."""
    si = subs[i]
    u = "".join(dict.fromkeys(si))
    if any(si.count(c) > 2 for c in u):
        raise NotImplementedError(f"einsum backward for a subscript repeated more than twice "
                                  f"({si}) is not implemented")
    x = xs[i]
    size = {c: x.shape[si.index(c)] for c in u}
    others = [subs[j] for j in range(len(xs)) if j != i]
    avail = set(outs).union(*others)
    keep = "".join(c for c in u if c in avail)
    ops = [xs[j] if not xs[j].dtype.is_complex else F.conj(xs[j])
           for j in range(len(xs)) if j != i]
    gu = F.einsum(",".join([outs] + others) + "->" + keep, g, *ops)
    if keep != u:  # letters summed away inside the operand: broadcast back
        it = iter(gu.shape)
        gu = F.reshape(gu, tuple(next(it) if c in keep else 1 for c in u))
        gu = F.expand(gu, tuple(size[c] for c in u))
    labels = [si.index(c) for c in u]  # each axis named by the position it fills in si
    for pos, c in enumerate(si):
        if si.index(c) != pos:
            k = labels.index(si.index(c))
            gu = F.movedim(gu, k, -1)
            labels.append(labels.pop(k))
            gu = F.diag_embed(gu)
            labels.append(pos)
    order = sorted(range(len(labels)), key=lambda a: labels[a])
    return F.permute(gu, tuple(order))


def _einsum_samples(rng, dt):
    cases = [("ij,jk->ik", (3, 4), (4, 5)), ("ij->ji", (3, 4)), ("bij,bjk", (2, 3, 4), (2, 4, 2)),
             ("i,i->", (4,), (4,)), ("...ij,jk->...ik", (2, 3, 4), (4, 2)),
             ("ij,k->ijk", (2, 3), (4,)), ("ijk->i", (2, 3, 4)), ("ab,bc,cd->ad", (2, 3),
                                                                  (3, 4), (4, 2)),
             ("bii->b", (2, 3, 3)), ("ii->i", (3, 3)), ("iji,j->i", (3, 2, 3), (2,))]
    for eq, *shapes in cases:
        yield tuple(arr(rng, s, dt) for s in shapes), {"equation": eq}


declare(
    "einsum", "matmul", "operands, equation", variadic=True, scalar_ok=False, method=False,
    data=(), prebind=_einsum_prebind, attrs_rule=_einsum_attrs,
    shape=lambda *shapes, equation: tuple(
        _einsum_sizes(shapes, equation)[0][c] for c in equation.split("->")[1]),
    impl=_einsum_impl, backward=_einsum_backward,
    ref=lambda *a, equation: np.einsum(equation, *a),
    sample_inputs=_einsum_samples, test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- QR and SVD backward rules
# Used by the `_linalg_qr` / `_linalg_svd` primitives in matrix.py. Each primitive has one
# output (part="Q"/"R", "U"/"S"/"Vh"); PyTorch's backward formulas are linear in the output
# gradients, so the rule of one part is PyTorch's formula with the other parts' gradients
# undefined (zero), and autograd sums the parts' contributions.


def _triu_part_adjoint(F, x):
    """syminv's adjoint in linalg_qr_backward: X + X^H with the (real) diagonal halved."""
    s = F.add(x, mH(F, x))
    return F.sub(s, F.mul(F.diag_embed(F.diagonal(s, 0, -2, -1)), 0.5))


def qr_backward(F, g, q, r, mode, part):
    """The gradient of A from the gradient `g` of part "Q" or "R" of A = QR (float or complex
    (batches of) m x n matrices, Q and R as returned by `linalg.qr(A, mode)`).

    PyTorch's `linalg_qr_backward` (FunctionsManual.cpp): for m >= n,
    gA = (Q syminv*(triu(gR R^H - Q^H gQ)) + gQ) R^-H; for m < n,
    gA = Q gR + [Q trilImInv*(Q^H gQ - gR R^H) R_1^-H, 0] with R_1 the leading m x m block.
    Raises RuntimeError, with PyTorch's messages, for mode='r' (Q not computed) and for
    mode='complete' with more rows than columns (Q's trailing columns are not determined).
    """
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    m, n = q.shape[-2], r.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    gq = g if part == "Q" else None
    # M = gR R^H - Q^H gQ, with the undefined gradient left out
    big_m = F.neg(F.matmul(mH(F, q), gq)) if part == "Q" else F.matmul(g, mH(F, r))
    if m >= n:
        b = F.matmul(q, _triu_part_adjoint(F, F.triu(big_m)))
        if gq is not None:
            b = F.add(b, gq)
        return mH(F, F.linalg_solve(r, mH(F, b)))  # b R^-H
    # trilImInv's adjoint on skew(-M): tril(Y) with Y = -M - (-M)^H, imaginary diagonal halved
    y = F.sub(mH(F, big_m), big_m)
    y = F.sub(F.tril(y), F.mul(F.diag_embed(F.diagonal(y, 0, -2, -1)), 0.5))
    r1 = F.narrow(r, -1, 0, m)
    ga = mH(F, F.linalg_solve(r1, mH(F, F.matmul(q, y))))
    ga = F.cat([ga, F.new_zeros(ga, tuple(ga.shape[:-1]) + (n - m,))], -1)
    return ga if part == "Q" else F.add(ga, F.matmul(q, g))


def svd_backward(F, g, u, s, vh, part):
    """The gradient of A from the gradient `g` of part "U", "S" or "Vh" of A = U diag(S) Vh
    (reduced SVD: U m x k, S k, Vh k x n, k = min(m, n); distinct nonzero singular values).

    PyTorch's `svd_backward` (FunctionsManual.cpp), with E_jk = S_k^2 - S_j^2 (1 on the
    diagonal) and skew(X) = X - X^H:
    gA = U [(skew(U^H gU) / E) S + S (skew(V^H gV) / E) + diag(gS)] Vh,
    plus (I - U U^H) gU S^-1 Vh when m > n, and U S^-1 gVh (I - V V^H) when m < n. The
    complex diagonal term i Im diag(U^H gU) / S is split evenly between the U and Vh rules
    (PyTorch's grouping assumes a phase-invariant loss, so both halves agree).
    """
    m, n = u.shape[-2], vh.shape[-1]
    if part == "S":
        return F.matmul(F.mul(u, F.unsqueeze(g, -2)), vh)
    s2 = F.mul(s, s)
    eye = F.diag_embed(F.add(F.new_zeros(s, tuple(s.shape)), 1.0))
    e = F.add(F.sub(F.unsqueeze(s2, -2), F.unsqueeze(s2, -1)), eye)
    if part == "U":
        x = F.matmul(mH(F, u), g)
        x = F.sub(x, mH(F, x))
        inner = F.mul(F.div(x, e), F.unsqueeze(s, -2))
    else:
        x = F.matmul(vh, mH(F, g))
        x = F.sub(x, mH(F, x))
        inner = F.mul(F.unsqueeze(s, -1), F.div(x, e))
    if u.dtype.is_complex:
        d = F.div(F.diagonal(x, 0, -2, -1), F.mul(s, 4.0 if part == "U" else -4.0))
        inner = F.add(inner, F.diag_embed(d))
    if part == "U" and m > n:
        gus = F.div(g, F.unsqueeze(s, -2))
        ga = F.add(F.matmul(u, inner), F.sub(gus, F.matmul(u, F.matmul(mH(F, u), gus))))
        return F.matmul(ga, vh)
    if part == "Vh" and m < n:
        sg = F.div(g, F.unsqueeze(s, -1))
        ga = F.add(F.matmul(inner, vh), F.sub(sg, F.matmul(F.matmul(sg, mH(F, vh)), vh)))
        return F.matmul(u, ga)
    return F.matmul(u, F.matmul(inner, vh))

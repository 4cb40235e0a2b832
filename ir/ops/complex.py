"""Complex-number ops and the strided-view primitive: real, imag, view_as_real, view_as_complex,
conj, angle, polar, complex, as_strided.

`real`/`imag`/`view_as_real`/`view_as_complex`/`as_strided` are views (numpy's `.real`, `.imag`,
dtype views and stride tricks share memory). Backward rules follow PyTorch's derivatives.yaml
under the conjugate Wirtinger convention (the gradient of a real loss L with respect to a
complex input z is dL/dz*, so `real`: g as complex; `imag`: g * 1j; `angle`: angle_backward;
`polar`: polar_backward; `complex`: real(g), imag(g)). `conj` returns a copy (PyTorch
returns a lazy conjugate view; values are the same, `is_conj()` is always False here).
Dtype rules that are not a standard promotion kind are callables (`OpDef.promotion`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, register

COMPLEX = (D.complex64, D.complex128)


def _promotion(name, rule):
    """The op's dtype rule as an `OpDef.promotion` callable: `rule(name, *operand dtypes)`."""

    def promotion(ops, attrs):
        return rule(name, *[o[0] if isinstance(o, tuple) else
                            D.default_for_category(D.scalar_category(o)) for o in ops])

    return promotion


def _real_rule(name, d):
    return d, d.to_real()


def _imag_rule(name, d):
    if not d.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return d, d.to_real()


def _var_rule(name, d):
    if not d.is_complex:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got {d.name}")
    return d, d.to_real()


def _vac_rule(name, d):
    if d not in (D.float32, D.float64, D.float16):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {d.title}")
    return d, d.to_complex()


def _angle_rule(name, d):
    if d.is_complex:
        return d, d.to_real()
    f = d if d.is_floating_point else D.get_default_dtype()
    return f, f


def _pair_rule(name, a, b):
    if a is not b:
        raise RuntimeError(f"Expected object of scalar type {a.title} but got scalar type "
                           f"{b.title} for second argument")
    if a not in (D.float32, D.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a.title} and {b.title}")
    return a, a.to_complex()


def _keep_rule(name, d):
    return d, d


def _complex_samples(rng, dtype):
    dt = dtype if dtype.is_complex else D.complex128
    for shape in ((3, 4), (2, 1, 5)):
        re, im = rng.standard_normal(shape), rng.standard_normal(shape)
        yield (np.asarray(re + 1j * im).astype(dt.np),), {}


def _float_pair_samples(rng, dtype):
    dt = dtype if dtype.is_floating_point else D.float64
    yield (rng.uniform(0.5, 2, (3, 4)).astype(dt.np), rng.standard_normal((3, 4)).astype(dt.np)), {}
    yield (rng.uniform(0.5, 2, (4,)).astype(dt.np), rng.standard_normal((2, 4)).astype(dt.np)), {}


def _op(name, sig, kind, rule, impl, backward, ref, **kw):
    return register(OpDef(name, kind, sig, kw.pop("nin", 1), _promotion(name, rule), impl=impl,
                          backward=backward, ref=ref, **kw))


def _real_backward(F, g, out, x):
    return (F.cast(g, x.dtype) if x.dtype.is_complex else g,)


_op("real", "input", "view", _real_rule, lambda xp, x: xp.real(x), _real_backward, np.real,
    shape=lambda s: s, method=False, sample_inputs=_complex_samples,
    test_dtypes=(D.float32, D.float64) + COMPLEX)
_op("imag", "input", "view", _imag_rule, lambda xp, x: xp.imag(x),
    lambda F, g, out, x: (F.mul(F.cast(g, x.dtype), 1j),), np.imag,
    shape=lambda s: s, method=False, sample_inputs=_complex_samples, test_dtypes=COMPLEX)


def _view_as_real_impl(xp, x):
    return x[..., None].view(x.real.dtype)


def _view_as_complex_impl(xp, x):
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if x.strides[-1] != x.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * x.itemsize) for s in x.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if ((_ptr(x) - _ptr(_root(x))) // x.itemsize) % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return x.view(np.complex128 if x.dtype == np.float64 else np.complex64)[..., 0]


def _dense(F, g):
    """`g` as a row-major tensor (reshape copies only when it must)."""
    return F.reshape(F.reshape(g, (-1,)), tuple(g.shape))


def _vac_shape(s):
    if len(s) == 0 or s[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return s[:-1]


_op("view_as_real", "input", "view", _var_rule, _view_as_real_impl,
    lambda F, g, out, x: (F.view_as_complex(_dense(F, g)),),
    lambda x: np.stack([x.real, x.imag], -1), shape=lambda s: s + (2,), method=False,
    sample_inputs=_complex_samples, test_dtypes=COMPLEX)
_op("view_as_complex", "input", "view", _vac_rule, _view_as_complex_impl,
    lambda F, g, out, x: (F.view_as_real(g),),
    lambda x: x[..., 0] + 1j * x[..., 1], shape=_vac_shape, method=False,
    sample_inputs=lambda rng, dt: [((rng.standard_normal((3, 2)).astype(
        dt.np if dt in (D.float32, D.float64) else np.float64),), {})],
    test_dtypes=(D.float32, D.float64))
_op("conj", "input", "elementwise", _keep_rule, lambda xp, x: xp.conj(x),
    lambda F, g, out, x: (F.conj(g),), np.conj, scalar=lambda b, x: x, inplace=False,
    test_dtypes=(D.int64, D.float32, D.float64))  # torch's lazy conj view has no .numpy()


def _angle_impl(xp, x):
    if x.dtype.kind == "c":
        return xp.angle(x)
    return xp.where(x < 0, math.pi, xp.where(xp.isnan(x), x, 0.0)).astype(x.dtype)


def _angle_backward(F, g, out, x):
    if not x.dtype.is_complex:
        return (F.mul(g, 0.0),)
    r = F.mul(F.div(F.mul(g, x), F.mul(F.abs(x), F.abs(x))), 1j)
    return (F.where(F.eq(x, 0.0), 0.0, r),)


def _angle_ref(x):
    if np.iscomplexobj(x):
        return np.angle(x)
    return np.where(x < 0, math.pi, np.where(np.isnan(x), x, 0.0))


_op("angle", "input", "elementwise", _angle_rule, _angle_impl, _angle_backward, _angle_ref,
    # real inputs (what codegen fuses; complex nodes run `impl`): pi below zero, NaN kept
    scalar=lambda b, x: b.where(b.lt(x, 0), math.pi, b.where(b.isnan(x), x, 0.0)),
    inplace=False, test_dtypes=(D.int64, D.float32, D.float64) + COMPLEX)


def _polar_impl(xp, a, t):
    out = xp.empty(np.broadcast_shapes(a.shape, t.shape),
                   np.complex128 if a.dtype == np.float64 else np.complex64)
    out.real = a * xp.cos(t)
    out.imag = a * xp.sin(t)
    return out


def _polar_backward(F, g, out, a, t):
    gc = F.conj(g)
    mag = F.abs(a)
    sgn = F.where(F.eq(mag, 0.0), 0.0, F.div(out, F.cast(mag, out.dtype)))
    return F.real(F.mul(gc, sgn)), F.real(F.mul(gc, F.mul(out, 1j)))


_op("polar", "abs, angle", "elementwise", _pair_rule, _polar_impl, _polar_backward,
    lambda a, t: a * np.cos(t) + 1j * a * np.sin(t), nin=2, scalar_ok=False, method=False,
    inplace=False, sample_inputs=_float_pair_samples, test_dtypes=(D.float32, D.float64))


def _complex_impl(xp, re, im):
    out = xp.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.complex128 if re.dtype == np.float64 else np.complex64)
    out.real = re
    out.imag = im
    return out


_op("complex", "real, imag", "elementwise", _pair_rule, _complex_impl,
    lambda F, g, out, re, im: (F.real(g), F.imag(g)),
    lambda re, im: re + 1j * im, nin=2, scalar_ok=False, method=False, inplace=False,
    sample_inputs=_float_pair_samples, test_dtypes=(D.float32, D.float64))


# ---------------------------------------------------------------- as_strided


def _ptr(a) -> int:
    return a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else a.data.ptr


def _root(a):
    while True:
        b = getattr(a, "base", None)
        if not isinstance(b, type(a)):  # stride tricks keep the array behind a DummyArray
            b = getattr(b, "base", None)
            if not isinstance(b, type(a)):
                return a
        a = b


def _as_strided_attrs(inputs, attrs):
    size = tuple(int(s) for s in attrs["size"])
    stride = tuple(int(s) for s in attrs["stride"])
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} strides "
                           f"for {len(size)} sizes")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    attrs["size"], attrs["stride"] = size, stride
    return attrs


def _as_strided_impl(xp, x, size, stride, storage_offset=None):
    item = x.itemsize
    root = _root(x)
    cur = (_ptr(x) - _ptr(root)) // item
    off = cur if storage_offset is None else int(storage_offset)
    storage = root.nbytes // item
    need = off + 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if need > storage or off < 0:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, "
            f"and itemsize {item} requiring a storage size of {need * item} are out of bounds "
            f"for storage of size {storage * item}")
    st = xp.lib.stride_tricks.as_strided
    delta = off - cur  # move the start pointer from x's first element to the new offset
    if delta >= 0:
        start = st(x, (delta + 1,), (item,))[delta:]
    else:
        start = st(x, (1 - delta,), (-item,))[-delta:]
    return st(start, size, tuple(s * item for s in stride))


def _as_strided_ref(x, size, stride, storage_offset=None):
    flat = np.ascontiguousarray(x).reshape(-1)
    off = 0 if storage_offset is None else storage_offset
    idx = off + sum(np.arange(n).reshape((-1,) + (1,) * (len(size) - i - 1)) * s
                    for i, (n, s) in enumerate(zip(size, stride)))
    return flat[np.asarray(idx, dtype=np.int64)] if size else flat[off]


register(OpDef(
    "as_strided", "view", "input, size, stride, storage_offset=None", 1, "keep",
    shape=lambda s, size, stride, storage_offset=None: size, attrs_rule=_as_strided_attrs,
    impl=_as_strided_impl, ref=_as_strided_ref,
    samples=({"size": (2, 2), "stride": (1, 2)}, {"size": (3,), "stride": (4,),
                                                   "storage_offset": 1}),
))

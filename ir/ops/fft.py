"""`torch.fft`: discrete Fourier transforms as registry ops whose kernels are library calls.

Three primitives carry every transform, as in PyTorch's ATen (`_fft_c2c`, `_fft_r2c`,
`_fft_c2r`): complex-to-complex, real-to-complex (one-sided or full) and one-sided
complex-to-real, each over a tuple of dims with a `normalization` of "none", "sqrt" (divide by
sqrt(N)) or "n" (divide by N), N the product of the signal sizes. Their kernels are
`scipy.fft` on numpy arrays and `cupy.fft` (the array namespace's `fft`) on cupy arrays, so a
compiled graph keeps them as library calls (kind "fft", never fused). Their backward rules are
PyTorch's (`fft_c2c`/`fft_r2c_backward`/`fft_c2r_backward` in FunctionsManual.cpp): the
transforms are linear, and the conjugate-Wirtinger gradient of a DFT is the DFT in the other
direction with the same normalization.

The public functions (`fft_fft` is `torch.fft.fft`, ... `fft_ihfftn`, `fft_fftshift`,
`fft_ifftshift`) are composites: argument checks and defaults as torch's
(`canonicalize_fft_shape_and_dim_args`), integer input promoted to the default float dtype,
real input of a complex transform promoted to complex64/complex128, zero-padding or trimming
to `n`/`s` (pad/narrow, so their gradients come for free), then one primitive. hfft is the
forward transform of a Hermitian signal: c2r of conj(x) with forward normalization; ihfft is
conj(r2c(x)) with backward normalization. Semantics: the torch.fft documentation; references:
numpy.fft (scipy.fft for hfft2/hfftn). Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft

from .. import dtypes as D
from ..opdef import normalize_dim
from .elementwise import FLOATS
from .indexing import arr, declare

FLOATS_COMPLEX = FLOATS + (D.complex64, D.complex128)
NORMS = (None, "backward", "ortho", "forward")

# (normalization, forward) -> the library's `norm` name (scipy.fft/numpy.fft/cupy.fft)
_LIB_NORM = {("none", True): "backward", ("sqrt", True): "ortho", ("n", True): "forward",
             ("none", False): "forward", ("sqrt", False): "ortho", ("n", False): "backward"}


def _lib(xp):
    """The FFT library of an array namespace: scipy.fft for numpy, cupy.fft for cupy."""
    return sfft if xp is np else xp.fft


def normalization(norm, forward: bool) -> str:
    """PyTorch's `norm=` ("backward" default, "ortho", "forward") as the scaling a transform
    in direction `forward` applies: "none", "sqrt" or "n"."""
    if norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return "sqrt"
    return "none" if (norm in (None, "backward")) == forward else "n"


# ---------------------------------------------------------------- the three primitives


def _c2c_impl(xp, x, dim, normalization, forward):
    lib = _lib(xp)
    return (lib.fftn if forward else lib.ifftn)(x, axes=dim,
                                                norm=_LIB_NORM[normalization, forward])


def _r2c_impl(xp, x, dim, normalization, onesided):
    lib = _lib(xp)
    return (lib.rfftn if onesided else lib.fftn)(x, axes=dim,
                                                 norm=_LIB_NORM[normalization, True])


def _c2r_impl(xp, x, dim, normalization, last_dim_size):
    s = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
    return _lib(xp).irfftn(x, s=s, axes=dim, norm=_LIB_NORM[normalization, False])


def _with_size(shape, d, n):
    out = list(shape)
    out[d] = n
    return tuple(out)


def _pad_dim(F, x, d, n):
    """`x` zero-padded (at the end) or trimmed to size `n` along dim `d`."""
    have = x.shape[d]
    if have == n:
        return x
    if have > n:
        return F.narrow(x, d, 0, n)
    return F.cat([x, F.new_zeros(x, _with_size(x.shape, d, n - have))], d)


def _r2c_backward(F, g, out, x, dim, normalization, onesided):
    # FunctionsManual.cpp fft_r2c_backward: the dropped half of the spectrum gets zeros
    full = _pad_dim(F, g, dim[-1], x.shape[dim[-1]]) if onesided else g
    return (F.real(F._fft_c2c(full, dim, normalization, False)),)


def _c2r_backward(F, g, out, x, dim, normalization, last_dim_size):
    # FunctionsManual.cpp fft_c2r_backward: r2c of the gradient, with the entries whose mirror
    # image lies outside the one-sided half (1 .. N - N//2 - 1) counted twice
    gi = F._fft_r2c(g, dim, normalization, True)
    d = dim[-1]
    double = last_dim_size - gi.shape[d]
    if double > 0:
        rest = gi.shape[d] - 1 - double
        parts = [F.narrow(gi, d, 0, 1), F.mul(F.narrow(gi, d, 1, double), 2.0)]
        if rest:
            parts.append(F.narrow(gi, d, 1 + double, rest))
        gi = F.cat(parts, d)
    return (gi,)


def _prim_samples(kind):
    def gen(rng, dt):
        for shape, dim in (((8,), (0,)), ((3, 6), (1,)), ((2, 4, 5), (0, 2)), ((4, 5), (1, 0))):
            for norm in ("none", "sqrt", "n"):
                if kind == "c2c":
                    for fwd in (True, False):
                        yield (arr(rng, shape, dt),), {"dim": dim, "normalization": norm,
                                                       "forward": fwd}
                elif kind == "r2c":
                    for one in (True, False):
                        yield (arr(rng, shape, dt),), {"dim": dim, "normalization": norm,
                                                       "onesided": one}
                else:
                    n = shape[dim[-1]]
                    half = _with_size(shape, dim[-1], n // 2 + 1)
                    yield (arr(rng, half, dt),), {"dim": dim, "normalization": norm,
                                                  "last_dim_size": n}
    return gen


def _np_scale(y, dim, shape, normalization):
    n = float(np.prod([shape[d] for d in dim]))
    return y / {"none": 1.0, "sqrt": np.sqrt(n), "n": n}[normalization]


def _prim_dtype(to):
    def rule(inputs, attrs):
        d = inputs[0].dtype
        return d.to_complex() if to == "complex" else d.to_real()
    return rule


declare(
    "_fft_c2c", "fft", "input, dim, normalization, forward", method=False,
    fixed=_prim_dtype("complex"), shape=lambda s, **_: s, impl=_c2c_impl,
    backward=lambda F, g, out, x, dim, normalization, forward: (
        F._fft_c2c(g, dim, normalization, not forward),),
    ref=lambda x, dim, normalization, forward: _np_scale(
        np.fft.fftn(x, axes=dim) if forward else np.fft.ifftn(x, axes=dim, norm="forward"),
        dim, x.shape, normalization),
    sample_inputs=_prim_samples("c2c"), test_dtypes=(D.complex64, D.complex128),
)
declare(
    "_fft_r2c", "fft", "input, dim, normalization, onesided", method=False,
    fixed=_prim_dtype("complex"),
    shape=lambda s, dim, normalization, onesided: _with_size(s, dim[-1], s[dim[-1]] // 2 + 1)
    if onesided else s,
    impl=_r2c_impl, backward=_r2c_backward,
    ref=lambda x, dim, normalization, onesided: _np_scale(
        (np.fft.rfftn if onesided else np.fft.fftn)(x, axes=dim), dim, x.shape, normalization),
    sample_inputs=_prim_samples("r2c"), test_dtypes=FLOATS,
)
declare(
    "_fft_c2r", "fft", "input, dim, normalization, last_dim_size", method=False,
    fixed=_prim_dtype("real"),
    shape=lambda s, dim, normalization, last_dim_size: _with_size(s, dim[-1], last_dim_size),
    impl=_c2r_impl, backward=_c2r_backward,
    ref=lambda x, dim, normalization, last_dim_size: _np_scale(
        np.fft.irfftn(x, s=[x.shape[d] for d in dim[:-1]] + [last_dim_size], axes=dim,
                      norm="forward"),
        dim, _with_size(x.shape, dim[-1], last_dim_size), normalization),
    sample_inputs=_prim_samples("c2r"), test_dtypes=(D.complex64, D.complex128),
)


# ---------------------------------------------------------------- the public transforms


def _plan(name, shape, s, dim, kind):
    """PyTorch's canonicalize_fft_shape_and_dim_args: (dims, signal sizes) of a transform of
    a tensor of `shape`; `s` (None, or sizes with -1 for "as the input") and `dim` (None, an
    int or a sequence) as the user gave them. For "irfft"/"hfft" the last size is that of the
    real output (default 2 * (input size - 1)). Raises PyTorch's errors."""
    ndim = len(shape)
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        if ndim == 0 and dim:
            raise IndexError(f"Dimension specified as {dim[0]} but tensor has no dimensions")
        dims = tuple(normalize_dim(d, ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        dims = tuple(range(ndim - len(s), ndim))
    else:
        dims = tuple(range(ndim))
    if not dims and kind in ("rfft", "irfft", "hfft", "ihfft"):
        raise RuntimeError(f"{name} must transform at least one axis")
    sizes = []
    for i, d in enumerate(dims):
        n = None if s is None or s[i] == -1 else s[i]
        if n is None:
            last_c2r = kind in ("irfft", "hfft") and i == len(dims) - 1
            n = 2 * (shape[d] - 1) if last_c2r else shape[d]
        if not isinstance(n, int) or n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        sizes.append(n)
    return dims, tuple(sizes)


def _check_input(name, kind, dtype):
    if dtype in D.HALF:
        raise RuntimeError(f"Unsupported dtype {dtype.title}")
    if kind in ("rfft", "ihfft") and dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {dtype.title}")


def _transform(F, x, s, dim, norm, name, kind):
    """The composite behind every public transform (see the module docstring)."""
    _check_input(name, kind, x.dtype)
    dims, sizes = _plan(name, tuple(x.shape), s, dim, kind)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = F.cast(x, D.get_default_dtype())
    if kind in ("irfft", "hfft"):
        if not x.dtype.is_complex:
            x = F.cast(x, x.dtype.to_complex())
        for d, n in zip(dims, sizes[:-1] + (sizes[-1] // 2 + 1,)):
            x = _pad_dim(F, x, d, n)
        if kind == "hfft":
            x = F.conj(x)
        return F._fft_c2r(x, dims, normalization(norm, kind == "hfft"), sizes[-1])
    for d, n in zip(dims, sizes):
        x = _pad_dim(F, x, d, n)
    if not dims:
        return x if x.dtype.is_complex else F.cast(x, x.dtype.to_complex())
    if kind in ("rfft", "ihfft"):
        y = F._fft_r2c(x, dims, normalization(norm, kind == "rfft"), True)
        return F.conj(y) if kind == "ihfft" else y
    forward = kind == "fft"
    if not x.dtype.is_complex:
        if forward:  # the full spectrum of a real signal: real-to-complex, both halves
            return F._fft_r2c(x, dims, normalization(norm, True), False)
        x = F.cast(x, x.dtype.to_complex())
    return F._fft_c2c(x, dims, normalization(norm, forward), forward)


def _attrs(name, kind, arity):
    def rule(inputs, attrs):
        x = inputs[0]
        _check_input(name, kind, x.dtype)
        s = attrs.get("s") if arity != "1" else (None if attrs["n"] is None else (attrs["n"],))
        _plan(name, x.shape, s, attrs["dim"], kind)
        normalization(attrs["norm"], True)
        return attrs
    return rule


def _ref(name, kind, arity):
    """numpy.fft (scipy.fft for hfft2/hfftn/ihfft2/ihfftn, absent from numpy)."""
    lib = sfft if kind in ("hfft", "ihfft") and arity != "1" else np.fft
    fn = getattr(lib, name if arity == "1" else kind + ("2" if arity == "2" else "n"))

    def ref(x, n=None, dim=None, norm=None, s=None):
        if x.dtype.kind in "biu":
            x = x.astype(np.float32)
        if dim is None and arity != "n":
            dim = -1 if arity == "1" else (-2, -1)
        if dim is None and s is not None:
            dim = tuple(range(x.ndim - len(s), x.ndim))
        if arity == "1":
            return np.asarray(fn(x, n=n, axis=dim, norm=norm))
        return np.asarray(fn(x, s=s, axes=dim, norm=norm))
    return ref


def _samples(kind, arity):
    def gen(rng, dt):
        if arity == "1":
            yield (arr(rng, (8,), dt),), {}
            yield (arr(rng, (3, 6), dt),), {"n": 9, "dim": 0, "norm": "ortho"}
            yield (arr(rng, (2, 7), dt),), {"n": 5, "norm": "forward"}
            yield (arr(rng, (2, 7, 2), dt),), {"dim": 1, "norm": "backward"}
        else:
            yield (arr(rng, (2, 4, 6), dt),), {}
            yield (arr(rng, (3, 4, 5), dt),), {"s": (5, 3), "norm": "ortho"}
            yield (arr(rng, (4, 3, 5), dt),), {"s": (6, 4), "dim": (2, 0), "norm": "forward"}
            if arity == "n":
                yield (arr(rng, (3, 4, 2), dt),), {"dim": (1,)}
                yield (arr(rng, (2, 3), dt),), {"s": (4,)}
    return gen


_PUBLIC = {"fft": "fft", "ifft": "ifft", "rfft": "rfft", "irfft": "irfft", "hfft": "hfft",
           "ihfft": "ihfft"}
_SIGS = {"1": "input, n=None, dim=-1, norm=None", "2": "input, s=None, dim=(-2, -1), norm=None",
         "n": "input, s=None, dim=None, norm=None"}


def _declare_transform(kind, arity):
    name = kind + {"1": "", "2": "2", "n": "n"}[arity]
    if arity == "1":
        def decomp(F, x, n=None, dim=-1, norm=None):
            return _transform(F, x, None if n is None else (n,), dim, norm, name, kind)
    else:
        def decomp(F, x, s=None, dim=(-2, -1) if arity == "2" else None, norm=None):
            return _transform(F, x, s, dim, norm, name, kind)
    real_in = kind in ("rfft", "ihfft")
    declare(
        "fft_" + name, "composite", _SIGS[arity], method=False,
        attrs_rule=_attrs(name, kind, arity), decomp=decomp, ref=_ref(name, kind, arity),
        sample_inputs=_samples(kind, arity),
        test_dtypes=FLOATS if real_in else FLOATS_COMPLEX,
    )


for _kind in _PUBLIC:
    for _arity in ("1", "2", "n"):
        _declare_transform(_kind, _arity)


def _shift_decomp(inverse):
    def decomp(F, x, dim=None):
        dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) \
            else tuple(dim)
        dims = tuple(normalize_dim(d, x.ndim) for d in dims)
        if not dims:
            return F.clone(x)
        shifts = tuple((x.shape[d] + inverse) // 2 for d in dims)
        return F.roll(x, shifts, dims)
    return decomp


for _name, _inv in (("fftshift", 0), ("ifftshift", 1)):
    declare(
        "fft_" + _name, "composite", "input, dim=None", method=False,
        decomp=_shift_decomp(_inv),
        ref=(lambda x, dim=None: np.fft.ifftshift(x, axes=dim)) if _inv else
        (lambda x, dim=None: np.fft.fftshift(x, axes=dim)),
        sample_inputs=lambda rng, dt: iter([((arr(rng, (4, 5), dt),), {}),
                                            ((arr(rng, (3, 4, 5), dt),), {"dim": (0, 2)}),
                                            ((arr(rng, (7,), dt),), {"dim": -1})]),
        test_dtypes=(D.int64,) + FLOATS_COMPLEX,
    )

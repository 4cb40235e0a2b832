"""Tensor creation: tensor, as_tensor, from_numpy, zeros, ones, full, empty, the `*_like` forms,
arange, linspace, logspace, eye (random creation lives in `eager/random.py`).

Signatures, defaults and dtypes follow PyTorch's (Python floats -> the default dtype, ints ->
int64, complex -> the default complex dtype); every function takes `dtype`, `device` and
`requires_grad`, and `out=` where PyTorch has it.
"""

from __future__ import annotations

import math

import numpy as np

from ir import dtypes as D
from ir.meta_array import MetaArray

from .device import resolve, to_device
from .out_arg import write_out
from .tensor import Tensor
from .tensor_ctor import to_array


def _sizes(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(arr, device=None, requires_grad=False, out=None) -> Tensor:
    """A tensor of numpy array `arr` on `device`, or `arr` written into `out` (resized)."""
    if out is not None:
        t = Tensor._make(arr)
        if out.device.type != "cpu":
            t = Tensor._make(to_device(arr, out.device))
        return write_out(_CREATION, t, out)
    dev = resolve(device)
    if dev.type != "cpu":
        arr = to_device(arr, dev)
    return Tensor._make(arr, requires_grad)


class _CreationOp:
    name = "creation"


_CREATION = _CreationOp()


def _dtype_or_default(dtype) -> D.DType:
    return D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor copying `data` (nested lists, numbers, numpy arrays, tensors)."""
    return _finish(to_array(data, dtype), device, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`data` itself when it already is a tensor of that dtype/device, a zero-copy tensor over
    a numpy array of that dtype, else a new tensor."""
    dt = D.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        t = data if device is None else data.to(device)
        return t if dt is None else t.to(dt)
    if isinstance(data, np.ndarray) and (dt is None or dt.np == data.dtype) and \
            resolve(device).type == "cpu":
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with numpy array `a` (zero-copy); TypeError on other input or
    an unsupported dtype."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.from_numpy(a.dtype)
    return Tensor._make(a)


def meta_or_none(shape: tuple, dt: D.DType, device, requires_grad=False, out=None):
    """A new tensor of `shape` and `dt` on the meta device when `device` (or the default
    device) is meta and there is no `out`: no data is made, no random number drawn (as
    PyTorch's factories on meta); None otherwise."""
    if out is None and resolve(device).type == "meta":
        return Tensor._make(MetaArray(shape, dt.np), requires_grad)
    return None


def _filled(size, value, dtype, device, requires_grad, out):
    dt = _dtype_or_default(dtype)
    shape = _sizes(size)
    t = meta_or_none(shape, dt, device, requires_grad, out)
    if t is not None:
        return t
    return _finish(np.full(shape, value, dt.np), device, requires_grad, out)


def zeros(*size, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of shape `size` (ints or one sequence); default float dtype."""
    return _filled(size, 0, dtype, device, requires_grad, out)


def ones(*size, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of shape `size`; default float dtype."""
    return _filled(size, 1, dtype, device, requires_grad, out)


def empty(*size, out=None, dtype=None, device=None, requires_grad=False,
          memory_format=None) -> Tensor:
    """A tensor of shape `size` whose values are unspecified (here: zeros)."""
    return _filled(size, 0, dtype, device, requires_grad, out)


def full(size, fill_value, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """`fill_value` everywhere; dtype from the value (bool, int64, default float/complex)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = D.default_for_category(D.scalar_category(fill_value))
    return _filled((size,), fill_value, dtype, device, requires_grad, out)


def _like(t: Tensor, value, dtype, device, requires_grad):
    return _filled((tuple(t.shape),), value, dtype or t.dtype,
                   device if device is not None else t.device, requires_grad, None)


def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _like(input, 0, dtype, device, requires_grad)


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return _like(input, 1, dtype, device, requires_grad)


def empty_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _like(input, 0, dtype, device, requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return _like(input, fill_value, dtype, device, requires_grad)


def _number(v):
    return v.item() if isinstance(v, Tensor) else v


def arange(start, end=None, step=1, *, out=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Values in [start, end) spaced by `step` (computed in float64, as PyTorch's double
    accumulation); int64 unless an argument is a float. RuntimeError for step 0 or a step of
    the wrong sign."""
    start, end, step = _number(start), _number(end), _number(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        anyfloat = any(isinstance(v, float) for v in (start, end, step))
        dtype = D.get_default_dtype() if anyfloat else D.int64
    dt = D.to_dtype(dtype)
    n = max(0, math.ceil((end - start) / step))
    if dt.category <= D.INTEGER and all(isinstance(v, int) for v in (start, end, step)):
        arr = np.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dt.np)
    else:
        arr = (start + step * np.arange(n, dtype=np.float64)).astype(dt.np)
    return _finish(arr, device, requires_grad, out)


def _fma(a, b, c):
    """`a * b + c` rounded once, as a fused multiply-add (float64 arrays; Dekker's error-free
    product and Knuth's two-sum, exact but for a rare double rounding)."""
    p = a * b
    with np.errstate(over="ignore", invalid="ignore"):
        t = 134217729.0 * a  # Veltkamp split into 26-bit halves
        ah = t - (t - a)
        t = 134217729.0 * b
        bh = t - (t - b)
        al, bl = a - ah, b - bh
        pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        z = s - p
        se = (p - (s - z)) + (c - z)
        r = s + (pe + se)
    return np.where(np.isfinite(r), r, s)


def _linspace_values(start, end, steps: int, dt: D.DType):
    """PyTorch's CPU linspace kernel: `start + step * i` for the first half and
    `end - step * (steps - 1 - i)` for the rest, with `step = (end - start) / (steps - 1)`;
    float32/float64 in the output's precision with the multiply-add fused (as ATen's compiled
    kernel: values agree bit for bit); integer dtypes truncate the end points, then compute in
    float64 and truncate; float16/bfloat16 round every operation to the dtype (c10::Half)."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps == 0:
        return np.empty(0, dt.np)
    if steps == 1:
        return np.full(1, start, dt.np)
    idx = np.arange(steps, dtype=np.float64)
    half = steps // 2
    upper = idx >= half  # these count back from the end
    k = np.where(upper, idx - (steps - 1), idx)  # signed distance to that end point
    if dt.category == D.FLOATING and dt.itemsize < 4:  # Half: each op in float, then rounded
        def h(v):
            return np.asarray(v, np.float32).astype(dt.np).astype(np.float32)
        s, e = h(np.float64(start).astype(dt.np)), h(np.float64(end).astype(dt.np))
        step = h(h(e - s) / h(steps - 1))
        base = np.where(upper, e, s).astype(np.float32)
        return h(base + h(step * h(k))).astype(dt.np)
    if dt.category <= D.INTEGER:
        s, e = float(math.trunc(start)), float(math.trunc(end))
        step = (e - s) / (steps - 1)
    else:
        ct = np.float64 if dt is D.float64 else np.float32
        s, e = float(ct(start)), float(ct(end))
        step = float((ct(e) - ct(s)) / ct(steps - 1))
    base = np.where(upper, e, s)
    vals = _fma(np.full(steps, step), k, base)
    if dt.category <= D.INTEGER:
        vals = np.trunc(vals)
    return vals.astype(dt.np)


def linspace(start, end, steps, *, out=None, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end` inclusive; default float dtype
    (the default complex dtype when an end point is complex)."""
    start, end = _number(start), _number(end)
    if dtype is None:
        dtype = D.default_complex_dtype() if isinstance(start, complex) or \
            isinstance(end, complex) else D.get_default_dtype()
    dt = D.to_dtype(dtype)
    arr = np.linspace(start, end, int(steps)).astype(dt.np) if dt.is_complex else \
        _linspace_values(start, end, int(steps), dt)
    return _finish(arr, device, requires_grad, out)


def _c_pow(x: float, y: float) -> float:
    """C's `pow(x, y)` (libm, through `math.pow`): nan for a negative base and a fractional
    exponent, +-inf on overflow."""
    try:
        return math.pow(x, y)
    except ValueError:
        return math.nan
    except OverflowError:
        return math.copysign(math.inf, x) if float(y).is_integer() and y % 2 == 1 else math.inf


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """`base ** linspace(start, end, steps)`; default float dtype. As ATen's CPU kernel: the
    end points in the output dtype, `step = float64(end - start) / (steps - 1)`, the exponents
    `start + step * i` / `end - step * (steps - 1 - i)` in float64, `pow` as C's (the platform
    libm's, as ATen calls it: numpy's own float64 power differs in the last bit), then cast."""
    dt = _dtype_or_default(dtype)
    steps = int(steps)
    if dt.is_complex or steps < 2:
        exps = _linspace_values(_number(start), _number(end), steps,
                                dt if dt.category >= D.FLOATING else D.float64)
        arr = np.power(complex(base) if dt.is_complex else float(base), exps)
        return _finish(arr.astype(dt.np), device, requires_grad, out)
    if dt.category <= D.INTEGER:
        s, e = math.trunc(_number(start)), math.trunc(_number(end))
        diff = float(e - s)
    else:
        s, e = np.array([_number(start), _number(end)], np.float64).astype(dt.np)
        diff = float(e - s)  # in the dtype (c10::Half arithmetic rounds to half)
    idx = np.arange(steps, dtype=np.float64)
    upper = idx >= steps // 2
    k = np.where(upper, idx - (steps - 1), idx)
    exps = np.where(upper, float(e), float(s)) + (diff / (steps - 1)) * k
    arr = np.fromiter((_c_pow(float(base), x) for x in exps.tolist()), np.float64, steps)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt.category <= D.INTEGER:
            arr = np.trunc(arr)
        return _finish(arr.astype(dt.np), device, requires_grad, out)


def eye(n, m=None, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The n x m identity (m defaults to n); default float dtype."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n if n < 0 else m}")
    dt = _dtype_or_default(dtype)
    return _finish(np.eye(int(n), int(n if m is None else m), dtype=dt.np), device,
                   requires_grad, out)

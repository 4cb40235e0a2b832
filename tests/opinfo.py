"""Sample inputs for every registry op, derived from the op's metadata (OpInfo-style).

Used by the eager-vs-reference matrix, gradcheck, the eager-vs-compiled matrix and the IR tests,
so that a new op declared in the registry is tested without writing a test for it.

- `dtypes_of(op)`: the dtypes the op is tested at: `op.test_dtypes`, else every dtype of
  `ir.dtypes.ALL` its promotion rule accepts (a `Promo` knows what PyTorch refuses), so new dtypes
  enter the matrix as they are added; `unsupported_dtypes(op)` gives the refused ones with the
  reason (tested as error cases).
- `samples(op, dtype)`: (operands, attrs) with numpy arrays and Python numbers.
- `torch_call(torch, op, inputs, attrs)`: the same call in PyTorch; `torch_call_forms` for
  the ops of the other families (shape, indexing, linalg...).
- `numeric_grad(f, arrays, i)`: a central-difference gradient.
"""

from __future__ import annotations

import numpy as np

import ir
from ir import dtypes as D

ALL_DTYPES = tuple(D.ALL)
DEFAULT_DTYPES = tuple(d for d in D.ALL if d.category in (D.INTEGER, D.FLOATING)
                       and d in (D.int64, D.float32, D.float64))
HALF = tuple(getattr(D, "HALF", ()))
_PASS_THROUGH = ("where", "cast", "clone", "reshape", "view", "transpose", "unsqueeze",
                 "expand")


def record_op(g, name, *args, **kwargs):
    """Add registry op `name` to graph `g` as capture records it (bound, canonical attrs,
    the op's meta); returns the node. Shared by the codegen tests that build graphs by hand."""
    op = ir.REGISTRY[name]
    inputs, attrs = op.bind(args, kwargs)
    metas = tuple(a.meta["val"] if isinstance(a, ir.Node) else a for a in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    return g.call_function(op, inputs, attrs, val=op.meta(metas, attrs))


def _promo_rule(op):
    p = op.promotion
    return p if hasattr(p, "supports") else None


def dtypes_of(op) -> tuple:
    """The dtypes `op` is tested at (see the module docstring)."""
    if op.test_dtypes is not None:
        return tuple(op.test_dtypes)
    rule = _promo_rule(op)
    if rule is not None:
        return tuple(d for d in ALL_DTYPES if rule.supports(d))
    if op.promotion == "always_bool" or op.name in _PASS_THROUGH:
        return ALL_DTYPES
    return DEFAULT_DTYPES


def unsupported_dtypes(op) -> tuple:
    """(dtype, reason) pairs for dtypes PyTorch refuses for `op` (its Promo says so)."""
    rule = _promo_rule(op)
    if rule is None or op.test_dtypes is not None:
        return ()
    return tuple((d, f"{op.name} has no {d.name} kernel in PyTorch") for d in ALL_DTYPES
                 if not rule.supports(d))


def make_array(rng, shape, dtype, domain=(None, None)):
    """Random data of `dtype` within `domain` (lo, hi) for floats; small integers otherwise."""
    lo, hi = domain
    if dtype is D.bool_:
        return rng.random(shape) < 0.5
    if dtype.category == D.INTEGER:
        a = 1 if (lo is not None and lo > 0) or not dtype.is_signed else -5
        return rng.integers(a, 6, size=shape).astype(dtype.np)
    if dtype.category == D.COMPLEX:
        real = make_array(rng, shape, dtype.to_real() if hasattr(dtype, "to_real") else
                          D.float64, domain)
        imag = make_array(rng, shape, D.float32, (-0.5, 0.5))
        return (real + 1j * imag).astype(dtype.np)
    if lo is not None or hi is not None:
        lo = -3.0 if lo is None else lo
        hi = 3.0 if hi is None else hi
        return rng.uniform(lo, hi, size=shape).astype(dtype.np)
    return rng.standard_normal(shape).astype(dtype.np)


def _scalar_for(dtype, domain):
    if dtype is D.bool_:
        return True
    if dtype.category == D.INTEGER:
        return 2
    return 1.5 if domain[0] is None or domain[0] <= 1.5 else domain[0] + 0.25


def samples(op, dtype, seed=0):
    """Yield (operands, attrs) with numpy arrays / Python numbers for `op` at `dtype`."""
    rng = np.random.default_rng(seed)
    if op.sample_inputs is not None:
        yield from op.sample_inputs(rng, dtype)
        return
    arr = lambda shape, dt=dtype: make_array(rng, shape, dt, op.domain)
    if op.kind == "elementwise":
        for attrs in op.samples:
            if op.name == "where":
                yield (arr((3, 4), D.bool_), arr((3, 4)), arr((4,))), attrs
                yield (arr((3, 1), D.bool_), arr((3, 4)), _scalar_for(dtype, op.domain)), attrs
            elif op.nin == 1:
                yield (arr((3, 4)),), attrs
                yield (arr((2, 1, 5)),), attrs
            elif op.nin == 3:
                yield (arr((3, 4)), arr((4,)), arr((3, 1))), attrs
                if op.scalar_ok:  # lerp's weight as a number
                    yield (arr((3, 4)), arr((3, 4)), 0.25), attrs
                    yield (arr((2, 3)), arr((2, 3)), 0.75), attrs
            else:
                yield (arr((3, 4)), arr((4,))), attrs
                yield (arr((3, 1)), arr((1, 4))), attrs
                if op.scalar_ok:
                    yield (arr((3, 4)), _scalar_for(dtype, op.domain)), attrs
                    yield (_scalar_for(dtype, op.domain), arr((2, 3))), attrs
    elif op.kind in ("reduction", "composite", "scan"):
        for attrs in op.samples:
            yield (arr((3, 4, 5)),), attrs
    elif op.kind == "matmul":
        for sa, sb in [((3, 4), (4, 5)), ((4,), (4, 5)), ((2, 3, 4), (4,)),
                       ((2, 3, 4), (1, 4, 2)), ((4,), (4,))]:
            yield (arr(sa), arr(sb)), {}
    elif op.kind == "view":
        for attrs in op.samples:
            yield (arr((3, 4)),), attrs
    else:
        raise NotImplementedError(f"no samples for op kind {op.kind}")


def all_cases(filter_fn=lambda op: True):
    """(op, dtype) pairs of the whole registry, as pytest params."""
    return [(op, dt) for op in ir.REGISTRY.values() if filter_fn(op) for dt in dtypes_of(op)]


def case_id(case) -> str:
    op, dt = case
    return f"{op.name}-{dt.name}"


# ---------------------------------------------------------------- the same call in PyTorch


class NoTorchCounterpart(LookupError):
    """The op has no PyTorch function to compare with (an internal wick op)."""

def _known():
    from ir.ops import activations, elementwise, reductions, statistics, unary  # noqa: F401

    mine = ("ir.ops.elementwise", "ir.ops.declare", "ir.ops.unary", "ir.ops.activations",
            "ir.ops.reductions", "ir.ops.pnorm", "ir.ops.statistics")
    return {op.name for op in ir.REGISTRY.values()
            if getattr(op.scalar or op.impl or op.decomp, "__module__", "") in mine} | {
        "matmul", "reshape", "view", "transpose", "unsqueeze", "expand"}


# ops whose PyTorch home is torch.nn.functional
_FUNCTIONAL = {"gelu", "relu6", "leaky_relu", "elu", "hardtanh", "silu", "mish", "softplus",
               "softsign", "hardsigmoid", "hardswish", "logsigmoid", "tanhshrink", "threshold",
               "celu", "selu"}


def _t(torch, x):
    if isinstance(x, np.ndarray):
        if x.dtype.name == "bfloat16":  # numpy has no bfloat16: go through float32
            return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(np.array(x))  # a copy; keeps 0-d arrays 0-d
    return x


_KNOWN: set = set()


def torch_call(torch, op, inputs, attrs):
    """The same op in PyTorch (the reference implementation whose semantics wick mirrors).
    Returns a tensor, or a tuple of tensors for ops with several outputs."""
    if not _KNOWN:
        _KNOWN.update(_known())
    t = [_t(torch, x) for x in inputs]
    name = op.name
    kw = {k: v for k, v in attrs.items() if v is not None}
    if name == "cast":
        return t[0].to(getattr(torch, attrs["dtype"].name))
    if name in _FUNCTIONAL:
        return getattr(torch.nn.functional, name)(*t, **kw)
    if name in ("view", "reshape"):
        return getattr(t[0], name)(attrs["shape"])
    if name == "expand":
        return t[0].expand(attrs["size"])
    if name in ("amax", "amin"):
        return getattr(torch, name)(t[0], attrs.get("dim", ()), attrs.get("keepdim", False))
    if name in ("sum", "mean", "nansum", "nanmean", "prod", "all", "any", "argmax",
                "argmin", "count_nonzero", "median", "nanmedian", "max", "min") \
            and attrs.get("dim") is None:
        if name not in ("argmax", "argmin"):
            kw.pop("keepdim", None)
        return getattr(torch, name)(t[0], **kw)
    if name == "_order_index":
        return getattr(torch, attrs["which"])(t[0], attrs["dim"], attrs["keepdim"]).indices
    if name == "_scan_index":
        return getattr(torch, attrs["which"])(t[0], attrs["dim"]).indices
    if name == "quantile":
        q = attrs["q"]
        kw["q"] = torch.tensor(q, dtype=t[0].dtype) if isinstance(q, tuple) else q
        return torch.quantile(t[0], **kw)
    if name == "norm" and isinstance(attrs.get("dim"), tuple) and len(attrs["dim"]) == 2:
        kw["p"] = attrs.get("p", "fro")
        return torch.linalg.vector_norm(t[0], ord=kw.pop("p"), **kw)
    if name in ("clamp_min", "clamp_max") and not isinstance(t[1], torch.Tensor):
        return getattr(torch, name)(t[0], t[1])
    if name == "clamp" and not isinstance(t[0], torch.Tensor):
        t[0] = torch.tensor(t[0])
    if name not in _KNOWN:
        return _tuple(_other_family_call(torch, op, inputs, attrs))
    fn = _torch_function(torch, op)
    if name in ("add", "sub") and not isinstance(t[0], torch.Tensor):
        return getattr(t[1], "__r" + name + "__")(t[0]) if kw.get("alpha", 1) == 1 else \
            fn(torch.tensor(t[0]), t[1], **kw)
    if not isinstance(t[0], torch.Tensor):
        dunder = {"div": "__rtruediv__", "pow": "__rpow__", "floor_divide": "__rfloordiv__",
                  "remainder": "__rmod__", "mul": "__rmul__", "bitwise_and": "__rand__",
                  "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
                  "bitwise_left_shift": "__rlshift__", "bitwise_right_shift": "__rrshift__"}
        if name in dunder and not kw:
            return getattr(t[1], dunder[name])(t[0])
        t[0] = torch.tensor(t[0])
    return _tuple(fn(*t, **kw))


def _other_family_call(torch, op, inputs, attrs):
    """Ops declared by the other families (shape, join, indexing, scatter, sorting, linalg,
    matrix, complex): basic and advanced indexing as `Tensor.__getitem__`, everything else
    through the call forms of `torch_call_forms` (variadic operands as a list,
    einsum's equation first, torch.linalg, nn.functional, Tensor methods, positional sizes).
    Internal ops (`_linalg_svd`, `_index_put`...) raise NoTorchCounterpart: the public op
    built on them is compared instead."""
    name = op.name
    if name.startswith("_"):
        raise NoTorchCounterpart(f"{name} is internal to wick: the public op built on it is "
                                 f"compared with PyTorch")
    if name == "getitem":
        return _t(torch, inputs[0])[attrs["index"]]
    if name == "index":
        x, *idx = [_t(torch, v) for v in inputs]
        key = [slice(None)] * x.ndim
        for d, i in zip(attrs["dims"], idx):
            key[d] = i
        return x[tuple(key)]
    return torch_call_forms(torch, op, inputs, attrs)


POSITIONAL = {"view": "shape", "reshape": "shape", "expand": "size", "repeat": "repeats",
              "permute": "dims", "tensor_split": "indices_or_sections"}


def torch_call_forms(torch, op, inputs, attrs):
    """The same call in PyTorch: function, nn.functional, torch.linalg or Tensor method
    (variadic operands as a list, einsum's equation first, positional sizes)."""
    name, t, kw = op.name, [_t(torch, x) for x in inputs], dict(attrs)
    if name in POSITIONAL:
        t.append(kw.pop(POSITIONAL[name]))
    if name == "einsum":
        return torch.einsum(kw.pop("equation"), *t)
    if name == "broadcast_tensors":
        return torch.broadcast_tensors(*t)
    if op.variadic:
        home = torch.linalg if name.startswith("linalg_") else torch
        return getattr(home, name.removeprefix("linalg_"))(t, **kw)
    if name.startswith("linalg_"):  # complex results may carry the conjugate bit
        return _resolve_conj(torch, getattr(torch.linalg, name[len("linalg_"):])(*t, **kw))
    if name.startswith("fft_"):  # torch.fft.<name>; ihfft's result has the conjugate bit
        return getattr(torch.fft, name[len("fft_"):])(*t, **kw).resolve_conj()
    if name in ("pad", "linear", "nll_loss"):
        return getattr(torch.nn.functional, name)(*t, **kw)
    if name.startswith("special_"):  # torch.special.<name>
        return getattr(torch.special, name[len("special_"):])(*t, **kw)
    if name == "polygamma":  # torch.polygamma(n, input)
        return torch.polygamma(kw.pop("n"), *t)
    fn = getattr(torch, name, None)
    return _resolve_conj(torch, fn(*t, **kw) if fn is not None else
                         getattr(t[0], name)(*t[1:], **kw))


def _resolve_conj(torch, out):
    """PyTorch's result with lazy conjugations materialized (tuples element by element)."""
    if isinstance(out, torch.Tensor):
        return out.resolve_conj()
    if isinstance(out, tuple):
        return tuple(_resolve_conj(torch, o) for o in out)
    return out


def numeric_grad(f, arrays, i, eps=1e-6):
    """d f(arrays) / d arrays[i] by central differences (`f` returns a float; arrays[i] is
    perturbed in place and restored)."""
    x = arrays[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = f(arrays)
        x[idx] = old - eps
        lo = f(arrays)
        x[idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


def _tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else out


def _torch_function(torch, op):
    """torch.<name>, torch.linalg.<name without linalg_>, torch.nn.functional.<name>, or the
    Tensor method; NoTorchCounterpart when none exists."""
    name = op.name
    if name.startswith("linalg_") and hasattr(torch.linalg, name[7:]):
        return getattr(torch.linalg, name[7:])
    for home in (torch, torch.nn.functional):
        if hasattr(home, name):
            return getattr(home, name)
    if hasattr(torch.Tensor, name):
        return getattr(torch.Tensor, name)
    raise NoTorchCounterpart(f"{name} has no PyTorch counterpart to compare with")


"""Sample inputs for every registry op, derived from the op's metadata (OpInfo-style).

Used by the eager-vs-reference matrix, gradcheck and the eager-vs-compiled matrix, so that a
new op declared in the registry is tested without writing a test for it.
"""

from __future__ import annotations

import numpy as np

import ir
from ir import dtypes as D

ALL_DTYPES = (D.bool_, D.int64, D.float32, D.float64)
DEFAULT_DTYPES = (D.int64, D.float32, D.float64)


def dtypes_of(op) -> tuple:
    if op.test_dtypes is not None:
        return op.test_dtypes
    if op.promotion == "always_bool" or op.name in ("where", "cast", "clone", "reshape", "view",
                                                    "transpose", "unsqueeze", "expand"):
        return ALL_DTYPES
    return DEFAULT_DTYPES


def make_array(rng, shape, dtype, domain=(None, None)):
    lo, hi = domain
    if dtype is D.bool_:
        return rng.random(shape) < 0.5
    if dtype is D.int64:
        a, b = (1 if lo is not None and lo > 0 else -5), 6
        return rng.integers(a, b, size=shape).astype(np.int64)
    if lo is not None or hi is not None:
        lo = -3.0 if lo is None else lo
        hi = 3.0 if hi is None else hi
        return rng.uniform(lo, hi, size=shape).astype(dtype.np)
    return rng.standard_normal(shape).astype(dtype.np)


def _scalar_for(dtype, domain):
    if dtype is D.bool_:
        return True
    if dtype is D.int64:
        return 2
    return 1.5 if domain[0] is None or domain[0] <= 1.5 else domain[0] + 0.25


def samples(op, dtype, seed=0):
    """Yield (operands, attrs) with numpy arrays / Python numbers for `op` at `dtype`."""
    rng = np.random.default_rng(seed)
    if op.sample_inputs is not None:
        yield from op.sample_inputs(rng, dtype)
        return
    arr = lambda shape, dt=dtype: make_array(rng, shape, dt, op.domain)  # noqa: E731
    if op.kind == "elementwise":
        for attrs in op.samples:
            if op.name == "where":
                yield (arr((3, 4), D.bool_), arr((3, 4)), arr((4,))), attrs
                yield (arr((3, 1), D.bool_), arr((3, 4)), _scalar_for(dtype, op.domain)), attrs
            elif op.nin == 1:
                yield (arr((3, 4)),), attrs
                yield (arr((2, 1, 5)),), attrs
            else:
                yield (arr((3, 4)), arr((4,))), attrs
                yield (arr((3, 1)), arr((1, 4))), attrs
                if op.scalar_ok:
                    yield (arr((3, 4)), _scalar_for(dtype, op.domain)), attrs
                    yield (_scalar_for(dtype, op.domain), arr((2, 3))), attrs
    elif op.kind in ("reduction", "composite"):
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


def torch_call(torch, op, inputs, attrs):
    """The same op in PyTorch (the reference implementation whose semantics wick mirrors)."""
    t = [torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
         for x in inputs]
    name = op.name
    if name == "cast":
        return t[0].to(getattr(torch, attrs["dtype"].name))
    if name == "gelu":
        return torch.nn.functional.gelu(t[0], **attrs)
    if name in ("view", "reshape"):
        return getattr(t[0], name)(attrs["shape"])
    if name == "expand":
        return t[0].expand(attrs["size"])
    if name == "amax":
        return torch.amax(t[0], attrs.get("dim", ()), attrs.get("keepdim", False))
    if name in ("sum", "mean") and attrs.get("dim") is None:
        return getattr(torch, name)(t[0])
    kw = {k: v for k, v in attrs.items() if v is not None}
    fn = getattr(torch, name)
    if name in ("add", "sub") and not isinstance(t[0], torch.Tensor):
        return getattr(t[1], "__r" + name + "__")(t[0]) if kw.get("alpha", 1) == 1 else \
            fn(torch.tensor(t[0]), t[1], **kw)
    if not isinstance(t[0], torch.Tensor):
        t[0] = torch.tensor(t[0])
    return fn(*t, **kw)

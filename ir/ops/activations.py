"""Activation functions (`torch.nn.functional`): relu and friends, as registry ops.

Hot ones (relu, leaky_relu, elu, silu, gelu, softplus, hardtanh, hardsigmoid, hardswish, mish,
logsigmoid...) are elementwise primitives with a `scalar` formula, so that eager runs them in one
pass and codegen fuses them; composites (relu6, softsign, tanhshrink, selu, celu) decompose into
those. Formulas and derivatives follow PyTorch's kernels and derivatives.yaml; `eager.nn.
functional` adds the `inplace=` keyword on top. Imports only `ir` and numpy/scipy.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, register
from .elementwise import BOOL, COMPLEX, INTEGER, Promo, _attr_samples, _conj, float_ref

SQRT1_2 = 0.7071067811865476
SQRT_2_PI = 0.7978845608028654  # sqrt(2 / pi)
INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
FLOAT_ONLY = (BOOL, INTEGER, COMPLEX)


def activation(name, sig, scalar, backward, ref, reject=FLOAT_ONLY, kind="default", **kw):
    """Declare an elementwise activation (a function of `input` and number attributes)."""
    kw.setdefault("method", False)
    return register(OpDef(name, "elementwise", sig, 1, Promo(name, kind, reject), scalar=scalar,
                          backward=backward, ref=float_ref(ref, False), **kw))


register(OpDef(
    "relu", "elementwise", "input", 1,
    Promo("relu", reject=(BOOL, COMPLEX), error=(RuntimeError,
                                                 "Boolean inputs not supported for relu")),
    scalar=lambda b, x: b.maximum(x, 0),
    # PyTorch's threshold_backward(g, result, 0): 0 where result <= 0, else g (even inf/NaN g;
    # a NaN result passes g). A relu result is never negative, so "not <= 0" is "!= 0": one
    # comparison, and where(mask, g, +0.0) is g's bits times the mask (elementwise._where_impl)
    backward=lambda F, g, out, x: (F.where(F.ne(out, 0), g, 0.0),),
    ref=lambda x: np.maximum(x, 0),
))


def _hardtanh_attrs(inputs, attrs):
    if attrs["min_val"] > attrs["max_val"]:
        raise ValueError("min_val cannot be greater than max_val")
    if inputs[0].dtype.np.kind == "u" and (attrs["min_val"] < 0 or attrs["max_val"] < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return attrs


def _threshold_attrs(inputs, attrs):
    dt = inputs[0].dtype
    if dt.np.kind in "iu":
        info = np.iinfo(dt.np)
        for name in ("threshold", "value"):
            if not info.min <= attrs[name] <= info.max:
                raise RuntimeError(f"{name} cannot be converted to type {dt.np.name}_t without "
                                   "overflow")
    return attrs


activation(
    "hardtanh", "input, min_val=-1.0, max_val=1.0",
    lambda b, x, min_val=-1.0, max_val=1.0: b.minimum(b.maximum(x, _like(b, min_val, x)),
                                                       _like(b, max_val, x)),
    lambda F, g, out, x, min_val=-1.0, max_val=1.0: (
        F.where(F.logical_and(F.gt(x, min_val), F.lt(x, max_val)), g, 0.0),),
    lambda x, min_val=-1.0, max_val=1.0: np.clip(x, *((int(min_val), int(max_val)) if
                                                      x.dtype.kind in "iu" else
                                                      (min_val, max_val))),
    reject=(BOOL, COMPLEX), attrs_rule=_hardtanh_attrs,
    sample_inputs=_attr_samples(lambda dt: ({"min_val": 0.0, "max_val": 2.0},) if
                                dt.np.kind == "u" else ({}, {"min_val": -0.5, "max_val": 2.0}),
                                1),
)
register(OpDef(
    "relu6", "composite", "input", 1, decomp=lambda F, x: F.hardtanh(x, 0.0, 6.0),
    ref=lambda x: np.clip(x, 0, 6), method=False,
))
activation(
    "leaky_relu", "input, negative_slope=0.01",
    lambda b, x, negative_slope=0.01: b.where(b.gt(x, 0), x, b.mul(x, negative_slope)),
    lambda F, g, out, x, negative_slope=0.01: (
        F.where(F.gt(x, 0), g, F.mul(g, negative_slope)),),
    lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
    samples=({}, {"negative_slope": 0.2}),
)


def _elu_scalar(b, x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = b.mul(b.expm1(b.mul(x, input_scale)), alpha * scale)
    return b.where(b.gt(x, 0), b.mul(x, scale) if scale != 1.0 else x, neg)


def _elu_backward(F, g, out, x, alpha=1.0, scale=1.0, input_scale=1.0):
    dneg = F.mul(F.exp(F.mul(x, input_scale)), alpha * scale * input_scale)
    return (F.mul(g, F.where(F.gt(x, 0), scale, dneg)),)


def _elu_ref(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return np.where(x > 0, x * scale, alpha * scale * np.expm1(x * input_scale))


activation("elu", "input, alpha=1.0", _elu_scalar, _elu_backward, _elu_ref,
           samples=({}, {"alpha": 0.5}))
register(OpDef(
    "selu", "composite", "input", 1,
    decomp=lambda F, x: F.mul(F.elu(x, SELU_ALPHA), SELU_SCALE),
    ref=lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), method=False,
    test_dtypes=(D.float32, D.float64),
))


def _celu_attrs(inputs, attrs):
    if attrs["alpha"] == 0:
        raise RuntimeError("ZeroDivisionError")
    return attrs


register(OpDef(
    "celu", "composite", "input, alpha=1.0", 1, attrs_rule=_celu_attrs,
    decomp=lambda F, x, alpha=1.0: F.where(F.gt(x, 0), x, F.mul(F.expm1(F.div(x, alpha)), alpha)),
    ref=lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x / alpha)), method=False,
    samples=({}, {"alpha": 2.0}), test_dtypes=(D.float32, D.float64),
))


def _gelu_scalar(b, x, approximate="none"):
    if approximate == "tanh":
        inner = b.mul(b.add(x, b.mul(b.mul(b.mul(x, x), x), 0.044715)), SQRT_2_PI)
        return b.mul(b.mul(x, 0.5), b.add(b.tanh(inner), 1.0))
    return b.mul(b.mul(x, 0.5), b.add(b.erf(b.mul(x, SQRT1_2)), 1.0))


def _gelu_backward(F, g, out, x, approximate="none"):
    if approximate == "tanh":
        x2 = F.mul(x, x)
        t = F.tanh(F.mul(F.add(x, F.mul(F.mul(x2, x), 0.044715)), SQRT_2_PI))
        dinner = F.mul(F.add(F.mul(x2, 3 * 0.044715), 1.0), SQRT_2_PI)
        d = F.add(F.mul(F.add(t, 1.0), 0.5),
                  F.mul(F.mul(F.mul(x, 0.5), F.sub(1.0, F.mul(t, t))), dinner))
        return (F.mul(g, d),)
    cdf = F.mul(F.add(F.erf(F.mul(x, SQRT1_2)), 1.0), 0.5)
    pdf = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), INV_SQRT_2PI)
    return (F.mul(g, F.add(cdf, F.mul(x, pdf))),)


def _gelu_ref(x, approximate="none"):
    from scipy.special import erf

    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _gelu_attrs(inputs, attrs):
    if attrs["approximate"] not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{attrs['approximate']}")
    return attrs


activation("gelu", "input, approximate='none'", _gelu_scalar, _gelu_backward, _gelu_ref,
           attrs_rule=_gelu_attrs, samples=({}, {"approximate": "tanh"}))
activation(
    "silu", "input", lambda b, x: b.div(x, b.add(b.exp(b.neg(x)), 1.0)),
    lambda F, g, out, x: (F.mul(g, _conj(F, F.mul(F.sigmoid(x), F.add(F.mul(x, F.sub(
        1.0, F.sigmoid(x))), 1.0)))),),
    lambda x: x / (1 + np.exp(-x)), reject=(BOOL, INTEGER),
)


def _softplus_scalar(b, x, beta=1.0, threshold=20.0):
    bx = b.mul(x, beta) if beta != 1 else x
    soft = b.log1p(b.exp(bx))
    return b.where(b.gt(bx, threshold), x, b.div(soft, beta) if beta != 1 else soft)


def _softplus_backward(F, g, out, x, beta=1.0, threshold=20.0):
    bx = F.mul(x, beta)
    return (F.where(F.gt(bx, threshold), g, F.mul(g, F.sigmoid(bx))),)


def _softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


activation("softplus", "input, beta=1.0, threshold=20.0", _softplus_scalar, _softplus_backward,
           _softplus_ref, samples=({}, {"beta": 2.0, "threshold": 1.0}))


def _mish_scalar(b, x):
    return b.mul(x, b.tanh(b.log1p(b.exp(x))))


def _mish_backward(F, g, out, x):
    t = F.tanh(F.log1p(F.exp(x)))
    return (F.mul(g, F.add(t, F.mul(F.mul(x, F.sigmoid(x)), F.sub(1.0, F.mul(t, t))))),)


activation("mish", "input", _mish_scalar, _mish_backward,
           lambda x: x * np.tanh(np.log1p(np.exp(x))))
register(OpDef(
    "softsign", "composite", "input", 1,
    decomp=lambda F, x: F.div(x, F.add(F.abs(x), 1)),
    ref=float_ref(lambda x: x / (1 + np.abs(x))), method=False,
    test_dtypes=(D.int64, D.float32, D.float64),
))
activation(
    "hardsigmoid", "input",
    lambda b, x: b.div(b.minimum(b.maximum(b.add(x, 3.0), 0.0), 6.0), 6.0),
    lambda F, g, out, x: (F.where(F.logical_and(F.gt(x, -3.0), F.lt(x, 3.0)),
                                  F.div(g, 6.0), 0.0),),
    lambda x: np.clip(x + 3, 0, 6) / 6,
)
activation(
    "hardswish", "input",
    lambda b, x: b.div(b.mul(x, b.minimum(b.maximum(b.add(x, 3.0), 0.0), 6.0)), 6.0),
    lambda F, g, out, x: (F.where(F.lt(x, -3.0), 0.0, F.where(
        F.le(x, 3.0), F.mul(g, F.add(F.div(x, 3.0), 0.5)), g)),),
    lambda x: x * np.clip(x + 3, 0, 6) / 6,
)
activation(
    "logsigmoid", "input",
    lambda b, x: b.sub(b.minimum(x, 0.0), b.log1p(b.exp(b.neg(b.abs(x))))),
    lambda F, g, out, x: (F.mul(g, F.sigmoid(F.neg(x))),),
    lambda x: -np.logaddexp(0, -x),
)
register(OpDef(
    "tanhshrink", "composite", "input", 1, decomp=lambda F, x: F.sub(x, F.tanh(x)),
    ref=lambda x: x - np.tanh(x), method=False, test_dtypes=(D.float32, D.float64),
))
activation(
    "threshold", "input, threshold, value",
    lambda b, x, threshold, value: b.where(b.gt(x, threshold), x, _like(b, value, x)),
    lambda F, g, out, x, threshold, value: (F.where(F.gt(x, threshold), g, 0.0),),
    lambda x, threshold, value: np.where(x > threshold, x, value).astype(x.dtype),
    reject=(BOOL, COMPLEX), attrs_rule=_threshold_attrs,
    sample_inputs=_attr_samples(lambda dt: ({"threshold": 0.5, "value": 1.0 if dt.np.kind == "u"
                                             else -1.0}, {"threshold": 0, "value": 2}), 1),
)


def _like(b, v, x):
    """A number as `x`'s category: threshold's `value` is cast to the input dtype (PyTorch)."""
    return int(v) if b.dtype(x).category <= INTEGER and not isinstance(v, bool) else v



"""Autocast's cast policy: which ops run in the low-precision dtype, which in float32, which
at the widest input dtype, per device type (PyTorch's lists, aten/src/ATen/autocast_mode.cpp,
checked op by op against torch on the CPU), and the hook that applies it.

The policy is applied where an op is applied (under `capture`, where an op is recorded:
`capture/autocast.py` applies `decide` and records the casts as graph nodes): `eager.dispatch.apply` calls `autocast_hook`
(installed there only while some thread has an autocast region on) with every registry op;
Python-level functions of `nn.functional` that PyTorch lists (conv, the losses, layer_norm)
wear `autocast_function(name)`. A listed op gets its eligible tensor operands cast (floating,
not float64, on the region's device), then runs with autocast excluded, so its inner ops are
not cast again (PyTorch's `ExcludeDispatchKeyGuard` in its autocast wrappers); an op not listed
falls through and its decomposition's ops meet the policy one by one (einsum, tensordot ->
matmul run low precision, as in PyTorch). Imports `eager.dispatch` only.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types

from ir import dtypes as D

from .. import dispatch
from ..tensor import Tensor

# ---------------------------------------------------------------- the op lists

LOWER, FP32, FP32_OPT, PROMOTE, KEEP = "lower", "fp32", "fp32_opt", "promote", "keep"
LOWER_EMULATED = "lower_emulated"  # low-precision operands and result, float32 kernel

# CPU (torch 2.x `autocast_mode.cpp`, lower_precision_fp / fp32 / promote for CPU)
_CPU_LOWER = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "linear", "conv1d",
              "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "prelu", "linalg_vecdot", "scaled_dot_product_attention")
_CPU_FP32 = ("prod", "trace", "quantile", "nanquantile", "polar", "view_as_complex", "cdist",
             "linalg_cholesky", "linalg_inv", "linalg_qr", "linalg_svd", "linalg_svdvals",
             "linalg_eigh", "linalg_eigvalsh", "linalg_solve", "linalg_det", "linalg_slogdet",
             "linalg_eig", "linalg_lstsq", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
             "nll_loss", "cross_entropy", "binary_cross_entropy",
             "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
             "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
             "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
             "multilabel_margin_loss", "ctc_loss", "max_pool3d", "avg_pool3d",
             "adaptive_avg_pool3d", "grid_sample")
_CPU_PROMOTE = ("cat", "stack", "index_copy")
# ATen decomposes einsum into bmm (so it runs low precision); wick's einsum is one numpy
# kernel without half-precision support: rounded operands, float32 kernel, rounded result
_CPU_EMULATED = ("einsum",)
# ATen primitives that wick composes of listed ops (matmul): they run as is, as in torch
_KEEP = ("dot", "vdot", "mv")

# CUDA (torch 2.x `autocast_mode.cpp`, the CUDA lists)
_CUDA_LOWER = ("matmul", "mm", "mv", "bmm", "addmm", "addmv", "addr", "baddbmm", "addbmm",
               "linear", "einsum", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
               "conv_transpose2d", "conv_transpose3d", "prelu", "linalg_vecdot",
               "linalg_multi_dot", "chain_matmul", "scaled_dot_product_attention")
_CUDA_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
              "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm",
              "group_norm", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss",
              "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss",
              "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
              "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
              "binary_cross_entropy_with_logits", "cross_entropy", "dist", "pdist", "cdist",
              "renorm", "logsumexp", "linalg_norm")
# float32 unless the call gives an explicit `dtype=`
_CUDA_FP32_OPT = ("prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum",
                  "linalg_vector_norm", "linalg_matrix_norm", "norm")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot",
                 "index_put", "scatter_add", "tensordot")


def _table(*groups) -> dict:
    out = {}
    for kind, names in groups:
        for n in names:
            out[n] = kind
    return out


POLICY = {
    "cpu": _table((LOWER, _CPU_LOWER), (FP32, _CPU_FP32), (PROMOTE, _CPU_PROMOTE),
                  (KEEP, _KEEP), (LOWER_EMULATED, _CPU_EMULATED)),
    "cuda": _table((LOWER, _CUDA_LOWER), (FP32, _CUDA_FP32), (FP32_OPT, _CUDA_FP32_OPT),
                   (PROMOTE, _CUDA_PROMOTE)),
}
# PyTorch refuses these under CUDA autocast (unsafe in float16)
BANNED = {"cuda": {"binary_cross_entropy": (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional."
    "binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
    "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")}}

# ---------------------------------------------------------------- per-thread state


class _State(threading.local):
    """Autocast state of one thread (PyTorch keeps it thread-local too)."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": D.bfloat16, "cuda": D.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.excluded = False  # inside a listed op: its inner ops are not cast
        self.cache: dict = {}  # id(leaf) -> (leaf, cast): low-precision copies of parameters


STATE = _State()
_ACTIVE: set = set()  # threads with a region on: the dispatch hook is installed while any


def _noop_post_hook(op, inputs, attrs, out) -> None:
    """Registered in dispatch.POST_HOOKS while autocast is on: the fast paths (which skip
    `apply`, and so the policy) step aside whenever a post hook is present."""


_noop_post_hook.whole_composites = True  # (composites may still run whole: dispatch.apply)


def sync() -> None:
    """Install or remove the dispatch hook after this thread's state changed."""
    ident = threading.get_ident()
    if any(STATE.enabled.values()):
        _ACTIVE.add(ident)
    else:
        _ACTIVE.discard(ident)
    if _ACTIVE:
        dispatch.autocast_hook = autocast_hook
        if _noop_post_hook not in dispatch.POST_HOOKS:
            dispatch.POST_HOOKS.append(_noop_post_hook)
    else:
        dispatch.autocast_hook = None
        if _noop_post_hook in dispatch.POST_HOOKS:
            dispatch.POST_HOOKS.remove(_noop_post_hook)


def state_key():
    """This thread's autocast state as capture keys its graphs (and guards on it): None
    outside enabled regions (or inside a listed op), else a tuple of (device type, dtype
    name) for each enabled device type."""
    if dispatch.autocast_hook is None:
        return None
    st = STATE
    if st.excluded:
        return None
    return tuple((d, st.dtype[d].name) for d in ("cpu", "cuda") if st.enabled[d]) or None


# ---------------------------------------------------------------- casting


def _device_type(args) -> str | None:
    for a in args:
        if isinstance(a, Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            d = _device_type(a)
            if d is not None:
                return d
    return None


def _eligible(t, device_type: str) -> bool:
    """PyTorch's `is_eligible`: a floating tensor other than float64 on the region's device."""
    return (isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not D.float64
            and t.device.type == device_type)


def _is_param_like(t) -> bool:
    """A float32 leaf that requires grad (a parameter), or a view of one (`w.t()`, which
    recurrent layers make once and use at every step)."""
    if t.grad_fn is None:
        return t.requires_grad and t._base is None
    base = t._base
    return base is not None and base.grad_fn is None and base.requires_grad


def _cast(t, to, device_type: str):
    """PyTorch's `cached_cast`: `t` in dtype `to` when eligible; float32 parameters (and views
    of them, an extension: the same view object at the same version) are cast once per region
    (outermost exit clears the cache)."""
    if isinstance(t, (list, tuple)):
        return type(t)(_cast(x, to, device_type) for x in t)
    if not _eligible(t, device_type) or t.dtype is to:
        return t
    st = STATE
    cacheable = (st.cache_enabled and to is st.dtype[device_type] and t.dtype is D.float32
                 and _is_param_like(t))
    if cacheable:
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[2] == t._version:
            return hit[1]
    out = t.to(to)
    if cacheable:
        st.cache[id(t)] = (t, out, t._version)
    return out


def decide(name: str, dev: str, low, has_dtype: bool, operand_dtypes):
    """The policy for a call of `name` on device type `dev` in a region of dtype `low`: None
    when the policy does not list it, else (kind, dtype to cast eligible operands to, or None
    for no cast). `has_dtype`: the call gives an explicit `dtype=`; `operand_dtypes()`: the
    eligible operands' dtypes (read only for the widest-type ops). One rule for eager
    (`target_dtype`) and for capture (`capture/autocast.py`, which records the casts)."""
    kind = POLICY[dev].get(name)
    if kind is None:
        return None
    if name in BANNED.get(dev, ()):
        raise RuntimeError(BANNED[dev][name])
    if kind in (LOWER, LOWER_EMULATED):
        return kind, low
    if kind == FP32:
        return kind, D.float32
    if kind == FP32_OPT:
        return kind, (None if has_dtype else D.float32)
    if kind == KEEP:
        return kind, None
    for dt in operand_dtypes():
        low = D.promote_types(low, dt)
    return kind, low


def _dtypes(args, device_type: str):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _dtypes(a, device_type)
        elif _eligible(a, device_type):
            yield a.dtype


def target_dtype(name: str, args, kwargs: dict):
    """(device type, dtype to cast eligible operands to, or None for no cast) for a call of
    `name` under this thread's state, or None when the policy does not touch the call."""
    st = STATE
    if st.excluded:
        return None
    dev = _device_type(args)
    if dev is None or not st.enabled.get(dev, False):
        return None
    hit = decide(name, dev, st.dtype[dev], kwargs.get("dtype") is not None,
                 lambda: _dtypes(args, dev))
    return None if hit is None else (dev, hit[1])


def _run_excluded(fn, *args, **kwargs):
    st = STATE
    prev = st.excluded
    st.excluded = True
    try:
        return fn(*args, **kwargs)
    finally:
        st.excluded = prev


def autocast_hook(op, inputs: tuple, attrs: dict):
    """`eager.dispatch.autocast_hook` while autocast is on: op's result under the policy, or
    None (not listed, excluded, or no region on this thread / device)."""
    t = target_dtype(op.name, inputs, attrs)
    if t is None:
        return None
    dev, to = t
    if to is not None:
        inputs = tuple(_run_excluded(_cast, x, to, dev) for x in inputs)
    if POLICY[dev][op.name] == LOWER_EMULATED:
        inputs = tuple(_run_excluded(_cast, x, D.float32, dev) for x in inputs)
        return _run_excluded(lambda: dispatch.apply(op, inputs, attrs).to(to))
    return _run_excluded(dispatch.apply, op, inputs, attrs)


def _autocast_call(name: str, fn, args: tuple, kwargs: dict):
    """`fn(*args, **kwargs)` under the policy for `name` (see `autocast_function`)."""
    t = target_dtype(name, args + tuple(kwargs.values()), kwargs)
    if t is None:
        return fn(*args, **kwargs)
    dev, to = t
    if to is not None:
        args = _run_excluded(_cast, args, to, dev)
        kwargs = {k: _run_excluded(_cast, v, to, dev) for k, v in kwargs.items()}
    return _run_excluded(fn, *args, **kwargs)


_WRAPPER = """
def factory(hooks, call, name, fn):
    def wrapper({params}):
        if hooks.autocast_hook is None:
            return fn({forward})
        return call(name, fn, ({positional}), {{{keywords}}}{extra})
    return wrapper
"""


def _make_wrapper(name: str, fn):
    """A function with `fn`'s own signature (names, defaults, so `inspect.signature` and
    capture's argument binding see fn's), living in fn's module (its globals: capture inlines
    it as it does fn, an `eager.nn` composition), whose body tests for a region and calls fn
    directly or through `_autocast_call`."""
    params, forward, positional, keywords = [], [], [], []
    extra = ""
    star = None
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            params.append(p.name)
            forward.append(p.name)
            positional.append(p.name + ",")
        elif p.kind == p.VAR_POSITIONAL:
            star = p.name
            params.append("*" + p.name)
            forward.append("*" + p.name)
            positional.append("*" + p.name + ",")
        elif p.kind == p.KEYWORD_ONLY:
            if star is None:
                params.append("*")
                star = ""
            params.append(p.name)
            forward.append(f"{p.name}={p.name}")
            keywords.append(f"{p.name!r}: {p.name},")
        else:  # **kwargs
            params.append("**" + p.name)
            forward.append("**" + p.name)
            extra = f" | {p.name}"
    src = _WRAPPER.format(params=", ".join(params), forward=", ".join(forward),
                          positional=" ".join(positional), keywords=" ".join(keywords),
                          extra=extra)
    env: dict = {}
    exec(compile(src, f"<autocast wrapper of {fn.__qualname__}>", "exec"), env)  # noqa: S102
    made = env["factory"](dispatch, _autocast_call, name, fn)
    wrapper = types.FunctionType(made.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                 made.__closure__)
    wrapper.__kwdefaults__ = fn.__kwdefaults__
    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__  # (its own signature is fn's already)
    wrapper.__wick_autocast__ = (name, fn)  # (capture applies the policy around fn's body)
    return wrapper


def autocast_function(name: str):
    """Decorator for a Python-level function PyTorch's autocast lists under `name` (conv2d,
    mse_loss, ...): under an autocast region its tensor arguments (positional and keyword,
    also inside lists) are cast by the policy, and its body runs with autocast excluded.
    Outside any region it costs one test. The wrapper keeps fn's signature."""

    def wrap(fn):
        return _make_wrapper(name, fn)

    return wrap

"""`gradcheck` / `gradgradcheck`: gradients checked against finite differences.

PyTorch's `torch.autograd.gradcheck` semantics: every input that requires grad is perturbed
element by element (central differences, step `eps`); the numerical Jacobian is compared with
the analytical one from reverse mode (one vjp per output element, run twice to check that
backward is reentrant) and, with `check_forward_ad`, from forward mode (one jvp per input
element). Complex numbers are checked on real coordinates: a complex input is perturbed along
its real and its imaginary part, a complex output is read as its real and imaginary parts, and
under PyTorch's convention the gradient of a real quantity w.r.t. z = a + ib is d/da + i d/db.
A mismatch raises `GradcheckError` (a RuntimeError) showing both Jacobians, shaped
(input numel, output numel) as PyTorch prints them, and the mismatching entries.
`fast_mode=True` compares one random projection u^T J v instead of whole Jacobians.
`gradgradcheck` runs gradcheck on the function's vjp (built with `create_graph=True`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import grad_mode
from ..tensor import Tensor
from . import forward_ad
from .engine import grad as _grad


class GradcheckError(RuntimeError):
    """Raised by `gradcheck`/`gradgradcheck` when gradients do not match."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs) -> tuple:
    return tuple(o for o in _as_tuple(func(*inputs)))


def _values(func, inputs, outs_idx) -> dict:
    """Copies of the outputs' values (outputs may be views of the perturbed inputs)."""
    outs = _outputs(func, inputs)
    return {o: np.array(outs[o]._data, dtype=np.complex128) for o in outs_idx}


def _diff_outputs(outs):
    return [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.dtype.category >= 2]


def _parts(t: Tensor) -> tuple:
    return ("real", "imag") if t.dtype.is_complex else ("real",)


def _read(a: np.ndarray, part: str) -> np.ndarray:
    a = np.asarray(a)
    return (a.imag if part == "imag" else a.real).reshape(-1).astype(np.float64)


def _fail(msg: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _numerical(func, inputs, diff_in, outs_idx, eps):
    """{(o, opart, i, ipart): array (n_in, n_out)} by central differences."""
    jac = {}
    with grad_mode.no_grad():
        base = _outputs(func, inputs)
        for i in diff_in:
            x = inputs[i]
            data = x._data
            for ip in _parts(x):
                step = eps if ip == "real" else eps * 1j
                cols = {(o, op): np.zeros((x.numel(), base[o].numel()))
                        for o in outs_idx for op in _parts(base[o])}
                for k, idx in enumerate(np.ndindex(data.shape)):
                    orig = data[idx].copy()
                    data[idx] = orig + step
                    plus = _values(func, inputs, outs_idx)
                    data[idx] = orig - step
                    minus = _values(func, inputs, outs_idx)
                    data[idx] = orig
                    for o in outs_idx:
                        d = (plus[o] - minus[o]) / (2 * eps)
                        for op in _parts(base[o]):
                            cols[(o, op)][k] = _read(d, op)
                for (o, op), m in cols.items():
                    jac[(o, op, i, ip)] = m
    return jac


def _analytical(func, inputs, diff_in, outs_idx):
    """{(o, opart, i, ipart): array (n_in, n_out)} from reverse mode, and the raw grads."""
    with grad_mode.enable_grad():
        outs = _outputs(func, inputs)
    jac = {}
    dtypes_ok = True
    xs = [inputs[i] for i in diff_in]
    for o in outs_idx:
        out = outs[o]
        n = out.numel()
        for op in _parts(out):
            mats = {(i, ip): np.zeros((inputs[i].numel(), n))
                    for i in diff_in for ip in _parts(inputs[i])}
            for j in range(n):
                e = np.zeros(n, out.dtype.np)
                e[j] = 1j if op == "imag" else 1
                go = Tensor._make(e.reshape(tuple(out.shape)))
                if out.requires_grad:
                    gs = _grad(out, xs, go, retain_graph=True, allow_unused=True)
                else:
                    gs = (None,) * len(xs)
                for i, g in zip(diff_in, gs):
                    if g is None:
                        continue
                    if g.dtype is not inputs[i].dtype:
                        dtypes_ok = False
                    for ip in _parts(inputs[i]):
                        mats[(i, ip)][:, j] = _read(g._data, ip)
            for (i, ip), m in mats.items():
                jac[(o, op, i, ip)] = m
    return jac, dtypes_ok


def _forward(func, inputs, diff_in, outs_idx):
    """{(o, opart, i, ipart): array (n_in, n_out)} from forward mode (one jvp per element)."""
    jac = {}
    with forward_ad.dual_level(), grad_mode.no_grad():
        for i in diff_in:
            x = inputs[i]
            for ip in _parts(x):
                rows = {}
                for k in range(x.numel()):
                    t = np.zeros(x.numel(), x.dtype.np)
                    t[k] = 1j if ip == "imag" else 1
                    args = list(inputs)
                    args[i] = forward_ad.make_dual(x, Tensor._make(t.reshape(tuple(x.shape))))
                    outs = _outputs(func, args)
                    for o in outs_idx:
                        tan = forward_ad.unpack_dual(outs[o]).tangent
                        for op in _parts(outs[o]):
                            m = rows.setdefault((o, op), np.zeros((x.numel(), outs[o].numel())))
                            if tan is not None:
                                m[k] = _read(tan._data, op)
                for (o, op), m in rows.items():
                    jac[(o, op, i, ip)] = m
    return jac


def _fmt(m: np.ndarray) -> str:
    with np.printoptions(precision=4, suppress=False, linewidth=100, threshold=200):
        return f"tensor({np.array2string(m, separator=', ', prefix='tensor(')}, " \
               "dtype=eager.float64)"


def _compare(num, ana, atol, rtol, what: str, raise_exception: bool) -> bool:
    for key, n in num.items():
        o, op, i, ip = key
        a = ana.get(key)
        if a is None:
            a = np.zeros_like(n)
        if np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=False):
            continue
        prefix = ""
        if op == "imag":
            prefix = "While considering the imaginary part of complex outputs only, "
        elif ip == "imag":
            prefix = "While considering the imaginary part of complex inputs only, "
        bad = np.argwhere(~np.isclose(a, n, rtol=rtol, atol=atol))
        entries = "\n".join(f"  [{r}, {c}]: numerical {n[r, c]:.6g}, analytical {a[r, c]:.6g}"
                            for r, c in bad[:10])
        more = f"\n  ... and {len(bad) - 10} more" if len(bad) > 10 else ""
        msg = (f"{prefix}{what} mismatch for output {o} with respect to input {i},\n"
               f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n"
               f"mismatching entries [input element, output element] (atol={atol}, "
               f"rtol={rtol}):\n{entries}{more}\n")
        return _fail(msg, raise_exception)
    return True


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of `func(*inputs)` w.r.t. the inputs that require grad against
    central finite differences (`torch.autograd.gradcheck`). Returns True, or raises
    GradcheckError (returns False with `raise_exception=False`). ValueError when no input
    requires grad. Inputs should be float64/complex128 (a UserWarning says so otherwise)."""
    inputs = _as_tuple(inputs)
    diff_in = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_in:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in diff_in:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", UserWarning,
                          stacklevel=2)
    with grad_mode.no_grad():
        outs = _outputs(func, inputs)
    outs_idx = _diff_outputs(outs)
    if fast_mode:
        return _fast_check(func, inputs, diff_in, outs_idx, eps, atol, rtol, raise_exception)
    num = _numerical(func, inputs, diff_in, outs_idx, eps)
    if check_backward_ad:
        ana, dtypes_ok = _analytical(func, inputs, diff_in, outs_idx)
        if not _compare(num, ana, atol, rtol, "Jacobian", raise_exception):
            return False
        if check_grad_dtypes and not dtypes_ok:
            return _fail("Gradient has dtype mismatch", raise_exception)
        again, _ = _analytical(func, inputs, diff_in, outs_idx)
        for key, a in ana.items():
            if np.abs(again[key] - a).max(initial=0.0) > nondet_tol:
                return _fail("Backward is not reentrant, i.e., running backward with same input "
                             "and grad_output multiple times gives different values, although "
                             "analytical gradient matches numerical gradient.The tolerance for "
                             f"nondeterminism was {nondet_tol}.", raise_exception)
    if check_forward_ad:
        fwd = _forward(func, inputs, diff_in, outs_idx)
        if not _compare(num, fwd, atol, rtol, "Jacobian computed with forward mode",
                        raise_exception):
            return False
    return True


def _random_like(rng, t: Tensor) -> np.ndarray:
    shape = tuple(t.shape)
    if t.dtype.is_complex:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(t.dtype.np)
    return rng.standard_normal(shape).astype(t.dtype.np)


def _fast_check(func, inputs, diff_in, outs_idx, eps, atol, rtol, raise_exception) -> bool:
    """u^T J v with random u (per input) and v (per output): finite differences along u of
    <v, f>, against <J^T v, u> from one reverse pass."""
    rng = np.random.default_rng(0)
    us = {i: _random_like(rng, inputs[i]) for i in diff_in}
    with grad_mode.no_grad():
        outs = _outputs(func, inputs)
    vs = {o: _random_like(rng, outs[o]) for o in outs_idx}

    def proj(outs_now):
        total = 0.0
        for o in outs_idx:
            y = outs_now[o]
            v = vs[o].astype(np.complex128)
            total += float(np.sum(v.real * y.real + v.imag * y.imag))
        return total

    with grad_mode.no_grad():
        saved = {i: inputs[i]._data.copy() for i in diff_in}
        for i in diff_in:
            inputs[i]._data[...] = saved[i] + eps * us[i]
        plus = proj(_values(func, inputs, outs_idx))
        for i in diff_in:
            inputs[i]._data[...] = saved[i] - eps * us[i]
        minus = proj(_values(func, inputs, outs_idx))
        for i in diff_in:
            inputs[i]._data[...] = saved[i]
    numerical = (plus - minus) / (2 * eps)
    with grad_mode.enable_grad():
        outs = _outputs(func, inputs)
    live = [o for o in outs_idx if outs[o].requires_grad]
    analytical = 0.0
    if live:
        gs = _grad([outs[o] for o in live], [inputs[i] for i in diff_in],
                   [Tensor._make(vs[o]) for o in live], allow_unused=True)
        for i, g in zip(diff_in, gs):
            if g is not None:
                a, u = g._data.astype(np.complex128), us[i].astype(np.complex128)
                analytical += float(np.sum(a.real * u.real + a.imag * u.imag))
    if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
        return _fail(f"Jacobian mismatch for output 0 with respect to input 0 (fast mode: "
                     f"u^T J v),\nnumerical:{numerical!r}\nanalytical:{analytical!r}\n",
                     raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check second derivatives: gradcheck of `(inputs, grad_outputs) -> vjp` built with
    `create_graph=True` (`torch.autograd.gradgradcheck`). Random grad_outputs (seeded) when
    None."""
    inputs = _as_tuple(inputs)
    diff_in = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    with grad_mode.no_grad():
        outs = _outputs(func, inputs)
    outs_idx = _diff_outputs(outs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor._make(_random_like(rng, outs[o]), requires_grad=True)
                             for o in outs_idx)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def vjp_fn(*args):
        xs, gos = args[:n_in], args[n_in:]
        with grad_mode.enable_grad():
            outs = _outputs(func, xs)
            pairs = [(outs[o], g) for o, g in zip(outs_idx, gos) if outs[o].requires_grad]
            if not pairs:
                return ()
            gs = _grad([p for p, _ in pairs], [xs[i] for i in diff_in], [g for _, g in pairs],
                       create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp_fn, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_grad_dtypes=check_grad_dtypes, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, fast_mode=fast_mode)

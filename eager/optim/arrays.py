"""The SGD and Adam updates written on the parameters' numpy arrays, one parameter at a time
(in spirit PyTorch's `_foreach` path: no Tensor per intermediate, in-place `out=` writes).

Why it exists: a training step of a small model spends much of its optimizer time creating
Tensors for intermediates and dispatching each in-place op. These functions compute exactly
the numbers the Tensor-level updates in `sgd.py` / `adam.py` compute (the same numpy ufuncs
in the same order on the same dtypes: bit for bit, tested by `tests/test_optim_arrays.py`),
and bump each version counter as many times as those would. They take only the plain case:
CPU float32/float64 arrays (at least 1-d) of one dtype and shape for the parameter, its grad and its state,
a plain Tensor (or `nn.Parameter`), no dispatch post hooks (forward AD, anomaly, inference
mode, autocast see every op on the Tensor path). Anything else returns False and the caller
runs its Tensor-level update. Touches `eager.tensor` and `eager.dispatch` (its hook list).
"""

from __future__ import annotations

import numpy as np

from ..dispatch import PLAIN_SUBCLASSES, POST_HOOKS
from ..tensor import MUTATIONS, Tensor

__all__ = ["ENABLED", "adam_update", "sgd_update"]

ENABLED = [True]  # (tests switch the array path off to compare it with the Tensor path)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ND = np.ndarray


def _plain(t, dt, shape) -> bool:
    """Whether `t` is a plain CPU tensor of numpy dtype `dt` and `shape`."""
    if type(t) is not Tensor and type(t) not in PLAIN_SUBCLASSES:
        return False
    a = t._data
    return type(a) is _ND and a.dtype is dt and a.shape == shape


def _param_arrays(p):
    """(param array, grad array) when the array path may update `p`, else None."""
    if POST_HOOKS or not ENABLED[0]:
        return None
    if type(p) is not Tensor and type(p) not in PLAIN_SUBCLASSES:
        return None
    pd = p._data
    # 0-d parameters take the Tensor path: a ufunc on 0-d arrays returns a numpy scalar, which
    # the in-place `out=` writes below cannot take
    if type(pd) is not _ND or pd.dtype not in _FLOATS or pd.ndim == 0:
        return None
    g = p.grad
    dt = pd.dtype
    if not _plain(g, dt, pd.shape) or np.may_share_memory(g._data, pd):
        return None
    return pd, g._data


def _bump(t, n: int) -> None:
    """`n` in-place writes to `t` (as `tensor.bump_version`, n times)."""
    t._vc[0] += n
    MUTATIONS[0] += n


def sgd_update(p, buf, lr, momentum, dampening, wd, nesterov, maximize) -> bool:
    """One SGD update of `p` whose momentum buffer `buf` exists (None with momentum 0), as
    `SGD.step`'s Tensor ops compute it; False (nothing written) when the array path does not
    apply."""
    arrays = _param_arrays(p)
    if arrays is None:
        return False
    pd, g = arrays
    if momentum != 0:
        if buf is None or not _plain(buf, pd.dtype, pd.shape):
            return False
        bd = buf._data
        if np.may_share_memory(bd, pd) or np.may_share_memory(bd, g):
            return False
    if maximize:
        g = np.negative(g)
    if wd != 0:
        g = np.add(g, np.multiply(pd, wd))  # grad.add(p, alpha=wd)
    if momentum != 0:
        np.multiply(bd, momentum, out=bd)
        a = 1 - dampening
        np.add(bd, g if a == 1 else np.multiply(g, a), out=bd)
        _bump(buf, 2)
        g = np.add(g, np.multiply(bd, momentum)) if nesterov else bd
    np.add(pd, np.multiply(g, -lr), out=pd)
    _bump(p, 1)
    return True


def adam_update(p, state, lr, beta1, beta2, eps, wd, decoupled, maximize) -> bool:
    """One Adam/AdamW update (no amsgrad) of real `p` whose state exists, as `Adam.step`'s
    Tensor ops compute it (lerp's |weight| < 0.5 branch); False (nothing written) when the
    array path does not apply."""
    if abs(1 - beta1) >= 0.5:
        return False
    arrays = _param_arrays(p)
    if arrays is None:
        return False
    pd, g = arrays
    m_t, v_t, step_t = state.get("exp_avg"), state.get("exp_avg_sq"), state.get("step")
    if not (_plain(m_t, pd.dtype, pd.shape) and _plain(v_t, pd.dtype, pd.shape)):
        return False
    if type(step_t) is not Tensor or type(step_t._data) is not _ND \
            or step_t._data.ndim != 0 or step_t._data.dtype not in _FLOATS:
        return False
    m, v, sd = m_t._data, v_t._data, step_t._data
    if np.may_share_memory(m, pd) or np.may_share_memory(v, pd) or np.may_share_memory(m, v):
        return False
    np.add(sd, 1, out=sd)
    _bump(step_t, 1)
    if maximize:
        g = np.negative(g)
    if wd != 0:
        if decoupled:
            np.multiply(pd, 1 - lr * wd, out=pd)
            _bump(p, 1)
        else:
            g = np.add(g, np.multiply(pd, wd))
    d = np.subtract(g, m)  # lerp_(m, g, 1 - beta1): m + w * (g - m)
    np.multiply(d, 1 - beta1, out=d)
    np.add(m, d, out=m)
    np.multiply(v, beta2, out=v)  # addcmul_(v.mul_(beta2), g, g, value=1 - beta2)
    t = np.multiply(g, g)
    if 1 - beta2 != 1:
        np.multiply(t, 1 - beta2, out=t)
    np.add(v, t, out=v)
    _bump(m_t, 1)
    _bump(v_t, 2)
    step = float(sd)
    step_size = lr / (1 - beta1 ** step)
    denom = np.sqrt(v)
    np.divide(denom, (1 - beta2 ** step) ** 0.5, out=denom)
    np.add(denom, eps, out=denom)
    np.divide(m, denom, out=denom)  # addcdiv_(p, m, denom, value=-step_size)
    if -step_size != 1:
        np.multiply(denom, -step_size, out=denom)
    np.add(pd, denom, out=pd)
    _bump(p, 1)
    return True

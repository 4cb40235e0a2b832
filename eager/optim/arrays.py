"""`ArrayOps`: the namespace that runs an optimizer's update rule (`update_rules.py`) on the
parameters' numpy arrays, one parameter at a time (in spirit PyTorch's `_foreach` path: no
Tensor per intermediate, in-place ops as `out=` writes).

Why it exists: a training step of a small model spends much of its optimizer time creating
Tensors for intermediates and dispatching each in-place op. The ops here are the numpy ufuncs
the Tensor ops run, in the rule's order on the same dtypes, so the numbers equal the Tensor
path's bit for bit (`tests/test_optim_arrays.py`), and each in-place op on a parameter or
state array bumps its tensor's version counter, as the Tensor op would. `ArrayOps.take`
accepts only the plain case: CPU float32/float64 arrays (at least 1-d) of one dtype and shape
for the parameter, its grad and its state (the `step` counter a 0-d float array), none sharing
memory, a plain Tensor (or `nn.Parameter`), no dispatch post hooks (forward AD, anomaly,
inference mode, autocast see every op on the Tensor path). Otherwise it returns None and the
caller runs the rule on Tensors. Touches `eager.tensor` and `eager.dispatch` (its hook list).
"""

from __future__ import annotations

import numpy as np

from ..dispatch import PLAIN_SUBCLASSES, POST_HOOKS
from ..tensor import MUTATIONS, Tensor

__all__ = ["ENABLED", "ArrayOps"]

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
    if not _plain(g, dt, pd.shape) or _overlap(g._data, pd):
        return None
    return pd, g._data


_NUMBERS = (int, float)


def _overlap(a, b) -> bool:
    """Whether arrays `a` and `b` may share memory: two distinct arrays that own their data
    cannot (the common case, answered without numpy's bounds check)."""
    if a.base is None and b.base is None:
        return a is b
    return np.may_share_memory(a, b)


def _number(x) -> bool:
    return type(x) in _NUMBERS


class ArrayOps:
    """The update rules' ops on numpy arrays (see the module); `param`, `grad`, `state` the
    arrays the rule starts from."""

    __slots__ = ("_vcs", "grad", "param", "state")

    @classmethod
    def take(cls, p, state: dict):
        """The namespace for parameter `p` with state {key: Tensor}, or None when the array
        path does not apply."""
        arrays = _param_arrays(p)
        if arrays is None:
            return None
        pd, g = arrays
        self = cls()
        self.param, self.grad = pd, g
        self.state = mine = {}
        self._vcs = vcs = {id(pd): p._vc}  # (array id -> its tensor's version counter)
        for key, t in state.items():
            if key == "step":  # (a 0-d counter of its own)
                a = t._data
                if type(t) is not Tensor or type(a) is not _ND or a.ndim != 0 \
                        or a.dtype not in _FLOATS:
                    return None
            else:
                if not _plain(t, pd.dtype, pd.shape):
                    return None
                a = t._data
                if _overlap(a, pd):  # (the grad is only read, as on the Tensor path)
                    return None
                for b in mine.values():
                    if b.ndim and _overlap(a, b):
                        return None
            mine[key] = a
            vcs[id(a)] = t._vc
        return self

    def _wrote(self, x):
        vc = self._vcs.get(id(x))
        if vc is not None:
            vc[0] += 1
            MUTATIONS[0] += 1
        return x

    # out of place (Python numbers stay Python numbers)
    @staticmethod
    def neg(x):
        return -x if _number(x) else np.negative(x)

    @staticmethod
    def add(a, b):
        return a + b if type(a) in _NUMBERS and type(b) in _NUMBERS else np.add(a, b)

    @staticmethod
    def sub(a, b):
        return a - b if type(a) in _NUMBERS and type(b) in _NUMBERS else np.subtract(a, b)

    @staticmethod
    def mul(a, b):
        return a * b if type(a) in _NUMBERS and type(b) in _NUMBERS else np.multiply(a, b)

    @staticmethod
    def div(a, b):
        return a / b if type(a) in _NUMBERS and type(b) in _NUMBERS else np.divide(a, b)

    @staticmethod
    def pow(a, b):
        return a ** b  # (numbers only in the rules ArrayOps takes)

    @staticmethod
    def maximum(a, b):
        return max(a, b) if _number(a) and _number(b) else np.maximum(a, b)

    sqrt = staticmethod(np.sqrt)
    clone = staticmethod(np.copy)
    item = staticmethod(float)
    like = staticmethod(lambda x, p: x)

    # in place: the first operand, written
    def add_(self, x, y):
        np.add(x, y, out=x)
        vc = self._vcs.get(id(x))  # (_wrote, inline: the most frequent in-place op)
        if vc is not None:
            vc[0] += 1
            MUTATIONS[0] += 1
        return x

    def mul_(self, x, y):
        return self._wrote(np.multiply(x, y, out=x))

    def div_(self, x, y):
        return self._wrote(np.divide(x, y, out=x))

    def sqrt_(self, x):
        return self._wrote(np.sqrt(x, out=x))

    def copy_(self, x, y):
        np.copyto(x, y)
        return self._wrote(x)

    def lerp_(self, x, end, w):
        """`TensorOps.lerp_`: x + w * (end - x) for |w| < 0.5, else end - (end - x) * (1 - w)
        (the registry's two branches)."""
        d = np.subtract(end, x)
        if abs(w) < 0.5:
            np.multiply(d, w, out=d)
            return self._wrote(np.add(x, d, out=x))
        np.multiply(d, 1 - w, out=d)
        return self._wrote(np.subtract(end, d, out=x))

    def addcmul_(self, x, t1, t2, value=1):
        t = np.multiply(t1, t2)
        if value != 1:
            np.multiply(t, value, out=t)
        return self._wrote(np.add(x, t, out=x))

    def addcdiv_(self, x, t1, t2, value=1):
        t = np.divide(t1, t2)
        if value != 1:
            np.multiply(t, value, out=t)
        return self._wrote(np.add(x, t, out=x))

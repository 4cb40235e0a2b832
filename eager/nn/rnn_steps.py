"""One time step of each recurrent cell kind (`RNN`, `LSTM`, `GRU`) and the parameter helpers,
shared by the layers (`rnn.py`, through the time loop PackedSequence and proj_size take) and
the cells (`rnn_cells.py`); below both, so neither imports the other's module. Gate order as
PyTorch's (LSTM i, f, g, o; GRU r, z, n). Touches `eager` only.
"""

from __future__ import annotations

from ..creation import empty
from ..dispatch import FUNCTIONS
from .init import uniform_
from .module import Parameter


def _linear(x, w, b):
    return FUNCTIONS["linear"](x, w, b)


def _as(t, like):
    """`t` in `like`'s dtype (under autocast the projection is low precision, states are not)."""
    return t if t.dtype == like.dtype else t.to(like.dtype)


def _init_uniform(w, a, b):
    uniform_(w, a, b)


def _new_param(shape, dtype, device):
    return Parameter(empty(*shape, dtype=dtype, device=device))


# ---- one time step of each cell kind. `xw` is the input projection of this step (with the
# biases PyTorch adds outside any gate already in it), `whh_t` the transposed hidden weights.
# (Each step's projection is its own matmul: see `_run_direction`.)

def _rnn_step(xw, h, whh_t, bhh, act):
    return act(FUNCTIONS["addmm"](xw, h, whh_t))


def _lstm_step(xw, hc, whh_t, bhh, whr_t):
    h, c = hc
    gates = FUNCTIONS["addmm"](xw, h, whh_t)
    i, f, g, o = gates.chunk(4, 1)
    c = FUNCTIONS["sigmoid"](f) * c + FUNCTIONS["sigmoid"](i) * FUNCTIONS["tanh"](g)
    h = FUNCTIONS["sigmoid"](o) * FUNCTIONS["tanh"](c)
    if whr_t is not None:
        h = FUNCTIONS["matmul"](h, whr_t)
    return h, c


def _gru_step(xw, h, whh_t, bhh, _):
    gh = FUNCTIONS["matmul"](h, whh_t) if bhh is None else FUNCTIONS["addmm"](bhh, h, whh_t)
    xr, xz, xn = xw.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = FUNCTIONS["sigmoid"](xr + hr)
    z = FUNCTIONS["sigmoid"](xz + hz)
    n = FUNCTIONS["tanh"](xn + r * hn)
    return n + z * (h - n)

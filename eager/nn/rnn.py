"""Recurrent layers (`torch.nn.RNN`, `LSTM`, `GRU`) and their cells (`RNNCell`, `LSTMCell`,
`GRUCell`), as PyTorch's: constructor arguments and defaults, parameter names
(`weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`, `bias_hh_l{k}`, `weight_hr_l{k}` with
`proj_size`, `_reverse` for the backward direction) and registration order, so `state_dict`s
load both ways; gate order (LSTM i, f, g, o; GRU r, z, n with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn))); U(-1/sqrt(hidden), 1/sqrt(hidden)) init.

Unpacked input without proj_size (the common case) runs each layer and direction as one
input projection over all time steps (`linear`, b_hh folded in where PyTorch adds it outside
the gates) and one whole-sequence registry op (`_lstm_layer`, `_gru_layer`, `_rnn_layer` in
`ir/ops/rnn.py`) whose backward is one BPTT kernel: one autograd node per layer and direction,
as PyTorch's fused CPU/cuDNN kernels. PackedSequence input and proj_size > 0 step through time
in a Python loop of registry ops (linear, addmm, sigmoid, tanh, chunk, stack/cat), running each
step on the active (leading) batch rows only. `compile` keeps the fused ops as library calls.
Touches `eager` only.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ir import dtypes as D

from ..creation import zeros
from ..dispatch import FUNCTIONS
from . import functional as F
from .module import Module
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase  # (re-exported)
from .rnn_steps import _as, _gru_step, _init_uniform, _linear, _lstm_step, _new_param, _rnn_step
from .rnn_utils import PackedSequence

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _slice_state(state, lo, hi, lstm):
    if lstm:
        return state[0][lo:hi], state[1][lo:hi]
    return state[lo:hi]


def _cat_state(parts, lstm):
    if len(parts) == 1:
        return parts[0]
    if lstm:
        return FUNCTIONS["cat"]([p[0] for p in parts]), FUNCTIONS["cat"]([p[1] for p in parts])
    return FUNCTIONS["cat"](parts)


def _proj(x, wih_t, b):
    return FUNCTIONS["matmul"](x, wih_t) if b is None else FUNCTIONS["addmm"](b, x, wih_t)


def _run_direction(step, xs, proj, sizes, state0, args, reverse, lstm):
    """Run `step` over the per-step inputs `xs` (each (sizes[t], F), projected by
    `_proj(x, *proj)` step by step: slicing one big projection would cost a full-size
    zero-and-add per step in backward, each slice's adjoint); `state0` holds the full batch.
    Returns the outputs in time order and the final state (full batch, the rows in
    `state0`'s order). With shrinking `sizes` (a PackedSequence) a row's final state is
    the state after its last active step."""
    T = len(xs)
    outs = [None] * T
    if not reverse:
        state = state0 if sizes[0] == _rows(state0, lstm) else _slice_state(state0, 0, sizes[0],
                                                                            lstm)
        done = []
        for t in range(T):
            bs = sizes[t]
            if bs < _rows(state, lstm):  # rows bs: have ended: their state is final
                done.append(_slice_state(state, bs, None, lstm))
                state = _slice_state(state, 0, bs, lstm)
            state = step(_proj(xs[t], *proj), state, *args)
            outs[t] = state[0] if lstm else state
        done.append(state)
        return outs, _cat_state(done[::-1], lstm)
    state = None
    for t in range(T - 1, -1, -1):
        bs = sizes[t]
        have = 0 if state is None else _rows(state, lstm)
        if bs > have:  # rows have..bs start here, from their initial state
            fresh = _slice_state(state0, have, bs, lstm) if (have or bs < _rows(state0, lstm)) \
                else state0
            state = fresh if state is None else _cat_state([state, fresh], lstm)
        state = step(_proj(xs[t], *proj), state, *args)
        outs[t] = state[0] if lstm else state
    return outs, state


def _rows(state, lstm):
    return (state[0] if lstm else state).shape[0]


class RNNBase(Module):
    """Common base of `RNN`, `LSTM` and `GRU` (`torch.nn.RNNBase`): parameters per layer and
    direction, shape checks, packed/unbatched handling. `mode` is 'RNN_TANH', 'RNN_RELU',
    'LSTM' or 'GRU'. ValueError for bad sizes, dropout, or proj_size outside an LSTM."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else real_hidden * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_in)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, _new_param(shape, dtype, device))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            _init_uniform(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN weights here)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction, as PyTorch's `all_weights`."""
        ws = self._flat_weights
        per = len(ws) // (self.num_layers * (2 if self.bidirectional else 1))
        return [ws[i:i + per] for i in range(0, len(ws), per)]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- forward

    def _layer_params(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
        g = self.__dict__
        wih, whh = g["weight_ih" + sfx], g["weight_hh" + sfx]
        bih = g.get("bias_ih" + sfx) if self.bias else None
        bhh = g.get("bias_hh" + sfx) if self.bias else None
        whr = g.get("weight_hr" + sfx) if self.proj_size > 0 else None
        return wih, whh, bih, bhh, whr

    def _check_hidden(self, hx, expected, what="hidden"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(f"Expected {what} size {tuple(expected)}, got {list(hx.shape)}")

    def _run_fused(self, x, states, lstm):
        """The whole-sequence path (no PackedSequence, no proj_size): per layer and direction
        one input projection over all time steps (a 2-D GEMM over the T * B rows) and one
        recurrent op (`_lstm_layer`, `_gru_layer`, `_rnn_layer`: BPTT in one backward
        kernel). Half-precision LSTM/RNN layers (autocast) run the op on float32 copies of its
        (half-rounded) operands and round the states once, as PyTorch's fused kernel keeps
        float32 gates. Returns output and final states as `_run`."""
        dirs = 2 if self.bidirectional else 1
        mode = self.mode
        h0 = states[0] if lstm else states
        c0 = states[1] if lstm else None
        h_n, c_n = [], []
        T, B = x.shape[0], x.shape[1]
        for layer in range(self.num_layers):
            outs = []
            x2 = x.reshape(T * B, x.shape[2])
            for d in range(dirs):
                k = layer * dirs + d
                wih, whh, bih, bhh, _ = self._layer_params(layer, d)
                rev = d == 1
                if mode == "GRU":
                    gx = _linear(x2, wih, bih).reshape(T, B, whh.shape[0])
                    b = bhh if bhh is not None else zeros(whh.shape[0], dtype=gx.dtype,
                                                          device=gx.device)
                    res = self._fused_gru(gx, h0[k], whh, b, rev)
                    hs = res[0]
                else:  # b_hh is added outside any gate: fold it into the input projection
                    gx = _linear(x2, wih, None if bih is None else bih + bhh)
                    gx = gx.reshape(T, B, whh.shape[0])
                    res, hs = self._fused_layer(gx, h0[k], c0[k] if lstm else None, whh, rev)
                last = 0 if rev else -1
                outs.append(hs)
                h_n.append(hs[last])
                if lstm:
                    c_n.append(res[1][last])
            x = outs[0] if dirs == 1 else FUNCTIONS["cat"](outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = FUNCTIONS["stack"](h_n, 0)
        if lstm:
            return x, (h_n, _as(FUNCTIONS["stack"](c_n, 0), h_n))
        return x, h_n

    @staticmethod
    def _fused_gru(gx, h0, whh, b, rev):
        """One GRU layer and direction. Under autocast (a half `gx`) the hidden-side GEMM's
        operands are rounded as autocast's matmul rounds them, the state stays float32 and so
        does the output, as PyTorch's GRU (its gates promote against the float32 state)."""
        if gx.dtype in D.HALF:
            return FUNCTIONS["_gru_layer"](gx.float(), _as(h0, gx).float(), _as(whh, gx).float(),
                                           _as(b, gx).float(), reverse=rev)
        return FUNCTIONS["_gru_layer"](gx, _as(h0, gx), _as(whh, gx), _as(b, gx), reverse=rev)

    def _fused_layer(self, gx, h0, c0, whh, rev):
        """One LSTM/RNN layer and direction on the projection `gx` (T, B, G): the op's result
        and the hidden states (T, B, H) in gx's dtype."""
        low = gx.dtype in D.HALF
        if low:  # the operands rounded as autocast gives them, then float32 for the kernel
            ops = [gx.float()] + [_as(t, gx).float() for t in
                                  ((h0, c0, whh) if c0 is not None else (h0, whh))]
        else:
            ops = [gx] + [_as(t, gx) for t in ((h0, c0, whh) if c0 is not None else (h0, whh))]
        if c0 is not None:
            res = FUNCTIONS["_lstm_layer"](*ops, reverse=rev)
            hs = res[0]
        else:
            nl = "tanh" if self.mode == "RNN_TANH" else "relu"
            res = hs = FUNCTIONS["_rnn_layer"](*ops, nonlinearity=nl, reverse=rev)
        return res, (_as(hs, gx) if low else hs)

    def _run(self, x, sizes, states, lstm):
        """x: (T, B, F) time-major (sizes None) or packed data (N, F) with per-step `sizes`.
        states: (h0, c0) or h0 of (L*D, B, H). Returns output and final states."""
        packed = sizes is not None
        if not packed and self.proj_size == 0 and x.shape[0] > 0:
            return self._run_fused(x, states, lstm)
        dirs = 2 if self.bidirectional else 1
        mode = self.mode
        if mode == "LSTM":
            step = _lstm_step
        elif mode == "GRU":
            step = _gru_step
        else:
            step = _rnn_step
        act = FUNCTIONS["tanh"] if mode == "RNN_TANH" else FUNCTIONS["relu"]
        h0 = states[0] if lstm else states
        c0 = states[1] if lstm else None
        T = len(sizes) if packed else x.shape[0]
        if not packed:
            sizes = [x.shape[1]] * T
        xs = x.split(list(sizes), 0) if packed else x.unbind(0)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs_dir = []
            for d in range(dirs):
                k = layer * dirs + d
                wih, whh, bih, bhh, whr = self._layer_params(layer, d)
                if mode == "GRU" or bih is None:
                    bx = bih
                else:  # b_hh is added outside the gates: fold it into the input projection
                    bx = bih + bhh
                proj = (wih.t(), bx)
                whh_t = whh.t()
                if lstm:
                    args = (whh_t, bhh, None if whr is None else whr.t())
                    s0 = (h0[k], c0[k])
                elif mode == "GRU":
                    args, s0 = (whh_t, bhh, None), h0[k]
                else:
                    args, s0 = (whh_t, bhh, act), h0[k]
                outs, final = _run_direction(step, xs, proj, sizes, s0, args, d == 1, lstm)
                outs_dir.append(outs)
                if lstm:
                    h_n.append(final[0])
                    c_n.append(final[1])
                else:
                    h_n.append(final)
            # the next layer reads the per-step outputs as they are (no stack / unbind)
            xs = outs_dir[0] if dirs == 1 else [FUNCTIONS["cat"](o, 1) for o in zip(*outs_dir)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                xs = [F.dropout(o, self.dropout, True) for o in xs]
        h_n = FUNCTIONS["stack"](h_n, 0)
        out = FUNCTIONS["cat"](xs, 0) if packed else FUNCTIONS["stack"](xs, 0)
        return out, ((h_n, FUNCTIONS["stack"](c_n, 0)) if lstm else h_n)

    def forward(self, input, hx=None):
        """input: (T, B, input_size) ((B, T, ...) with batch_first), (T, input_size) unbatched,
        or a PackedSequence. hx: (L * D, B, H_out) (for LSTM a tuple (h0, c0), c0 of hidden
        size), 2-D when unbatched; zeros when None. Returns (output, h_n) / (output, (h_n, c_n))
        with output (T, B, D * H_out) (a PackedSequence for packed input)."""
        lstm = self.mode == "LSTM"
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        packed = isinstance(input, PackedSequence)
        batched = True
        if packed:
            data, batch_sizes, sorted_idx, unsorted_idx = input
            sizes = [int(b) for b in batch_sizes.tolist()]
            B = sizes[0]
            x = data
        else:
            sorted_idx = unsorted_idx = None
            sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                                 f"{input.dim()}D instead")
            batched = input.dim() == 3
            x = input
            if not batched:
                x = x.unsqueeze(1)
            elif self.batch_first:
                x = x.transpose(0, 1)
            B = x.shape[1]
            if x.shape[-1] != self.input_size:
                raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                                   f"{self.input_size}, got {x.shape[-1]}")
        L = self.num_layers * dirs
        if hx is None:
            h0 = zeros(L, B, real_hidden, dtype=x.dtype, device=x.device)
            states = (h0, zeros(L, B, self.hidden_size, dtype=x.dtype, device=x.device)) \
                if lstm else h0
        else:
            states = hx
            parts = list(hx) if lstm else [hx]
            if lstm and (not isinstance(hx, tuple) or len(hx) != 2):
                raise RuntimeError("LSTM expects hx as a tuple (h_0, c_0)")
            want = 3 if batched else 2
            for p in parts:
                if p.dim() != want:
                    raise RuntimeError(f"For {'batched' if batched else 'unbatched'} "
                                       f"{want}-D input, hx{' and cx' if lstm else ''} should "
                                       f"also be {want}-D but got {p.dim()}-D tensor")
            if not batched:
                parts = [p.unsqueeze(1) for p in parts]
            if sorted_idx is not None:
                parts = [p.index_select(1, sorted_idx) for p in parts]
            self._check_hidden(parts[0], (L, B, real_hidden))
            if lstm:
                self._check_hidden(parts[1], (L, B, self.hidden_size), "hidden[1]")
            states = tuple(parts) if lstm else parts[0]
        out, final = self._run(x, sizes, states, lstm)
        if unsorted_idx is not None:
            final = tuple(f.index_select(1, unsorted_idx) for f in final) if lstm \
                else final.index_select(1, unsorted_idx)
        if packed:
            return PackedSequence(out, input.batch_sizes, sorted_idx, unsorted_idx), final
        if not batched:
            out = out.squeeze(1)
            final = tuple(f.squeeze(1) for f in final) if lstm else final.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, final


class RNN(RNNBase):
    """Elman RNN (`torch.nn.RNN`): h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh),
    act 'tanh' (default) or 'relu'. RNN(input_size, hidden_size, num_layers=1,
    nonlinearity='tanh', bias=True, batch_first=False, dropout=0.0, bidirectional=False)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (`torch.nn.LSTM`), gates i, f, g, o; with `proj_size` > 0 the
    hidden state is projected by `weight_hr_l{k}` (h has proj_size features, c hidden_size).
    forward(input, (h0, c0)=None) -> (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit (`torch.nn.GRU`), gates r, z, n:
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)



"""Single-step recurrent cells (`torch.nn.RNNCell`, `LSTMCell`, `GRUCell`), as PyTorch's:
parameters `weight_ih` (G * hidden, input), `weight_hh` (G * hidden, hidden), `bias_ih`,
`bias_hh` (None when bias=False), U(-1/sqrt(hidden), 1/sqrt(hidden)) init, 1-D (unbatched)
or 2-D inputs, zero initial state when hx is None. The step math is `rnn.py`'s (registry ops).
Touches `eager` only.
"""

from __future__ import annotations

import math

from ..creation import zeros
from ..dispatch import FUNCTIONS
from .module import Module
from .rnn_steps import _gru_step, _init_uniform, _lstm_step, _new_param, _rnn_step

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNCellBase(Module):
    """Parameters and checks common to the cells (`torch.nn.RNNCellBase`)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = _new_param((num_chunks * hidden_size, input_size), dtype, device)
        self.weight_hh = _new_param((num_chunks * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = _new_param((num_chunks * hidden_size,), dtype, device)
            self.bias_hh = _new_param((num_chunks * hidden_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            _init_uniform(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        """Checks dims; returns (input 2-D, states list 2-D or None, batched)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        states = None
        if hx is not None:
            states = list(hx) if n_states == 2 else [hx]
            for h in states:
                if h.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D "
                                     "instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            if states is not None:
                states = [h.unsqueeze(0) for h in states]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if states is None:
            z = zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            states = [z] * n_states
        for h in states:
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden0 "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {h.shape[1]}, "
                                   f"expected {self.hidden_size}")
        return input, states, batched

    def _proj(self, input, fold_bias):
        b = self.bias_ih
        if b is not None and fold_bias:
            b = b + self.bias_hh
        return FUNCTIONS["linear"](input, self.weight_ih, b)


class RNNCell(RNNCellBase):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act 'tanh' or 'relu' (`torch.nn.RNNCell`).
    input (B, input_size) or (input_size,); hx like it with hidden_size; returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        act = FUNCTIONS["tanh" if self.nonlinearity == "tanh" else "relu"]
        out = _rnn_step(self._proj(x, True), h, self.weight_hh.t(), None, act)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (`torch.nn.LSTMCell`), gates i, f, g, o. forward(input, (h, c)=None) ->
    (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(self._proj(x, True), (h, c), self.weight_hh.t(), None, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (`torch.nn.GRUCell`), gates r, z, n:
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), batched = self._prepare(input, hx, 1)
        out = _gru_step(self._proj(x, False), h, self.weight_hh.t(), self.bias_hh, None)
        return out if batched else out.squeeze(0)

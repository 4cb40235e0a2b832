"""`torch.nn.utils.rnn` (reachable as `eager.nn.utils.rnn`): `PackedSequence`, `pad_sequence`,
`pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`, `unpad_sequence`,
`unpack_sequence`, with PyTorch's signatures, layouts and errors.

A PackedSequence holds the time-major concatenation of the active rows of every step:
`data` (sum(batch_sizes), *), `batch_sizes` (int64, one count per step, non-increasing),
`sorted_indices` (the batch order used, None when the input was already sorted) and
`unsorted_indices` (its inverse). Packing and padding are differentiable (index_select,
split, cat, stack). Touches `eager` only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ir import dtypes as D

from ..creation import full, tensor
from ..dispatch import FUNCTIONS
from ..tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """A packed batch of variable-length sequences (`torch.nn.utils.rnn.PackedSequence`);
    build it with `pack_padded_sequence` / `pack_sequence`, not directly."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None and isinstance(data, (tuple, list)):  # from a tuple
            data, batch_sizes, sorted_indices, unsorted_indices = (list(data) + [None] * 2)[:4]
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The data moved/cast as `Tensor.to`; indices follow the data's device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        idx = [None if t is None else t.to(dev) for t in (self.sorted_indices,
                                                          self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, *idx)

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation):
    """The inverse of a permutation index tensor (None stays None)."""
    if permutation is None:
        return None
    perm = np.asarray(permutation.tolist(), dtype=np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    return tensor(inv, device=permutation.device)


def _lengths_list(lengths) -> list:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch `input` (T, B, *) ((B, T, *) with batch_first) whose sequences have
    `lengths` (a list or 1-D int64 CPU tensor, all > 0). With enforce_sorted the lengths must
    be non-increasing (RuntimeError otherwise); else the batch is sorted and the order kept in
    `sorted_indices`."""
    lens = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-np.asarray(lens, dtype=np.int64), kind="stable")
        sorted_indices = tensor(order.astype(np.int64), device=input.device)
        lens = [lens[i] for i in order]
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lens) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={input.shape[1]})")
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lens and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be smaller than or equal to "
                           f"{input.shape[0]}, but got {lens[0]}")
    T = lens[0] if lens else 0
    sizes = [sum(1 for n in lens if n > t) for t in range(T)]
    pieces = [input[t, :bs] if bs < input.shape[1] else input[t] for t, bs in enumerate(sizes)]
    data = FUNCTIONS["cat"](pieces, 0)
    return PackedSequence(data, tensor(sizes, dtype=np.int64), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Inverse of `pack_padded_sequence`: (padded (T, B, *) or (B, T, *), lengths int64 (B,))
    in the original batch order. `total_length` pads to that many steps (ValueError if it is
    shorter than the longest sequence)."""
    data, batch_sizes, _, unsorted = sequence
    sizes = [int(b) for b in batch_sizes.tolist()]
    T = len(sizes)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
    B = sizes[0] if sizes else 0
    tail = tuple(data.shape[1:])
    steps = data.split(sizes, 0)
    rows = []
    for t, bs in enumerate(sizes):
        s = steps[t]
        if bs < B:
            s = FUNCTIONS["cat"]([s, full((B - bs, *tail), padding_value, dtype=data.dtype,
                             device=data.device)], 0)
        rows.append(s)
    if total_length is not None and total_length > T:
        pad = full((B, *tail), padding_value, dtype=data.dtype, device=data.device)
        rows += [pad] * (total_length - T)
    out = FUNCTIONS["stack"](rows, 0)
    lengths = np.array([sum(1 for bs in sizes if bs > b) for b in range(B)], dtype=np.int64)
    if unsorted is not None:
        out = out.index_select(1, unsorted)
        lengths = lengths[np.asarray(unsorted.tolist(), dtype=np.int64)]
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensor(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into (L_max, B, *) ((B, L_max, *) with batch_first),
    padding each with `padding_value` on the `padding_side` ('right' or 'left')."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    L = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        n = L - s.shape[0]
        if n:
            pad = full((n, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = FUNCTIONS["cat"]([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    return FUNCTIONS["stack"](padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The list of unpadded sequences of a right-padded batch (inverse of `pad_sequence`)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (`pad_sequence` then `pack_padded_sequence`)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences of a PackedSequence (inverse of `pack_sequence`)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

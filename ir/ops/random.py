"""Random sampling as registry ops: the generator's state is a graph value.

A generator's state is an int64 tensor of 6 words (`state_words`: numpy PCG64's 128-bit state
and increment, and its buffered 32-bit half). Sampling is a pure function of that state:

- `_rng_sample(state, kind, size, dtype, args)` and `_rng_sample_from(state, input, kind, ...)`
  (bernoulli, multinomial: the probabilities are an operand) return one uint8 buffer packing
  the samples and the state after drawing them (every primitive op has one output);
- `_rng_values(packed, size, dtype)` and `_rng_state(packed)` unpack the two;
- `_rng_commit_(state, stream)` writes a state into the generator registered as `stream`
  (`register_stream`) and returns it; its trailing underscore makes it impure (kept by
  dead-code elimination, never merged by CSE or folded).

`draw(g, kind, size, dtype, args, operand)` is the one definition of every sampler on a numpy
`Generator`; eager's random functions call it on their generator and these ops on a generator
rebuilt from the state, so a compiled draw equals eager's bit for bit and leaves the same
state. All of them are library calls (kind "random"), never fused. Imports nothing of wick's
outside `ir`.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, TensorMeta, register

MASK = (1 << 64) - 1
NWORDS = 6
STREAMS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_ids = itertools.count(1)


def register_stream(obj) -> int:
    """A key for `obj` (an object with `_rng`, a numpy Generator on PCG64) usable as the
    `stream` attribute of `_rng_commit_`."""
    key = next(_ids)
    STREAMS[key] = obj
    return key


def state_words(bit_generator) -> np.ndarray:
    """The PCG64 state of `bit_generator` as int64[6]."""
    st = bit_generator.state
    s, inc = st["state"]["state"], st["state"]["inc"]
    w = np.array([s >> 64, s & MASK, inc >> 64, inc & MASK, st["has_uint32"], st["uinteger"]],
                 dtype=np.uint64)
    return w.view(np.int64)


def set_words(bit_generator, words) -> None:
    """Set a PCG64 bit generator's state from `state_words` output."""
    w = [int(x) for x in np.asarray(words).view(np.uint64)]
    bit_generator.state = {"bit_generator": "PCG64",
                           "state": {"state": (w[0] << 64) | w[1], "inc": (w[2] << 64) | w[3]},
                           "has_uint32": w[4], "uinteger": w[5]}


def _uniform(g, shape, dt):
    if dt.is_complex:  # real and imaginary parts uniform in [0, 1), as PyTorch
        return g.random(shape) + 1j * g.random(shape)
    return g.random(shape)


def _normal(g, shape, dt):
    if dt.is_complex:  # variance 1 split between the parts, as PyTorch
        return (g.standard_normal(shape) + 1j * g.standard_normal(shape)) / np.sqrt(2)
    return g.standard_normal(shape)


def _bernoulli(g, probs):
    if np.any((probs < 0) | (probs > 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return g.random(probs.shape) < probs


def _multinomial(g, w, num_samples, replacement):
    w = np.asarray(w).astype(np.float64)
    if w.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {w.ndim}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = w.reshape(-1, w.shape[-1])
    if not replacement and num_samples > rows.shape[1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    res = []
    for r in rows:
        total = r.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(r):
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                               "enough non-negative category to sample)")
        res.append(g.choice(r.size, size=num_samples, replace=replacement, p=r / total))
    return np.asarray(res, dtype=np.int64).reshape(w.shape[:-1] + (num_samples,))


def draw(g: np.random.Generator, kind: str, size: tuple, dtype: D.DType, args: tuple = (),
         operand=None) -> np.ndarray:
    """Samples from numpy Generator `g` as a host array of `dtype` (shape `size`, except for
    "multinomial"). Kinds and `args`: "uniform" (), "normal" (), "normal_ms" (mean, std),
    "integers" (low, high), "permutation" (n,), "bernoulli" (p or None: `operand` holds the
    probabilities), "multinomial" (num_samples, replacement; `operand` the weights),
    "uniform_ab" (a, b) and "exponential" (scale,): eager's `uniform_`/`exponential_`.
    RuntimeError for invalid probabilities, as eager."""
    if kind == "uniform":
        arr = _uniform(g, size, dtype)
    elif kind == "normal":
        arr = _normal(g, size, dtype)
    elif kind == "normal_ms":
        m, s = args
        arr = np.asarray(m, np.float64) + np.asarray(s, np.float64) * g.standard_normal(size)
    elif kind == "uniform_ab":
        arr = args[0] + (args[1] - args[0]) * g.random(size)
    elif kind == "exponential":
        arr = g.exponential(args[0], size=size)
    elif kind == "integers":
        arr = g.integers(args[0], args[1], size=size)
    elif kind == "permutation":
        arr = g.permutation(int(args[0]))
    elif kind == "bernoulli":
        probs = np.asarray(operand) if args[0] is None else np.full(size, args[0])
        arr = _bernoulli(g, probs)
    elif kind == "multinomial":
        arr = _multinomial(g, operand, args[0], args[1])
    else:
        raise ValueError(f"unknown sampler {kind!r}")
    arr = np.asarray(arr)
    return arr.astype(dtype.np) if arr.dtype != dtype.np else arr


# ---------------------------------------------------------------- the ops

_SCRATCH = np.random.Generator(np.random.PCG64(0))


def _packed_len(size, dtype):
    n = 1
    for s in size:
        n *= s
    return n * dtype.np.itemsize + NWORDS * 8


def _sample(xp, state, *operand, kind="uniform", size=(), dtype=D.float32, args=()):
    state = state.get() if not isinstance(state, np.ndarray) else state
    g = _SCRATCH
    set_words(g.bit_generator, state)
    src = operand[0] if operand else None
    if src is not None and not isinstance(src, np.ndarray):
        src = src.get()
    vals = np.ascontiguousarray(draw(g, kind, tuple(size), dtype, tuple(args), src))
    if vals.shape != tuple(size):
        raise RuntimeError(f"{kind}: sampled shape {vals.shape}, expected {tuple(size)}")
    return np.concatenate([vals.reshape(-1).view(np.uint8),
                           state_words(g.bit_generator).view(np.uint8)])


def _values(xp, packed, size=(), dtype=D.float32):
    n = _packed_len(size, dtype) - NWORDS * 8
    return xp.ascontiguousarray(packed[:n]).view(dtype.np).reshape(tuple(size)).copy()


def _state(xp, packed):
    return xp.ascontiguousarray(packed[-NWORDS * 8:]).view(np.int64).copy()


def _commit(xp, state, stream=0):
    obj = STREAMS.get(stream)
    host = state if isinstance(state, np.ndarray) else state.get()
    if obj is not None:
        set_words(obj._rng.bit_generator, host)
    return state.copy()


class RandomOpDef(OpDef):
    """A sampler-family op: its meta comes from its attributes (no broadcasting)."""

    def meta(self, inputs, attrs):
        x = inputs[0]
        if not isinstance(x, TensorMeta):
            raise TypeError(f"{self.name}(): expected a tensor operand")
        _, out_dtype = self.dtypes(inputs, attrs)
        return TensorMeta(tuple(self.shape(**attrs)), out_dtype, x.device)


def _words_sample(rng, dt):
    for seed in (0, 7):
        yield (state_words(np.random.PCG64(seed)),), {}


def _sample_samples(rng, dt):
    for seed, kind, size, dtype, args in ((0, "uniform", (3, 4), D.float32, ()),
                                          (1, "normal", (5,), D.float64, ()),
                                          (2, "integers", (2, 3), D.int64, (0, 10))):
        yield (state_words(np.random.PCG64(seed)),), dict(kind=kind, size=size, dtype=dtype,
                                                          args=args)


def _ref_sample(state, operand=None, kind="uniform", size=(), dtype=D.float32, args=()):
    g = np.random.Generator(np.random.PCG64())
    set_words(g.bit_generator, state)
    vals = draw(g, kind, tuple(size), dtype, tuple(args), operand)
    return np.concatenate([vals.reshape(-1).view(np.uint8),
                           state_words(g.bit_generator).view(np.uint8)])


_U8 = lambda ops, attrs: (D.uint8, D.uint8)  # noqa: E731
_I64 = lambda ops, attrs: (D.int64, D.int64)  # noqa: E731
_COMMON = dict(method=False, scalar_ok=False, inplace=False, test_dtypes=(D.int64,))

register(RandomOpDef(
    "_rng_sample", "random", "state, kind='uniform', size=(), dtype=None, args=()", 1, _U8,
    promote_from=1, shape=lambda kind="uniform", size=(), dtype=None, args=(): (
        _packed_len(size, dtype),),
    impl=_sample, ref=lambda state, **kw: _ref_sample(state, None, **kw),
    sample_inputs=_sample_samples, **_COMMON))

register(RandomOpDef(
    "_rng_sample_from", "random",
    "state, input, kind='bernoulli', size=(), dtype=None, args=()", 2, _U8, promote_from=2,
    shape=lambda kind="bernoulli", size=(), dtype=None, args=(): (_packed_len(size, dtype),),
    impl=_sample, ref=_ref_sample, sample_inputs=lambda rng, dt: iter(
        [((state_words(np.random.PCG64(3)), np.array([0.2, 0.9, 0.5])),
          dict(kind="bernoulli", size=(3,), dtype=D.float64, args=(None,)))]), **_COMMON))

register(RandomOpDef(
    "_rng_values", "random", "packed, size=(), dtype=None", 1, "attr", promote_from=1,
    shape=lambda size=(), dtype=None: tuple(size), impl=_values,
    ref=lambda packed, size=(), dtype=None: np.frombuffer(
        packed.tobytes()[:_packed_len(size, dtype) - NWORDS * 8], dtype.np).reshape(size),
    sample_inputs=lambda rng, dt: iter([((np.arange(8 + 48, dtype=np.uint8),),
                                         dict(size=(2,), dtype=D.int32))]), **_COMMON))

register(RandomOpDef(
    "_rng_state", "random", "packed", 1, _I64, promote_from=1, shape=lambda: (NWORDS,),
    impl=_state, ref=lambda packed: np.frombuffer(packed.tobytes()[-NWORDS * 8:], np.int64),
    sample_inputs=lambda rng, dt: iter([((np.arange(8 + 48, dtype=np.uint8),),
                                                      {})]), **_COMMON))

register(RandomOpDef(
    "_rng_commit_", "random", "state, stream=0", 1, _I64, promote_from=1,
    shape=lambda stream=0: (NWORDS,), impl=_commit,
    ref=lambda state, stream=0: np.array(state), sample_inputs=_words_sample, **_COMMON))

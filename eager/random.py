"""Random numbers: `eager.Generator`, the default generator, and the random creation functions
(rand, randn, randint, randperm, normal, bernoulli, multinomial, the `*_like` forms, and the
in-place `uniform_`/`normal_`/`bernoulli_`/`random_`).

A Generator wraps a numpy PCG64 bit generator: seeding and state round trips are reproducible
(`manual_seed`, `get_state`/`set_state`), but the streams differ from PyTorch's (Philox/MT19937),
so values never match PyTorch's bit for bit. Samples are drawn on the CPU and moved to the
requested device. Signatures and dtypes follow PyTorch's documentation of each function.

Every sampler is `ir.ops.random.draw` on the generator's numpy Generator: the same function is
the kernel of the registry's sampling ops, which capture records with the generator's state
as a graph input (`Generator._state_tensor`) and writes back (`_rng_commit_`), so compiled
draws equal eager's bit for bit and advance the generator exactly as eager does.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from ir import dtypes as D
from ir.ops import random as R

from .creation import _finish, meta_or_none
from .creation import _sizes as sizes
from .device import device as _device
from .device import to_device
from .tensor import Tensor, bump_version


class Generator:
    """`eager.Generator(device="cpu")`: a random number generator with its own state.

    `manual_seed(seed)` (returns self), `seed()` (a fresh non-deterministic seed, returned),
    `initial_seed()`, `get_state()` (a uint8 tensor) and `set_state(state)`.
    """

    def __init__(self, device="cpu"):
        self.device = _device(device)
        self._stream = R.register_stream(self)  # the `stream` of compiled state write-backs
        self.seed()

    def manual_seed(self, seed) -> Generator:
        seed = int(seed)
        self._initial = seed
        self._rng = np.random.Generator(np.random.PCG64(seed & (2**64 - 1)))
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy) & (2**63 - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._initial

    def get_state(self) -> Tensor:
        """The generator's state as a uint8 tensor (opaque; feed it to `set_state`)."""
        raw = json.dumps({"seed": self._initial, "bit": self._rng.bit_generator.state})
        return Tensor._make(np.frombuffer(raw.encode(), dtype=np.uint8).copy())

    def set_state(self, state: Tensor) -> Generator:
        if not isinstance(state, Tensor) or state.dtype is not D.uint8:
            raise TypeError("expected a torch.ByteTensor as the new state")
        st = json.loads(bytes(state._host()).decode())
        self._initial = st["seed"]
        self._rng.bit_generator.state = st["bit"]
        return self

    def _state_tensor(self) -> Tensor:
        """The state as int64[6] (`ir.ops.random.state_words`): a compiled graph's input."""
        return Tensor._make(R.state_words(self._rng.bit_generator))

    def __repr__(self) -> str:
        return f"<eager.Generator object on {self.device}>"


default_generator = Generator()


def manual_seed(seed) -> Generator:
    """Seed the default generator (`torch.manual_seed`); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator.set_state(state)


def _gen(generator) -> np.random.Generator:
    return (generator or default_generator)._rng


def _sizes(size) -> tuple:
    return sizes(size)


def _float_dtype(dtype, what: str) -> D.DType:
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if dt.category < D.FLOATING:
        raise RuntimeError(f'"{what}" not implemented for \'{dt.title}\'')
    return dt


def _make(arr, dt: D.DType, device=None, requires_grad=False, out=None) -> Tensor:
    return _finish(arr.astype(dt.np) if arr.dtype != dt.np else arr, device, requires_grad, out)


def rand(*size, generator=None, out=None, dtype=None, device=None,
         requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1) of shape `size`; default float dtype; RuntimeError for
    integer dtypes."""
    dt = _float_dtype(dtype, "check_uniform_bounds")
    t = meta_or_none(_sizes(size), dt, device, requires_grad, out)
    if t is not None:
        return t
    return _make(R.draw(_gen(generator), "uniform", _sizes(size), dt), dt, device,
                 requires_grad, out)


def randn(*size, generator=None, out=None, dtype=None, device=None,
          requires_grad=False) -> Tensor:
    """Standard normal samples of shape `size`; default float dtype."""
    dt = _float_dtype(dtype, "normal_kernel_cpu")
    t = meta_or_none(_sizes(size), dt, device, requires_grad, out)
    if t is not None:
        return t
    return _make(R.draw(_gen(generator), "normal", _sizes(size), dt), dt, device,
                 requires_grad, out)


def randint(*args, size=None, generator=None, out=None, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """`randint(high, size)` or `randint(low, high, size)`: integers in [low, high), int64
    unless `dtype` says otherwise. RuntimeError when low >= high."""
    args = list(args)
    if size is None:
        if not args:
            raise TypeError("randint() missing required argument 'size'")
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    low, high = int(low), int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    t = meta_or_none(_sizes((size,)), dt, device, requires_grad, out)
    if t is not None:
        return t
    arr = R.draw(_gen(generator), "integers", _sizes((size,)), dt, (low, high))
    return _make(arr, dt, device, requires_grad, out)


def randperm(n, *, generator=None, out=None, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1 (int64 by default)."""
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    arr = R.draw(_gen(generator), "permutation", (int(n),), dt, (int(n),))
    return _make(arr, dt, device, requires_grad, out)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None,
           device=None, requires_grad=False) -> Tensor:
    """`normal(mean, std)` with tensor mean and/or std (broadcast; their dtype), or
    `normal(mean, std, size)` with numbers (default float dtype). RuntimeError for std < 0."""
    g = _gen(generator)
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    m = mean._host() if isinstance(mean, Tensor) else mean
    s = std._host() if isinstance(std, Tensor) else std
    if np.any(np.asarray(s) < 0):
        raise RuntimeError(f"normal expects std >= 0.0, but found std {np.min(s)}")
    if tensors:
        dt = D.to_dtype(dtype) if dtype is not None else tensors[0].dtype
        if dt.category < D.FLOATING:
            raise RuntimeError(f'"normal_kernel_cpu" not implemented for \'{dt.title}\'')
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        device = device if device is not None else tensors[0].device
    else:
        if size is None:
            raise TypeError("normal() with float mean and std needs a size")
        dt = _float_dtype(dtype, "normal_kernel_cpu")
        shape = _sizes((size,))
    arr = R.draw(g, "normal_ms", tuple(shape), D.float64, (m, s))
    return _make(arr, dt, device, requires_grad, out)


def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples with probabilities `input` (or the number `p`), in input's dtype.
    RuntimeError for probabilities outside [0, 1]."""
    arr = R.draw(_gen(generator), "bernoulli", tuple(input.shape), input.dtype, (p,),
                 input._host() if p is None else None)
    return _make(arr, input.dtype, input.device, False, out)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """Indices sampled from the rows of `input` (non-negative weights, 1-D or 2-D), int64.

    Without replacement, `num_samples` must not exceed the number of non-zero categories.
    """
    shape = tuple(input.shape[:-1]) + (num_samples,)
    arr = R.draw(_gen(generator), "multinomial", shape, D.int64, (num_samples, replacement),
                 input._host())
    return _make(arr, D.int64, input.device, False, out)


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
              generator=None) -> Tensor:
    return rand(tuple(input.shape), dtype=dtype or input.dtype, generator=generator,
                device=device or input.device, requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad=False,
               generator=None) -> Tensor:
    return randn(tuple(input.shape), dtype=dtype or input.dtype, generator=generator,
                 device=device or input.device, requires_grad=requires_grad)


def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None,
                 requires_grad=False, generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype,
                   generator=generator, device=device or input.device)


# ---------------------------------------------------------------- in-place samplers


def _fill(t: Tensor, arr) -> Tensor:
    t._check_inplace()
    t._data[...] = to_device(np.asarray(arr).astype(t._data.dtype), t.device)
    bump_version(t)
    return t


def uniform_(self: Tensor, a=0.0, b=1.0, *, generator=None) -> Tensor:
    """Fill with samples uniform in [a, b)."""
    return _fill(self, R.draw(_gen(generator), "uniform_ab", tuple(self.shape), D.float64,
                              (a, b)))


def normal_(self: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fill with normal samples of the given mean and standard deviation."""
    return _fill(self, R.draw(_gen(generator), "normal_ms", tuple(self.shape), D.float64,
                              (mean, std)))


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 samples: 1 with probability `p` (a number, or a tensor broadcast to self's
    shape). RuntimeError for probabilities outside [0, 1], as PyTorch."""
    probs = np.broadcast_to(p._host(), tuple(self.shape)) if isinstance(p, Tensor) else None
    return _fill(self, R.draw(_gen(generator), "bernoulli", tuple(self.shape), D.float64,
                              (None if probs is not None else p,), probs))


def random_bounds(dtype: D.DType, low=0, high=None) -> tuple[int, int]:
    """`random_`'s [low, high): `random_(high)` means [0, high); `random_()` draws from
    [0, 2**24) for floating dtypes and [0, 2**31) for integers."""
    if high is None:
        low, high = 0, (low if low else 2**24 if dtype.is_floating_point else 2**31)
    return int(low), int(high)


def random_(self: Tensor, low=0, high=None, *, generator=None) -> Tensor:
    """Fill with integers in [low, high) (`random_(high)` means [0, high))."""
    low, high = random_bounds(self.dtype, low, high)
    return _fill(self, R.draw(_gen(generator), "integers", tuple(self.shape), D.int64,
                              (low, high)))


def exponential_(self: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    return _fill(self, R.draw(_gen(generator), "exponential", tuple(self.shape), D.float64,
                              (1.0 / lambd,)))


def _none_on_meta(sampler):
    """`sampler` for a meta tensor: nothing drawn, nothing written (as PyTorch's). The
    wrapper carries `sampler`'s signature (`__wrapped__`: capture binds the call to it)."""
    @functools.wraps(sampler)
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        if self.is_meta:
            self._check_inplace()
            return self
        return sampler(self, *args, **kwargs)

    return method


def install(tensor_cls) -> None:
    """The in-place samplers as Tensor methods (drawing nothing on meta tensors)."""
    for fn in (uniform_, normal_, bernoulli_, random_, exponential_):
        setattr(tensor_cls, fn.__name__, _none_on_meta(fn))

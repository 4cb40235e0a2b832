"""`DistributedDataParallel`, as torch.nn.parallel's: one model replica per process, gradients
averaged across processes during backward.

How it works (the design of torch's C++ `Reducer`, in Python over `eager.distributed`):
- At construction, rank 0's parameters and buffers are broadcast (one coalesced buffer per
  dtype), so every replica starts equal.
- Parameters are put in buckets in reverse registration order (about the order backward
  produces their gradients): the first bucket holds up to 1 MB, the others `bucket_cap_mb`
  (25 MB); a bucket holds one dtype.
- A post-accumulate-grad hook on each parameter marks it ready. When every parameter of the
  next bucket (in index order, the same on every rank) is ready, its gradients are flattened
  into the bucket and an asynchronous all-reduce starts, while backward goes on computing the
  rest; each hook also polls the outstanding all-reduces so MPI progresses them.
- When the last bucket has started, the hook waits for all of them and writes the averaged
  gradients back into each `param.grad`.
- `find_unused_parameters=True`: after forward, the autograd graph of the outputs is walked;
  parameters it does not reach are marked ready at once (their bucket slots carry zeros), and a
  used-map is all-reduced so that a parameter no rank used keeps `grad` None, as torch's.
  Without it, a parameter that gets no gradient leaves its bucket unreduced, and the next
  forward raises torch's "Expected to have finished reduction" error.
- `no_sync()`: backward accumulates local gradients without communication; the next synced
  backward reduces the accumulated sums.
- `broadcast_buffers=True`: rank 0's buffers are broadcast before each forward.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ... import distributed as dist
from ...grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor, bump_version
from ..module import Module

__all__ = ["DistributedDataParallel"]

FIRST_BUCKET_BYTES = 1 << 20


class _Bucket:
    __slots__ = ("params", "pending", "buf", "work", "index")

    def __init__(self, index: int, params: list):
        self.index = index
        self.params = params
        self.pending = len(params)
        self.buf = None
        self.work = None


def _buckets(params: list, cap_bytes: int) -> list:
    """Parameters (reverse registration order) in buckets of one dtype and at most
    `cap_bytes` (at most FIRST_BUCKET_BYTES for the first); a parameter larger than the cap is a
    bucket of its own."""
    out, cur, size, cap = [], [], 0, min(FIRST_BUCKET_BYTES, cap_bytes)
    for p in reversed(params):
        nbytes = p.numel() * p._data.itemsize
        if cur and (size + nbytes > cap or p.dtype is not cur[0].dtype):
            out.append(cur)
            cur, size, cap = [], 0, cap_bytes
        cur.append(p)
        size += nbytes
    if cur:
        out.append(cur)
    return [_Bucket(i, ps) for i, ps in enumerate(out)]


def _broadcast_coalesced(tensors: list, pg, src: int) -> None:
    """Broadcast `tensors` from `src`, one flat buffer per dtype."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    for ts in by_dtype.values():
        flat = Tensor._make(np.concatenate([t._data.reshape(-1) for t in ts]))
        dist.broadcast(flat, src=src, group=pg)
        off = 0
        for t in ts:
            n = t.numel()
            t._data[...] = flat._data[off:off + n].reshape(t._data.shape)
            bump_version(t)
            off += n


def _reachable_params(outputs) -> set:
    """ids of the leaf tensors the autograd graph of `outputs` reaches."""
    seen, found = set(), set()
    stack = []

    def push(v):
        if isinstance(v, Tensor):
            if v.grad_fn is not None:
                stack.append(v.grad_fn)
            elif v.requires_grad:
                found.add(id(v))
        elif isinstance(v, (list, tuple)):
            for x in v:
                push(x)
        elif isinstance(v, dict):
            for x in v.values():
                push(x)
    push(outputs)
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            found.add(id(var))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return found


class DistributedDataParallel(Module):
    """Data-parallel training of `module` across the processes of `process_group` (default:
    the world). Call it as the module; after `loss.backward()` every rank's `param.grad` is the
    average over ranks. `device_ids`/`output_device` are accepted for torch compatibility
    (CPU tensors only here). ValueError before `init_process_group`."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        super().__init__()
        self.module = module
        self.process_group = dist.process_group.resolve(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        seen, params = set(), []
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
        self._params = params
        if init_sync:
            _broadcast_coalesced(params + list(module.buffers()), self.process_group, 0)
        self._buckets = _buckets(params, self.bucket_bytes_cap)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._hooks = [p.register_post_accumulate_grad_hook(self._on_grad_ready)
                       for p in params]
        self._active = False       # a synced backward is expected (forward ran with grad on)
        self._next = 0             # the next bucket to launch
        self._ready = set()
        self._used = set()

    # ------------------------------------------------------------------ forward

    def forward(self, *inputs, **kwargs):
        if self._active and self._next < len(self._buckets) and self._ready:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss.")
        if self.broadcast_buffers:
            bufs = list(self.module.buffers())
            if bufs:
                _broadcast_coalesced(bufs, self.process_group, 0)
        sync = is_grad_enabled() and self.require_backward_grad_sync
        self._reset(sync)
        out = self.module(*inputs, **kwargs)
        if sync and self.find_unused_parameters:
            reached = _reachable_params(out)
            self._used = {id(p) for p in self._params if id(p) in reached}
            for p in self._params:
                if id(p) not in reached:
                    self._mark_ready(p)
        return out

    def _reset(self, sync: bool) -> None:
        self._active = sync
        self._next = 0
        self._ready = set()
        self._used = {id(p) for p in self._params}
        for b in self._buckets:
            b.pending, b.buf, b.work = len(b.params), None, None

    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside accumulates gradients locally, without communication."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------------ backward

    def _on_grad_ready(self, p) -> None:
        if not self._active:
            return
        self._mark_ready(p)
        for b in self._buckets[:self._next]:  # let MPI progress what is in flight
            if b.work is not None:
                b.work.is_completed()

    def _mark_ready(self, p) -> None:
        if id(p) in self._ready:
            return
        self._ready.add(id(p))
        self._bucket_of[id(p)].pending -= 1
        while self._next < len(self._buckets) and self._buckets[self._next].pending == 0:
            self._launch(self._buckets[self._next])
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _launch(self, b: _Bucket) -> None:
        parts = [p.grad._data.reshape(-1) if p.grad is not None
                 else np.zeros(p.numel(), p._data.dtype) for p in b.params]
        b.buf = Tensor._make(np.concatenate(parts))
        b.work = dist.all_reduce(b.buf, group=self.process_group, async_op=True)

    def _finish(self) -> None:
        self._active = False
        n = self.process_group.size()
        used = None
        if self.find_unused_parameters:
            flags = Tensor._make(np.array([id(p) in self._used for p in self._params],
                                          np.int32))
            dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.process_group)
            used = {id(p) for p, f in zip(self._params, flags._data) if f}
        with no_grad():
            for b in self._buckets:
                b.work.wait()
                avg = b.buf._data
                if n > 1:
                    np.divide(avg, n, out=avg, casting="unsafe")
                off = 0
                for p in b.params:
                    k = p.numel()
                    if used is None or id(p) in used:
                        g = avg[off:off + k].reshape(p._data.shape)
                        if p.grad is None:
                            p.grad = Tensor._make(g.copy())
                        else:
                            p.grad._data[...] = g
                            bump_version(p.grad)
                    off += k
                b.buf = b.work = None

    def extra_repr(self) -> str:
        return ""

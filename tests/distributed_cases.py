"""Cases of eager.distributed run under `mpiexec -n N python tests/distributed_cases.py [names]`
(driven by tests/test_distributed.py; runnable by hand). Each `case_*` function runs on every
rank and checks its result against a numpy reference, or a one-process run of the whole batch
(DDP); the driver prints `PASS name` or `FAIL name: reason` per case on rank 0 after all ranks
agree, and exits 1 on any failure.
"""

from __future__ import annotations

import sys
import traceback

import numpy as np

import eager as torch
import eager.distributed as dist
from eager.nn.parallel import DistributedDataParallel as DDP

RANK = WORLD = 0
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64",
          "bool", "complex64", "complex128"]


def _data(rank: int, dtype: str, shape=(3, 5)) -> np.ndarray:
    g = np.random.default_rng(100 + rank)
    if dtype == "bool":
        return g.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return g.integers(1, 4, shape).astype(dtype)
    if dtype.startswith("complex"):
        return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(dtype)
    return g.standard_normal(shape).astype(np.float32)  # cast by eager below (half types)


def _t(a: np.ndarray, dtype: str):
    return torch.tensor(a, dtype=getattr(torch, dtype))


def _np(t) -> np.ndarray:
    return t.float().numpy() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy()


def _ref(dtype: str, op: str) -> np.ndarray:
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    arrs = [_np(_t(_data(r, dtype), dtype)).astype(np.int64 if dtype == "bool" else wide)
            for r in range(WORLD)]
    red = {"SUM": np.sum, "PRODUCT": np.prod, "MIN": np.min, "MAX": np.max,
           "AVG": np.mean}[op](np.stack(arrs), axis=0)
    return red.astype(bool) if dtype == "bool" else red


def _close(got, want, dtype) -> None:
    tol = {"float16": 2e-2, "bfloat16": 5e-2}.get(dtype, 1e-6)
    if dtype.startswith(("int", "uint")) or dtype == "bool":
        np.testing.assert_array_equal(got.astype(want.dtype), want)
    else:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def case_all_reduce_every_dtype_and_op():
    for dtype in DTYPES:
        for op in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
            if dtype.startswith("complex") and op in ("MIN", "MAX"):
                continue
            if op == "AVG" and not dtype.startswith(("float", "bfloat", "complex")):
                continue
            if op == "PRODUCT" and dtype in ("int8", "uint8"):
                continue  # overflow wraps differently from the float64 reference
            t = _t(_data(RANK, dtype), dtype)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            _close(_np(t), _ref(dtype, op), dtype)
            assert t.dtype is getattr(torch, dtype)


def case_avg_on_ints_raises():
    t = torch.ones(3, dtype=torch.int64)
    try:
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    except RuntimeError as e:
        assert "AVG" in str(e)
    else:
        raise AssertionError("AVG on int64 did not raise")
    np.testing.assert_array_equal(t.numpy(), 1)


def case_broadcast_reduce_gather_scatter():
    for dtype in DTYPES:
        src = WORLD - 1
        t = _t(_data(RANK, dtype), dtype)
        dist.broadcast(t, src=src)
        _close(_np(t), _np(_t(_data(src, dtype), dtype)), dtype)
        outs = [torch.zeros(3, 5, dtype=getattr(torch, dtype)) for _ in range(WORLD)]
        dist.all_gather(outs, _t(_data(RANK, dtype), dtype))
        for r in range(WORLD):
            _close(_np(outs[r]), _np(_t(_data(r, dtype), dtype)), dtype)
    x = torch.tensor(_data(RANK, "float64"))
    dist.reduce(x, dst=0)
    want = _ref("float64", "SUM") if RANK == 0 else _data(RANK, "float64")
    _close(x.numpy(), want, "float64")
    gl = [torch.zeros(3, 5, dtype=torch.float64) for _ in range(WORLD)] if RANK == 1 else None
    dist.gather(torch.tensor(_data(RANK, "float64")), gl, dst=1)
    if RANK == 1:
        for r in range(WORLD):
            _close(gl[r].numpy(), _data(r, "float64"), "float64")
    got = torch.zeros(2)
    sl = [torch.full((2,), float(r)) for r in range(WORLD)] if RANK == 0 else None
    dist.scatter(got, sl, src=0)
    np.testing.assert_array_equal(got.numpy(), float(RANK))


def case_into_tensor_and_reduce_scatter():
    x = torch.arange(4, dtype=torch.float32) + 10 * RANK
    out = torch.zeros(WORLD * 4)
    dist.all_gather_into_tensor(out, x)
    want = np.concatenate([np.arange(4) + 10 * r for r in range(WORLD)])
    np.testing.assert_array_equal(out.numpy(), want)
    stacked = torch.zeros(WORLD, 4)
    dist.all_gather_into_tensor(stacked, x)
    np.testing.assert_array_equal(stacked.numpy().ravel(), want)
    inp = torch.arange(WORLD * 3, dtype=torch.float64) * (RANK + 1)
    o = torch.zeros(3, dtype=torch.float64)
    dist.reduce_scatter_tensor(o, inp)
    total = sum(np.arange(WORLD * 3) * (r + 1) for r in range(WORLD))
    np.testing.assert_allclose(o.numpy(), total[3 * RANK:3 * RANK + 3])
    o2 = torch.zeros(3, dtype=torch.float64)
    dist.reduce_scatter(o2, list(inp.split(3)))
    np.testing.assert_allclose(o2.numpy(), total[3 * RANK:3 * RANK + 3])


def case_all_to_all():
    inp = torch.arange(WORLD * 2, dtype=torch.int64) + 100 * RANK
    out = torch.zeros(WORLD * 2, dtype=torch.int64)
    dist.all_to_all_single(out, inp)
    want = np.concatenate([np.arange(2 * RANK, 2 * RANK + 2) + 100 * s for s in range(WORLD)])
    np.testing.assert_array_equal(out.numpy(), want)
    ins = [torch.full((r + 1,), float(RANK)) for r in range(WORLD)]
    outs = [torch.zeros(RANK + 1) for _ in range(WORLD)]
    dist.all_to_all(outs, ins)
    for s in range(WORLD):
        np.testing.assert_array_equal(outs[s].numpy(), float(s))


def case_async_and_p2p():
    works = [dist.all_reduce(torch.full((4,), float(RANK + k)), async_op=True)
             for k in range(3)]
    outs = [w.result()[0] for w in works]
    for w in works:
        assert w.wait() and w.is_completed()
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.numpy(), sum(r + k for r in range(WORLD)))
    right, left = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    buf = torch.zeros(3, dtype=torch.float64)
    rw = dist.irecv(buf, src=left)
    sw = dist.isend(torch.full((3,), float(RANK), dtype=torch.float64), dst=right)
    sw.wait()
    rw.wait()
    np.testing.assert_array_equal(buf.numpy(), float(left))
    if RANK == 0:
        for _ in range(WORLD - 1):
            b = torch.zeros(1)
            src = dist.recv(b)
            assert b.item() == src, (b.item(), src)
    else:
        dist.send(torch.full((1,), float(RANK)), dst=0)
    dist.barrier()


def case_groups_and_objects():
    evens = [r for r in range(WORLD) if r % 2 == 0]
    g = dist.new_group(evens)
    if RANK in evens:
        assert dist.get_world_size(g) == len(evens)
        assert dist.get_rank(g) == evens.index(RANK)
        t = torch.ones(2) * RANK
        dist.all_reduce(t, group=g)
        np.testing.assert_array_equal(t.numpy(), sum(evens))
        b = torch.zeros(1) + RANK
        dist.broadcast(b, src=evens[-1], group=g)  # src is a global rank
        assert b.item() == evens[-1]
    else:
        assert dist.get_rank(g) == -1
    objs = [None] * WORLD
    dist.all_gather_object(objs, {"rank": RANK, "s": "x" * RANK})
    assert objs == [{"rank": r, "s": "x" * r} for r in range(WORLD)]
    lst = [RANK, "mine"] if RANK == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "mine"]
    got = [None]
    dist.scatter_object_list(got, [f"to{r}" for r in range(WORLD)] if RANK == 0 else None)
    assert got[0] == f"to{RANK}"


def case_mismatched_shapes_raise_everywhere():
    try:
        dist.all_reduce(torch.ones(2 + RANK))
    except RuntimeError as e:
        assert "shape" in str(e), e
    else:
        raise AssertionError("mismatched shapes did not raise")
    dist.barrier()  # the group is still usable


# ---------------------------------------------------------------------------------- DDP

class _WithUnused(torch.nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body
        self.unused = torch.nn.Linear(3, 3)  # never called in forward

    def forward(self, x):
        return self.body(x)


def _model(seed, dtype=torch.float64, extra=False):
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.GELU(),
              torch.nn.Linear(16, 3)]
    m = torch.nn.Sequential(*layers)
    return (_WithUnused(m) if extra else m).to(dtype)


def _batches(steps, per_rank, dtype=np.float64):
    g = np.random.default_rng(7)
    return [(g.standard_normal((per_rank * WORLD, 6)).astype(dtype),
             g.integers(0, 3, per_rank * WORLD)) for _ in range(steps)]


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    opt.step()


def _params(m) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])


def _ddp_vs_single(cap_mb, steps=5, per_rank=4, opt_cls="SGD"):
    ref = _model(0)
    ddp_model = _model(RANK + 1)  # different init: DDP must broadcast rank 0's...
    if RANK == 0:
        ddp_model.load_state_dict(ref.state_dict())  # ...which equals the reference
    ddp = DDP(ddp_model, bucket_cap_mb=cap_mb)
    mk = lambda ps: getattr(torch.optim, opt_cls)(ps, lr=0.05)  # noqa: E731
    opt_ref, opt = mk(ref.parameters()), mk(ddp.parameters())
    for x, y in _batches(steps, per_rank):
        _step(ref, opt_ref, x, y)
        lo = RANK * per_rank
        _step(ddp, opt, x[lo:lo + per_rank], y[lo:lo + per_rank])
    np.testing.assert_allclose(_params(ddp_model), _params(ref), rtol=1e-5, atol=1e-8)
    return ddp


def case_ddp_equals_one_process_whole_batch():
    ddp = _ddp_vs_single(cap_mb=25)
    assert len(ddp._buckets) == 1
    ddp = _ddp_vs_single(cap_mb=0.0005, opt_cls="Adam")  # 524-byte buckets: one per param
    assert len(ddp._buckets) >= 5


def case_ddp_no_sync_accumulation_equals_full_step():
    ref, m = _model(0), _model(0)
    ddp = DDP(m)
    opt_ref, opt = torch.optim.SGD(ref.parameters(), lr=0.1), torch.optim.SGD(m.parameters(),
                                                                              lr=0.1)
    (x, y), = _batches(1, 8)
    half = 4
    lo = RANK * 8
    xr, yr = x[lo:lo + 8], y[lo:lo + 8]
    opt.zero_grad()
    with ddp.no_sync():
        loss = torch.nn.functional.cross_entropy(ddp(torch.tensor(xr[:half])),
                                                 torch.tensor(yr[:half])) / 2
        loss.backward()
    loss = torch.nn.functional.cross_entropy(ddp(torch.tensor(xr[half:])),
                                             torch.tensor(yr[half:])) / 2
    loss.backward()
    opt.step()
    _step(ref, opt_ref, x, y)
    np.testing.assert_allclose(_params(m), _params(ref), rtol=1e-5, atol=1e-8)


def case_ddp_find_unused_parameters():
    ref, m = _model(0, extra=True), _model(0, extra=True)
    ddp = DDP(m, find_unused_parameters=True, bucket_cap_mb=0.001)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for x, y in _batches(3, 4):
        _step(ref, opt_ref, x, y)
        lo = RANK * 4
        _step(ddp, opt, x[lo:lo + 4], y[lo:lo + 4])
    assert m.unused.weight.grad is None  # no rank used it: grad stays None, as torch's
    np.testing.assert_allclose(_params(m), _params(ref), rtol=1e-5, atol=1e-8)


def case_ddp_unused_without_flag_raises_next_forward():
    m = _model(0, extra=True)
    ddp = DDP(m, bucket_cap_mb=0.0001)
    x = torch.randn(4, 6, dtype=torch.float64)
    ddp(x).sum().backward()
    try:
        ddp(x)
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e)
    else:
        raise AssertionError("no error for a parameter without gradient")


def case_ddp_buffers_and_batchnorm():
    torch.manual_seed(RANK)
    m = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 2)).double()
    ddp = DDP(m)
    x = torch.randn(5, 6, dtype=torch.float64)
    ddp(x).sum().backward()
    mean = m[1].running_mean.numpy().copy()
    every = [None] * WORLD
    dist.all_gather_object(every, mean)
    ddp(x)  # the next forward broadcasts rank 0's running stats first
    every_w = [None] * WORLD
    dist.all_gather_object(every_w, _params(m))
    assert all(np.array_equal(every_w[0], w) for w in every_w)


def case_ddp_with_compiled_model_inside():
    import capture

    ref = _model(0)
    m = _model(0)
    ddp = DDP(capture.compile(m))
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for x, y in _batches(3, 4):
        _step(ref, opt_ref, x, y)
        lo = RANK * 4
        _step(ddp, opt, x[lo:lo + 4], y[lo:lo + 4])
    np.testing.assert_allclose(_params(m), _params(ref), rtol=1e-5, atol=1e-8)


def case_sampler_partitions_dataset():
    from eager.utils.data import DataLoader, TensorDataset
    from eager.utils.data.distributed import DistributedSampler

    for n, drop_last, shuffle in [(10, False, True), (10, True, True), (7, False, False),
                                  (3, False, True)]:
        ds = TensorDataset(torch.arange(n))
        s = DistributedSampler(ds, shuffle=shuffle, drop_last=drop_last, seed=3)
        s.set_epoch(1)
        mine = list(s)
        every = [None] * WORLD
        dist.all_gather_object(every, mine)
        flat = [i for part in every for i in part]
        assert all(len(p) == len(s) for p in every)
        if drop_last:
            assert len(set(flat)) == len(flat) <= n
        else:
            assert set(flat) == set(range(n)) and len(flat) == -(-n // WORLD) * WORLD
        if n >= WORLD and not drop_last and n % WORLD == 0:
            assert len(set(flat)) == len(flat)
        got = [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=s)]
        assert [i for b in got for i in b] == mine


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main(argv) -> int:
    global RANK, WORLD
    dist.init_process_group("mpi")
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    names = argv or list(CASES)
    failed = 0
    for name in names:
        err = ""
        try:
            CASES[name]()
        except Exception:  # noqa: BLE001  (reported per case)
            err = traceback.format_exc().strip().splitlines()[-1]
        errs = [None] * WORLD
        dist.all_gather_object(errs, err)
        bad = [(r, e) for r, e in enumerate(errs) if e]
        if RANK == 0:
            print(f"PASS {name}" if not bad else f"FAIL {name}: rank {bad[0][0]}: {bad[0][1]}",
                  flush=True)
        failed += bool(bad)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

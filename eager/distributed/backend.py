"""The transport under `eager.distributed`: MPI through mpi4py, and nothing of wick's own.

What lives here: importing mpi4py (lazily, with a clear error naming the extra to install),
the numpy dtype -> wire dtype rules (MPI has no bfloat16/float16 arithmetic: reductions of those
run in float32 and round back, as a reduced-precision NCCL sum would; bool reduces as uint8),
the reduction ops, and `wait` - completing an MPI request by polling it against a deadline, so
a collective whose peers died or called something else raises after the group's timeout
instead of hanging forever.

Every collective of `collectives.py` is a nonblocking MPI call (`Iallreduce`, `Ibcast`, ...)
completed by `wait`; blocking calls are the same calls waited at once.
"""

from __future__ import annotations

import enum
import os
import time

import numpy as np

_MPI = None


def mpi():
    """The `mpi4py.MPI` module; ImportError naming the extra when mpi4py is absent."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py

            mpi4py.rc.initialize = True
            mpi4py.rc.finalize = True
            mpi4py.rc.threads = False  # no MPI_THREAD_MULTIPLE needed: one thread calls MPI
            from mpi4py import MPI
        except ImportError as e:
            raise ImportError(
                "eager.distributed runs on MPI through mpi4py, which is not installed: "
                "pip install 'wick[distributed]' (or: pip install mpi4py mpich)") from e
        _MPI = MPI
    return _MPI


def is_available() -> bool:
    """Whether mpi4py imports (without initializing MPI)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


class ReduceOp(enum.Enum):
    """`torch.distributed.ReduceOp`: SUM, AVG (floating and complex only), PRODUCT, MIN, MAX,
    and the bitwise BAND/BOR/BXOR (integers and bool)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}: {list(ReduceOp).index(self)}>"


def mpi_op(op: ReduceOp, dtype: np.dtype):
    """The MPI reduction for `op` on arrays of `dtype` (the wire dtype); ValueError (in
    torch's terms) where the op is undefined for the dtype."""
    MPI = mpi()
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, got {op!r}")
    kind = dtype.kind
    if op in (ReduceOp.MIN, ReduceOp.MAX) and kind == "c":
        raise RuntimeError(f"ReduceOp.{op.name} is not supported for complex tensors")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise RuntimeError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype}")
    if op is ReduceOp.AVG and kind not in "fc":
        raise RuntimeError("ReduceOp.AVG needs a floating point or complex tensor "
                           f"(got {dtype}): use SUM and divide")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def wire_dtype(dtype: np.dtype, reducing: bool) -> np.dtype:
    """The numpy dtype a buffer travels as. Copies (broadcast, gather, send) move raw bytes, so
    types MPI does not know travel as same-width unsigned ints; reductions of half types run in
    float32, of bool in uint8."""
    if dtype.kind == "b":
        return np.dtype(np.uint8)
    known = dtype.kind in "iuc" or dtype in (np.float32, np.float64)
    if known:
        return dtype
    if reducing:
        if dtype.kind == "V" or dtype.itemsize == 2:  # float16, bfloat16 (ml_dtypes)
            return np.dtype(np.float32)
        raise RuntimeError(f"cannot reduce tensors of dtype {dtype}")
    return np.dtype(f"u{dtype.itemsize}")


def spin_seconds() -> float:
    """How long `wait` polls without sleeping (as MPI_Wait does) before it starts yielding the
    CPU between polls: `WICK_DIST_SPIN_S`, default 5 ms."""
    return float(os.environ.get("WICK_DIST_SPIN_S", "0.005"))


def wait(request, deadline: float, what: str, statuses=None) -> None:
    """Complete `request` (an MPI request or a list of them) before `deadline`
    (`time.monotonic()` seconds), filling `statuses` (a list of `MPI.Status`) when given;
    RuntimeError after the deadline, naming the collective. Polls busily for `spin_seconds()`
    (latency as MPI_Wait's), then sleeps between polls (50 us growing to 2 ms)."""
    MPI = mpi()
    reqs = request if isinstance(request, list) else [request]
    if len(reqs) == 1:  # one request: its own Test is cheaper per poll than Testall's list
        req, status = reqs[0], statuses[0] if statuses else None
        test = (lambda: req.Test(status)) if status is not None else req.Test
    else:
        testall = MPI.Request.Testall

        def test():
            return testall(reqs, statuses)
    if test():
        return
    start = time.monotonic()
    spin_until = start + spin_seconds()
    nap = 5e-5
    while True:
        for _ in range(256):
            if test():
                return
        now = time.monotonic()
        if now > deadline:
            raise RuntimeError(
                f"eager.distributed: {what} timed out: not every rank of the group reached "
                "it within the process group's timeout (a rank may have failed, or called "
                "a different collective)")
        if now > spin_until:
            time.sleep(nap)
            nap = min(nap * 2, 2e-3)

"""eager.distributed against raw mpi4py, and DDP's overlap of communication with backward.

    python benchmarks/bench_distributed.py [--ranks 2] [--ddp-ranks 1,2,4] [--quick]

1. All-reduce (SUM, float32) of 4 KB ... 64 MB on `--ranks` processes: `eager.distributed.
   all_reduce` on a tensor vs `comm.Allreduce(MPI.IN_PLACE, buf)` of mpi4py on the same numpy
   buffer. Bus bandwidth as nccl-tests defines it: bytes / time x 2(N-1)/N. Goal: eager >= 0.9x
   raw at >= 1 MB.
2. A DDP training step (MLP 512-1024-1024-10, batch 64 per rank, SGD) on 1, 2, 4 processes:
   the step time, the time of the same step without DDP (compute), the time of all-reducing the
   gradient buckets alone (comm), and the share of comm hidden under backward:
   (compute + comm - step) / comm.

Launches itself under `mpiexec` (needs `pip install 'wick[distributed]'`). The processes share
this machine's cores: with more ranks than cores, times include oversubscription.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _best(fn, comm, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        t = comm.allreduce(time.perf_counter() - t0, op=_MPI.MAX)
        best = min(best, t)
    return best


def worker_allreduce(quick: bool) -> None:
    import eager
    import eager.distributed as dist

    dist.init_process_group("mpi")
    comm = _MPI.COMM_WORLD
    n = comm.Get_size()
    rows = []
    for size in SIZES[:4] if quick else SIZES:
        count = size // 4
        repeat = 5 if size >= 16 << 20 else 20
        buf = np.ones(count, np.float32)
        t_raw = _best(lambda: comm.Allreduce(_MPI.IN_PLACE, buf), comm, repeat)
        t = eager.ones(count)
        t_ours = _best(lambda: dist.all_reduce(t), comm, repeat)
        bus = lambda s: size / s * 2 * (n - 1) / n / 1e9  # noqa: E731
        rows.append(dict(size=size, raw_us=t_raw * 1e6, ours_us=t_ours * 1e6,
                         raw_bus=bus(t_raw), ours_bus=bus(t_ours)))
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps(rows))
    dist.destroy_process_group()


def worker_ddp(quick: bool) -> None:
    import eager as torch
    import eager.distributed as dist
    from eager.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    comm = _MPI.COMM_WORLD
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10))
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
    repeat = 3 if quick else 10

    def step(m, opt):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()

    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t_compute = _best(lambda: step(model, opt), comm, repeat)
    ddp = DDP(model)
    opt2 = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    t_step = _best(lambda: step(ddp, opt2), comm, repeat)
    grads = [torch.zeros(b.params[0].numel() and sum(p.numel() for p in b.params))
             for b in ddp._buckets]

    def comm_only():
        works = [dist.all_reduce(g, async_op=True) for g in grads]
        for w in works:
            w.wait()
    t_comm = _best(comm_only, comm, repeat)
    if comm.Get_rank() == 0:
        hidden = (t_compute + t_comm - t_step) / t_comm if comm.Get_size() > 1 else float("nan")
        print("RESULT " + json.dumps(dict(ranks=comm.Get_size(), step_ms=t_step * 1e3,
                                          compute_ms=t_compute * 1e3, comm_ms=t_comm * 1e3,
                                          buckets=len(ddp._buckets),
                                          hidden=max(0.0, min(1.0, hidden))
                                          if hidden == hidden else None)))
    dist.destroy_process_group()


def _launch(n: int, what: str, quick: bool):
    from eager.distributed.run import find_mpiexec, thread_env

    cmd = [find_mpiexec(), "-n", str(n), sys.executable, __file__, "--worker", what]
    out = subprocess.run(cmd + (["--quick"] if quick else []), capture_output=True, text=True,
                         timeout=600, env=thread_env(n))
    for ln in out.stdout.splitlines():
        if ln.startswith("RESULT "):
            return json.loads(ln[7:])
    raise RuntimeError(f"{what} on {n} ranks failed:\n{out.stdout}\n{out.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--ddp-ranks", default="1,2,4")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--worker", default=None)
    a = ap.parse_args()
    if a.worker:
        global _MPI
        from mpi4py import MPI as _MPI
        {"allreduce": worker_allreduce, "ddp": worker_ddp}[a.worker](a.quick)
        return
    rows = _launch(a.ranks, "allreduce", a.quick)
    print(f"all_reduce (float32 SUM) on {a.ranks} ranks: eager.distributed vs raw mpi4py\n")
    print("| size | raw mpi4py | eager | raw busbw GB/s | eager busbw GB/s | eager/raw bw |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        size = f"{r['size'] >> 20} MB" if r["size"] >= 1 << 20 else f"{r['size'] >> 10} KB"
        print(f"| {size} | {r['raw_us']:.1f} us | {r['ours_us']:.1f} us | {r['raw_bus']:.2f} | "
              f"{r['ours_bus']:.2f} | {r['raw_us'] / r['ours_us']:.2f}x |")
    print("\nDDP step, MLP 512-1024-1024-10, batch 64 per rank\n")
    print("| ranks | step | compute only | comm only | buckets | comm hidden |")
    print("|---|---|---|---|---|---|")
    for n in (int(v) for v in a.ddp_ranks.split(",")):
        r = _launch(n, "ddp", a.quick)
        hid = "-" if r["hidden"] is None else f"{100 * r['hidden']:.0f}%"
        print(f"| {n} | {r['step_ms']:.2f} ms | {r['compute_ms']:.2f} ms | "
              f"{r['comm_ms']:.2f} ms | {r['buckets']} | {hid} |")


_MPI = None

if __name__ == "__main__":
    main()

"""`wick run`: start N processes of a script over MPI, as `torchrun` does over its own agent.

    wick run -n 4 train.py --epochs 3            # 4 processes on this machine
    wick run -n 8 --hostfile hosts train.py      # 8 processes over the machines in `hosts`
    python -m eager.distributed.run -n 2 train.py

It runs `mpiexec -n N [-f HOSTFILE] python -m eager.distributed.run --worker train.py ...`
with the `mpiexec` installed beside this Python (the MPICH wheel's) or on PATH, and, unless set,
OMP_NUM_THREADS/OPENBLAS_NUM_THREADS/MKL_NUM_THREADS = cores / N (torchrun's rule). Each worker sets
`RANK`, `WORLD_SIZE`, `LOCAL_RANK` and `LOCAL_WORLD_SIZE` from MPI (so `init_process_group`
with `env://` finds them), then runs the script as `__main__`. An exception that escapes the
script on any rank prints its traceback and aborts every rank (MPI_Abort): no rank is left
waiting in a collective. A host file lists one machine per line (`host:slots`, MPICH's Hydra
format); every machine needs the same Python environment and the script at the same path.
"""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys
import traceback

from .backend import mpi
from .process_group import abort_world


def find_mpiexec() -> str:
    """The `mpiexec` beside this interpreter (a venv's, from the mpich wheel) or on PATH;
    FileNotFoundError naming the package to install."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        return here
    found = shutil.which("mpiexec")
    if found:
        return found
    raise FileNotFoundError("wick run needs `mpiexec`: pip install 'wick[distributed]' "
                            "(mpi4py and the mpich wheel, which installs mpiexec)")


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_env(nproc: int, env=None) -> dict:
    """The environment for `nproc` processes on this machine: unless the user set them, the
    BLAS/OpenMP thread counts are the machine's cores divided among the processes (as torchrun
    sets OMP_NUM_THREADS), so N processes of multithreaded numpy do not oversubscribe the
    cores (2 ranks x 2 BLAS threads on 2 cores ran a DDP step 35x slower)."""
    env = dict(os.environ if env is None else env)
    per = str(max(1, (os.cpu_count() or 1) // max(1, nproc)))
    for var in THREAD_VARS:
        env.setdefault(var, per)
    return env


def launch_command(nproc: int, script: str, script_args: list, hostfile=None,
                   mpiexec=None) -> list:
    """The mpiexec command line that `wick run` executes."""
    cmd = [mpiexec or find_mpiexec(), "-n", str(nproc)]
    if hostfile:
        cmd += ["-f", hostfile]
    return cmd + [sys.executable, "-m", "eager.distributed.run", "--worker", script,
                  *script_args]


def _worker(script: str, script_args: list) -> int:
    MPI = mpi()
    world = MPI.COMM_WORLD
    local = world.Split_type(MPI.COMM_TYPE_SHARED, key=world.Get_rank())
    os.environ.update(RANK=str(world.Get_rank()), WORLD_SIZE=str(world.Get_size()),
                      LOCAL_RANK=str(local.Get_rank()),
                      LOCAL_WORLD_SIZE=str(local.Get_size()))
    local.Free()
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if code and world.Get_size() > 1:
            abort_world(code, "" if isinstance(e.code, int) or e.code is None else f"{e.code}\n")
        return code
    except BaseException:  # noqa: BLE001  (any failure stops every rank)
        if world.Get_size() > 1:
            abort_world(1, traceback.format_exc())
        traceback.print_exc()
        return 1
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return _worker(argv[1], argv[2:])
    p = argparse.ArgumentParser(prog="wick run",
                                description="run SCRIPT in N processes over MPI")
    p.add_argument("-n", "--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc",
                   type=int, default=1, help="number of processes (default 1)")
    p.add_argument("-f", "--hostfile", default=None,
                   help="MPICH host file (one `host:slots` per line) for several machines")
    p.add_argument("--dry-run", action="store_true", help="print the mpiexec command only")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nproc < 1:
        p.error("-n must be >= 1")
    cmd = launch_command(a.nproc, a.script, a.args, a.hostfile)
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    return subprocess.call(cmd, env=thread_env(a.nproc))


if __name__ == "__main__":
    sys.exit(main())

"""eager.distributed on 2 and 4 processes of one machine (issue 18): every case of
tests/distributed_cases.py (collectives against numpy references for every dtype and op, groups,
objects, point-to-point, DDP against one process with the whole batch, no_sync, unused
parameters, the sampler) under `mpiexec -n 2` and `-n 4`, and the failure behaviour: a rank that
raises or never arrives stops every rank within the timeout instead of hanging.

Skips when mpi4py or mpiexec is missing (`pip install 'wick[distributed]'`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
from eager.distributed import run as launcher  # noqa: E402

try:
    MPIEXEC = launcher.find_mpiexec()
except FileNotFoundError:
    pytest.skip("mpiexec is not installed", allow_module_level=True)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import distributed_cases  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE),
                                                   os.environ.get("PYTHONPATH", "")]))


def _mpirun(n: int, args: list, timeout: float = 240):
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV)


_RESULTS = {}


def _results(n: int) -> dict:
    if n not in _RESULTS:
        p = _mpirun(n, [str(HERE / "distributed_cases.py")])
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("PASS ", "FAIL "))]
        _RESULTS[n] = ({ln.split()[1].rstrip(":"): ln for ln in lines}, p)
    return _RESULTS[n]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("case", sorted(distributed_cases.CASES))
def test_case(case, n):
    got, proc = _results(n)
    assert case in got, f"case {case} did not report (rc {proc.returncode}):\n" \
                        f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert got[case].startswith("PASS"), got[case]


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_rank_that_raises_stops_every_rank(tmp_path):
    prog = _script(tmp_path, """
        import eager as torch, eager.distributed as dist
        dist.init_process_group("mpi")
        if dist.get_rank() == 1:
            raise ValueError("rank 1 broke")
        dist.all_reduce(torch.ones(3))   # the others would wait here forever
        print("NOT REACHED")
    """)
    for cmd in ([MPIEXEC, "-n", "3", sys.executable, prog],
                [sys.executable, "-m", "eager.distributed.run", "-n", "3", prog]):
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=ENV)
        assert p.returncode != 0
        assert "rank 1 broke" in p.stderr
        assert "NOT REACHED" not in p.stdout
        assert time.monotonic() - t0 < 60


def test_a_rank_that_never_arrives_times_out(tmp_path):
    prog = _script(tmp_path, """
        import datetime, time, eager as torch, eager.distributed as dist
        dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1))
        if dist.get_rank() == 0:
            dist.all_reduce(torch.ones(3))
        else:
            time.sleep(60)
    """)
    t0 = time.monotonic()
    p = _mpirun(2, [prog], timeout=120)
    assert p.returncode != 0
    assert "timed out" in p.stderr
    assert time.monotonic() - t0 < 30


def test_launcher_sets_the_environment(tmp_path):
    prog = _script(tmp_path, f"""
        import os, sys, eager.distributed as dist
        dist.init_process_group("gloo", init_method="env://")
        assert int(os.environ["RANK"]) == dist.get_rank()
        assert int(os.environ["WORLD_SIZE"]) == dist.get_world_size() == 2
        assert os.environ["LOCAL_RANK"] == os.environ["RANK"]
        with open(os.path.join({str(tmp_path)!r}, f"rank{{dist.get_rank()}}.txt"), "w") as f:
            f.write(repr(sys.argv[1:]))
    """)
    p = subprocess.run([sys.executable, "-m", "eager.distributed.run", "-n", "2", prog, "a",
                        "--b"], capture_output=True, text=True, timeout=120, env=ENV)
    assert p.returncode == 0, p.stderr
    for r in (0, 1):  # each rank writes its own file: two processes' prints interleave
        assert (tmp_path / f"rank{r}.txt").read_text() == "['a', '--b']"
    cmd = launcher.launch_command(4, "train.py", ["--x"], hostfile="hosts", mpiexec="mpiexec")
    assert cmd[:5] == ["mpiexec", "-n", "4", "-f", "hosts"] and cmd[-2:] == ["train.py", "--x"]


def test_world_size_mismatch_explains_the_launch(tmp_path):
    prog = _script(tmp_path, """
        import eager.distributed as dist
        dist.init_process_group("mpi", world_size=2, rank=0)
    """)
    p = subprocess.run([sys.executable, prog], capture_output=True, text=True, timeout=60,
                       env=ENV)
    assert p.returncode != 0 and "wick run -n 2" in p.stderr


def test_sampler_matches_torch_partition_rules():
    torch = pytest.importorskip("torch")
    import eager
    from eager.utils.data.distributed import DistributedSampler

    for n, reps, drop in [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, True)]:
        for rank in range(reps):
            ours = DistributedSampler(list(range(n)), num_replicas=reps, rank=rank,
                                      shuffle=False, drop_last=drop)
            ref = torch.utils.data.distributed.DistributedSampler(
                list(range(n)), num_replicas=reps, rank=rank, shuffle=False, drop_last=drop)
            assert list(ours) == list(ref) and len(ours) == len(ref)
    with pytest.raises(ValueError):
        DistributedSampler([1, 2], num_replicas=2, rank=2)
    assert eager.utils.data.DistributedSampler is DistributedSampler

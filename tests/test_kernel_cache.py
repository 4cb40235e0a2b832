"""The on-disk kernel cache under abuse: truncated, garbage, swapped and foreign entries, FIFOs,
symlinks and directories at entry paths, an unsafe or read-only directory, concurrent writers.

Each case runs compiled functions in fresh processes with `WICK_CACHE_DIR` pointing at a
temporary directory; the child compares every compiled result with eager's and exits
non-zero on a mismatch, and reports the JIT's compile/disk-hit counters. Nothing may hang
(each child has a timeout), crash, give a wrong value, or write outside the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import warnings

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    import capture, eager
    from codegen import jit
    fns = [lambda x: (x * 1.75).tanh() + 1,
           lambda x: (x * x).sum(1) - 2,
           lambda x: eager.exp(x - x.amax(1, keepdim=True)),
           lambda x: (x + 3).abs().sqrt() * x]
    x = eager.tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6))
    for f in fns:
        want, got = f(x), capture.compile(f, backend="llvm")(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    print(json.dumps(jit.stats))
""")


def run(cache, prefix=(), timeout=240):
    """Run SCRIPT with the cache at `cache`; returns (stats dict, stderr)."""
    env = dict(os.environ, WICK_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    out = subprocess.run([*prefix, sys.executable, "-c", SCRIPT], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def entries(cache):
    """{entry name (file name up to its first dot): [its files]} of the cache directory."""
    out = {}
    for name in sorted(os.listdir(cache)):
        if not name.startswith("."):
            out.setdefault(name.split(".")[0], []).append(os.path.join(cache, name))
    return out


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "kernels"
    stats, _ = run(d)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0
    assert len(entries(d)) >= 4
    return d


def test_a_second_process_loads_every_kernel_from_disk(cache):
    stats, _ = run(cache)
    assert stats["compiled"] == 0 and stats["disk_hits"] > 0


def test_the_directory_is_created_private(tmp_path):
    d = tmp_path / "a" / "b"
    run(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


def test_swapped_entries_are_rejected_and_rebuilt(cache):
    ents = list(entries(cache).values())
    data = [[open(f, "rb").read() for f in files] for files in ents]
    for files, other in zip(ents, data[1:] + data[:1]):   # each entry gets the next's files
        for f, blob in zip(files, other):
            with open(f, "wb") as fh:
                fh.write(blob)
    stats, _ = run(cache)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0
    stats, _ = run(cache)   # rewritten whole
    assert stats["compiled"] == 0


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_entries_are_rebuilt(cache, damage):
    for files in entries(cache).values():
        for f in files:
            blob = open(f, "rb").read()
            new = {"truncate": blob[:len(blob) // 2], "garbage": os.urandom(len(blob)),
                   "empty": b""}[damage]
            with open(f, "wb") as fh:
                fh.write(new)
    stats, _ = run(cache)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0
    stats, _ = run(cache)
    assert stats["compiled"] == 0


def test_foreign_files_and_directories_at_entry_paths(cache):
    for files in entries(cache).values():
        for f in files:
            os.unlink(f)
            os.mkdir(f)   # a directory where the entry was: neither read nor replaced
    with open(os.path.join(cache, "0123456789abcdef0123456789abcdef.wkc"), "wb") as fh:
        fh.write(b"WICKKC1\n\x05\x00\x00\x00{}")
    stats, _ = run(cache)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0


def test_fifo_at_an_entry_path_does_not_hang(cache):
    for files in entries(cache).values():
        for f in files:
            os.unlink(f)
            os.mkfifo(f)
    stats, _ = run(cache, timeout=120)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0


def test_symlinks_at_entry_paths_are_never_followed(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    before = {}
    for i, files in enumerate(entries(cache).values()):
        for j, f in enumerate(files):
            target = outside / f"{i}-{j}"
            shutil.copyfile(f, target)   # a valid entry: following the link would load it
            before[target] = target.read_bytes()
            os.unlink(f)
            os.symlink(target, f)
    stats, _ = run(cache)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0
    for target, blob in before.items():
        assert target.read_bytes() == blob
    assert not any(os.path.islink(f) for fs in entries(cache).values() for f in fs)


def test_a_symlink_at_the_temporary_path_is_not_written_through(tmp_path, monkeypatch):
    import threading

    from codegen import kernel_cache

    d = tmp_path / "kernels"
    monkeypatch.setenv("WICK_CACHE_DIR", str(d))
    assert kernel_cache.usable_dir() == str(d)
    key = kernel_cache.entry_key("target", "ir")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    n = kernel_cache._counter[0] + 1
    tmp = d / f".{key[:32]}.{os.getpid()}.{threading.get_ident()}.{n}.tmp"
    os.symlink(victim, tmp)
    os.symlink(victim, d / (key[:32] + kernel_cache.SUFFIX))
    kernel_cache.store(key, {"symbol": "k_1"}, b"object")
    assert victim.read_bytes() == b"precious"
    assert kernel_cache.load(key) is None        # the entry path still holds only a symlink
    kernel_cache.store(key, {"symbol": "k_1"}, b"object")   # a fresh temporary name
    assert victim.read_bytes() == b"precious"
    assert kernel_cache.load(key, "_1") == ({"symbol": "k_1", "key": key,
                                              "sha256": kernel_cache.hashlib.sha256(
                                                  b"object").hexdigest()}, b"object")
    assert kernel_cache.load(key, "_2") is None   # bound to its kernel's symbol too


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "foreign-owner"])
def test_an_unsafe_directory_warns_and_is_not_used(cache, how):
    if how == "foreign-owner":
        if os.getuid() != 0:
            pytest.skip("needs root to give the directory away")  # (CI runs as root)
        os.chown(cache, 65534, 65534)
    else:
        os.chmod(cache, 0o777 if how == "world-writable" else 0o770)
    listing = sorted(os.listdir(cache))
    stats, err = run(cache)
    assert stats["compiled"] > 0 and stats["disk_hits"] == 0
    assert err.count("not using the kernel cache directory") == 1, err
    assert sorted(os.listdir(cache)) == listing   # nothing written there either


def test_an_unsafe_ancestor_warns(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)   # not sticky: another user could rename our directory away
    stats, err = run(shared / "kernels")
    assert "not using the kernel cache directory" in err
    assert stats["disk_hits"] == 0


def test_a_sticky_world_writable_ancestor_is_fine(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    run(shared / "kernels")
    stats, err = run(shared / "kernels")
    assert "not using" not in err and stats["disk_hits"] > 0


def test_unsafe_directory_warning_is_issued_once(tmp_path, monkeypatch):
    from codegen import kernel_cache

    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("WICK_CACHE_DIR", str(d))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert kernel_cache.usable_dir() is None
        assert kernel_cache.load(kernel_cache.entry_key("t", "ir")) is None
        kernel_cache.store(kernel_cache.entry_key("t", "ir"), {"symbol": "s"}, b"o")
    assert len([x for x in w if "kernel cache" in str(x.message)]) == 1
    assert os.listdir(d) == []


def test_a_read_only_directory(cache):
    for files in entries(cache).values():
        for f in files:
            os.unlink(f)
    os.chmod(cache, 0o500)
    prefix = ()
    if os.getuid() == 0:   # root writes anywhere: drop the capabilities that allow it
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv cannot make a directory read-only")
        prefix = ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner")
    try:
        stats, _ = run(cache, prefix)
        assert stats["compiled"] > 0
        assert os.listdir(cache) == []
    finally:
        os.chmod(cache, 0o700)


def test_two_processes_writing_at_once(tmp_path):
    d = tmp_path / "kernels"
    env = dict(os.environ, WICK_CACHE_DIR=str(d), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-3000:]
    assert not [n for n in os.listdir(d) if n.startswith(".")]   # no temporary left behind
    stats, _ = run(d)
    assert stats["compiled"] == 0 and stats["disk_hits"] > 0

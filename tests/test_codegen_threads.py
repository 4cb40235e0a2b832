"""codegen.threads: the kernel pool's split and its caller-runs-late-chunks rule."""

from __future__ import annotations

import threading

from codegen import threads


def test_caller_runs_chunks_no_worker_started(monkeypatch):
    """With every pool worker busy, `run` returns after running all chunks on the calling
    thread (it cancels the queued ones) instead of waiting for a worker."""
    monkeypatch.setattr(threads, "num_threads", lambda: 2)
    ex = threads._executor(2)
    release, started = threading.Event(), []
    blockers = []
    for _ in range(ex._max_workers):
        blockers.append(ex.submit(lambda: (started.append(1), release.wait(30))))
    try:
        seen = []
        me = threading.get_ident()

        def cfunc(lo, hi):
            seen.append((lo, hi, threading.get_ident()))

        threads.run(cfunc, [], 10, threads.MIN_PARALLEL)
        assert sorted(r for lo, hi, _ in seen for r in range(lo, hi)) == list(range(10))
        assert len(seen) == 2 and all(t == me for _, _, t in seen)
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_small_kernels_run_inline(monkeypatch):
    """Below MIN_PARALLEL elements (or one outer iteration) one call covers the whole range."""
    monkeypatch.setattr(threads, "num_threads", lambda: 4)
    calls = []
    threads.run(lambda lo, hi: calls.append((lo, hi)), [], 64, threads.MIN_PARALLEL - 1)
    threads.run(lambda lo, hi: calls.append((lo, hi)), [], 1, threads.MIN_PARALLEL * 4)
    assert calls == [(0, 64), (0, 1)]


def test_split_covers_the_range_once(monkeypatch):
    monkeypatch.setattr(threads, "num_threads", lambda: 3)
    lock, seen = threading.Lock(), []

    def cfunc(lo, hi):
        with lock:
            seen.append((lo, hi))

    threads.run(cfunc, [], 100, threads.MIN_PARALLEL)
    assert len(seen) == 3
    assert sorted(r for lo, hi in seen for r in range(lo, hi)) == list(range(100))

"""capture: compiled functions called and compiled from many threads at once.

8 threads call one compiled function with shapes that force recompiles, automatic dynamic
shapes and the recompile limit; 8 threads compile 8 different functions at once; big kernels
(split across codegen's thread pool) run from 8 threads; grad mode stays per thread. Every
result is compared with the plain call of the same function on the same thread; every wait has
a timeout (a deadlock fails the test instead of hanging it).
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import capture
import codegen
import eager
from codegen import threads as kernel_threads

HAS_LLVM = hasattr(codegen, "compile_graph")
BACKENDS = ["eager", pytest.param("llvm", marks=pytest.mark.skipif(
    not HAS_LLVM, reason="codegen.compile_graph is not available"))]
TIMEOUT = 240  # seconds for a whole group of threads


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile-limit warning
        yield
    capture.reset()


def run_threads(work, n=8):
    """Run `work(i)` for i in range(n) on n threads started together; re-raise any error."""
    barrier = threading.Barrier(n)

    def start(i):
        barrier.wait(timeout=TIMEOUT)
        return work(i)

    with ThreadPoolExecutor(n) as ex:
        futures = [ex.submit(start, i) for i in range(n)]
        return [f.result(timeout=TIMEOUT) for f in futures]


def close(got, want):
    assert isinstance(got, eager.Tensor) and got.dtype is want.dtype
    assert tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def fused(x, y):
    z = eager.relu(x * 2 + y)
    return z.sum(0) + x.mean()


def with_break(x, y):
    z = x * y
    if z.sum().item() > 0:  # a branch on a tensor value: graph break
        return z + 1
    return z - 1


@pytest.mark.parametrize("fn", [fused, with_break], ids=["graph", "break"])
@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_threads_call_one_function_with_recompiles(fn, dynamic, backend):
    c = capture.compile(fn, backend=backend, dynamic=dynamic)

    def work(i):
        rng = np.random.default_rng(i)
        for it in range(12):
            n, m = 2 + (i * 7 + it) % 12, 3 + it % 3
            x = eager.tensor(rng.standard_normal((n, m)).astype(np.float32))
            y = eager.tensor(rng.standard_normal((n, m)).astype(np.float32))
            close(c(x, y), fn(x, y))

    run_threads(work)
    cf = c.__wick_compiled__
    # the limit held under contention (it used to overshoot: 15 entries for a limit of 8)
    assert len(cf.entries) <= capture.config.cache_size_limit
    guards = [e.guards_text for e in cf.entries]
    assert len(set(guards)) == len(guards)  # no entry captured twice by racing threads
    for child in cf.all_functions():
        assert len(child.entries) <= capture.config.cache_size_limit


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_threads_reach_the_recompile_limit(backend, monkeypatch):
    monkeypatch.setattr(capture.config, "cache_size_limit", 3)
    c = capture.compile(fused, backend=backend, dynamic=False)

    def work(i):
        for it in range(6):
            x, y = eager.randn(2 + i + it, 3), eager.randn(2 + i + it, 3)
            close(c(x, y), fused(x, y))

    run_threads(work)
    cf = c.__wick_compiled__
    assert len(cf.entries) == 3 and cf.warned_limit and cf.eager_runs > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_entry_compiles_each_shape_once_under_contention(backend, monkeypatch):
    c = capture.compile(fused, backend=backend, dynamic=True)
    x, y = eager.randn(3, 4), eager.randn(3, 4)
    close(c(x, y), fused(x, y))
    (entry,) = c.__wick_compiled__.entries
    specs = entry.runner.specs
    compiles = []
    real = specs.compile_fn

    def counting(g):
        compiles.append(tuple(g.placeholders[0].val.shape))
        return real(g)

    monkeypatch.setattr(specs, "compile_fn", counting)

    def work(i):
        for n in (5, 6, 7, 8):
            x, y = eager.randn(n, 4), eager.randn(n, 4)
            close(c(x, y), fused(x, y))

    run_threads(work)
    assert sorted(compiles) == [(5, 4), (6, 4), (7, 4), (8, 4)]


def make(k):
    def f(x, w):
        h = eager.tanh(x @ w * (k + 1)) + k
        return h.softmax(-1).sum(0)

    f.__name__ = f.__qualname__ = f"f{k}"
    return f


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_threads_compile_different_functions(backend):
    def work(k):
        f = make(k)
        c = capture.compile(f, backend=backend)
        for n in (3, 4, 7):
            x, w = eager.randn(n, 5), eager.randn(5, 6)
            close(c(x, w), f(x, w))
        return c

    compiled = run_threads(work)
    assert all(c.__wick_compiled__.graph_runs == 3 for c in compiled)


@pytest.mark.skipif(not HAS_LLVM, reason="codegen.compile_graph is not available")
def test_big_kernels_from_eight_threads_do_not_interleave(monkeypatch):
    """Kernels split into chunks over codegen's one thread pool: eight callers at once each
    get their own rows (the chunks of different calls never mix)."""
    monkeypatch.setattr(kernel_threads, "num_threads", lambda: 4)
    monkeypatch.setattr(kernel_threads, "MIN_PARALLEL", 1 << 16)

    def g(x):
        return (eager.exp(x * 0.01) * 3 - x).sum(1)

    c = capture.compile(g, backend="llvm")

    def work(i):
        x = eager.full((256 + 64 * i, 300), float(i))  # >= MIN_PARALLEL elements: split
        for _ in range(4):
            close(c(x), g(x))

    run_threads(work)


def test_kernel_pool_runs_every_chunk_of_concurrent_calls(monkeypatch):
    """codegen.threads.run from 8 threads at once: each call's chunks cover its own range
    exactly once."""
    monkeypatch.setattr(kernel_threads, "num_threads", lambda: 4)
    seen = [[] for _ in range(8)]

    def work(i):
        def cfunc(tag, lo, hi):
            seen[tag].append((lo, hi))

        kernel_threads.run(cfunc, [i], 100 + i, kernel_threads.MIN_PARALLEL)

    run_threads(work)
    for i, chunks in enumerate(seen):
        covered = sorted(r for lo, hi in chunks for r in range(lo, hi))
        assert covered == list(range(100 + i))


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_mode_is_per_thread(backend):
    """Half the threads call under no_grad, half with grad enabled: each result's
    requires_grad is its own thread's (grad mode is thread-local, as PyTorch's)."""
    w = eager.randn(4, 4).requires_grad_(True)

    def f(x):
        return (x @ w).relu() * 2

    c = capture.compile(f, backend=backend)

    def work(i):
        for _ in range(5):
            x = eager.randn(3, 4)
            if i % 2:
                with eager.no_grad():
                    got, want = c(x), f(x)
                assert not got.requires_grad
            else:
                got, want = c(x), f(x)
                assert got.requires_grad
                got.sum().backward()
            close(got, want)
            assert eager.is_grad_enabled()

    run_threads(work)


def test_registry_is_safe_from_threads():
    def work(i):
        f = make(i)
        c = capture.compile(f, backend="eager")
        x, w = eager.randn(2, 5), eager.randn(5, 6)
        close(c(x, w), f(x, w))
        return c

    compiled = run_threads(work)
    assert all(c.__wick_compiled__ in capture.registry.COMPILED for c in compiled)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reset_while_threads_call(backend):
    """`capture.reset()` from one thread while seven call compiled functions (graph, break,
    dynamic entries on the general path): every call still returns the plain result."""
    compiled = [capture.compile(fn, backend=backend, dynamic=d)
                for fn, d in ((fused, None), (with_break, None), (fused, True))]
    plain = [fused, with_break, fused]

    def work(i):
        for it in range(40):
            if i == 0:
                capture.reset()
                continue
            n = 2 + (i + it) % 5
            x, y = eager.randn(n, 3), eager.randn(n, 3)
            k = (i + it) % 3
            close(compiled[k](x, y), plain[k](x, y))

    run_threads(work)

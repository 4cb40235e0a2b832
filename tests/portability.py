"""Portability sweep: every kernel of the compiled test matrix, compiled for several CPUs, may
call only the runtime functions the JIT provides (`codegen.linkcheck.RUNTIME_SYMBOLS`).

LLVM picks instructions per target CPU and, on some, lowers an operation to a compiler-rt
helper (`__truncdfhf2`, `__extendhfsf2`, `__divti3`...) that MCJIT cannot resolve: a kernel
that runs here could abort the user's process on another CPU (CODEGEN.md, "Portability").
This renders the LLVM IR of every fused kernel the registry matrix produces (each op x dtype
x sample of `tests/opinfo.py`, as `tests/test_compiled_matrix.py` runs them, at the matrix's
dtypes and at every dtype kernels compute, plus every cast between two kernel dtypes and the
call trampolines) without running anything, runs the O3 pipeline and the code generator for
each target of `TARGETS` (generic x86-64, x86-64-v3, skylake-avx512, znver4, sapphirerapids,
and AArch64 CPUs when llvmlite has that target) and reads each object's undefined symbols.

    python tests/portability.py [--jobs N] [--limit N]     # exit status 1 on any violation

`tests/test_codegen_portability.py` runs a fast subset under pytest.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ir  # noqa: E402
from ir import dtypes as D  # noqa: E402
from opinfo import dtypes_of, samples  # noqa: E402

X86 = "x86_64-unknown-linux-gnu"
ARM = "aarch64-unknown-linux-gnu"
TARGETS = [(X86, "x86-64"), (X86, "x86-64-v3"), (X86, "skylake-avx512"), (X86, "znver4"),
           (X86, "sapphirerapids"), (ARM, "generic"), (ARM, "neoverse-v1")]
KERNEL_DTYPES = (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.float32,
                 D.float64)


def _graph(op, inputs, attrs) -> ir.Graph:
    """The one-op graph of a matrix sample: arrays are placeholders, numbers constants."""
    g = ir.Graph(f"{op.name}")
    args = []
    for i, x in enumerate(inputs):
        if isinstance(x, np.ndarray):
            args.append(g.placeholder(f"a{i}", ir.TensorMeta(x.shape, D.from_numpy(x.dtype))))
        else:
            args.append(x)
    bound, battrs = op.bind(tuple(args), dict(attrs))
    metas = tuple(a.meta["val"] if isinstance(a, ir.Node) else a for a in bound)
    battrs = op.canonical_attrs(metas, battrs)
    node = g.call_function(op, bound, battrs, val=op.meta(metas, battrs))
    g.output((node,))
    return g


def graph_kernels(g: ir.Graph) -> list[str]:
    """LLVM IR of each fused kernel of graph `g` (as `codegen.compile_graph` lowers it)."""
    from codegen.kernel import lower_group
    from codegen.partition import FusionGroup, partition
    from codegen.passes import decompose
    from codegen.render import render_kernel

    out = []
    for step in partition(decompose(g)).steps:
        if isinstance(step, FusionGroup):
            try:
                kernel = lower_group(step, "k")
            except Exception:  # noqa: BLE001 (not lowered: runs as library calls)
                continue
            out.append(render_kernel(kernel, "wick_kernel"))
    return out


def matrix_kernels(limit: int | None = None) -> dict[str, tuple[str, str]]:
    """{IR hash: (label, IR)} of the matrix's kernels, the casts and the trampolines."""
    from codegen.jit import _trampoline_ir

    found: dict = {}

    def add(label, text):
        found.setdefault(hashlib.sha256(text.encode()).hexdigest()[:16], (label, text))

    graphs = []
    for src in KERNEL_DTYPES:
        for dst in KERNEL_DTYPES:
            graphs.append((f"cast-{src.name}-{dst.name}",
                           _graph(ir.REGISTRY["cast"], (np.zeros((3, 5), src.np),),
                                  {"dtype": dst})))
    for dt in (D.float16, D.float32, D.float64, D.int64):   # long (blocked) reductions
        for name in ("sum", "mean", "amax", "prod"):
            x = np.zeros((3, 5000), dt.np)
            try:
                graphs.append((f"{name}-{dt.name}-long", _graph(ir.REGISTRY[name], (x,),
                                                                {"dim": (1,)})))
            except Exception:  # noqa: BLE001 (not defined at this dtype)
                continue
    for op in ir.REGISTRY.values():   # the matrix's dtypes, and every kernel dtype
        for dt in dict.fromkeys((*dtypes_of(op), *KERNEL_DTYPES)):
            try:
                cases = list(samples(op, dt))
            except Exception:  # noqa: BLE001 (no samples at this dtype)
                continue
            for j, (inputs, attrs) in enumerate(cases):
                try:
                    graphs.append((f"{op.name}-{dt.name}-{j}", _graph(op, inputs, attrs)))
                except Exception:  # noqa: BLE001 (an invalid sample: eager rejects it too)
                    continue
    for label, g in graphs:
        for text in graph_kernels(g):
            add(label, text)
        if limit is not None and len(found) >= limit:
            break
    for argc in range(1, 9):
        add(f"trampoline{argc}", _trampoline_ir("wick_tramp", argc, 16))
    for label, text in direct_kernels():
        add(label, text)
    return found


def direct_kernels() -> list[tuple[str, str]]:
    """(label, IR) of the direct kernels compiled graphs run beside the fused ones: float32
    convolutions (forward channels-last and channels-first, strided, dilated, input and weight
    gradients: `codegen.conv_kernels`), plane gathers and scatter-adds (cross entropy's picks)
    and tiled max pooling (`codegen.plane_kernels`), at sizes of the CNN benchmark and tests."""
    from codegen.conv_kernels import _wgrad_geometry
    from codegen.conv_render import ConvGeometry, render_conv, render_weight_grad
    from codegen.plane_kernels import render_gather, render_pool_indices, render_scatter_add

    geos = [ConvGeometry(Hp=10, Wp=10, C=1, O=16, KH=3, KW=3, OH=8, OW=8, N=4),
            ConvGeometry(Hp=10, Wp=10, C=16, O=32, KH=3, KW=3, OH=8, OW=8, N=2, nchw=True),
            ConvGeometry(Hp=11, Wp=11, C=8, O=64, KH=3, KW=3, OH=5, OW=5, sh=2, sw=2),
            ConvGeometry(Hp=12, Wp=12, C=4, O=16, KH=3, KW=3, OH=8, OW=8, dh=2, dw=2),
            ConvGeometry(Hp=9, Wp=8, C=32, O=16, KH=3, KW=3, OH=7, OW=6, N=3, nchw=True)]
    out = []
    for i, geo in enumerate(geos):
        out.append((f"direct-conv-{i}", render_conv("wick_conv", geo)))
        out.append((f"direct-wgrad-{i}",
                    render_weight_grad("wick_wgrad", _wgrad_geometry(geo, (1, 1)))))
    for ty in ("float", "double"):
        out.append((f"direct-gather-{ty}", render_gather("wick_gather", ty, 10, 1)))
        for onto in (False, True):
            out.append((f"direct-scatter-{ty}-{onto}",
                        render_scatter_add("wick_scatter", ty, 10, 3, onto)))
        for h, w, k in ((8, 8, 2), (12, 9, 3)):
            out.append((f"direct-pool-{ty}-{h}x{w}-{k}",
                        render_pool_indices("wick_pool", ty, h, w, k, k)))
    return out


def target_machine(triple: str, cpu: str):
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="", opt=3)


def available_targets() -> list[tuple[str, str]]:
    """TARGETS this llvmlite build can generate code for."""
    out = []
    for triple, cpu in TARGETS:
        try:
            target_machine(triple, cpu)
        except RuntimeError:
            continue
        out.append((triple, cpu))
    return out


def violations(text: str, triple: str, cpu: str, tm=None) -> set[str]:
    """Symbols outside RUNTIME_SYMBOLS that kernel IR `text` needs when compiled for `cpu`."""
    from codegen import jit, linkcheck

    tm = tm or target_machine(triple, cpu)
    mod = jit.optimize(text, tm)
    obj = tm.emit_object(mod)
    found = linkcheck.elf_symbols(obj)
    assert found is not None, f"{triple}/{cpu}: not an ELF object"
    return {n for n in found[1] if n not in linkcheck.RUNTIME_SYMBOLS}


def _sweep(args) -> list[str]:
    triple, cpu, items = args
    tm = target_machine(triple, cpu)
    return [f"{triple}/{cpu}: {label} calls {sorted(bad)}" for label, text in items
            if (bad := violations(text, triple, cpu, tm))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--limit", type=int, default=None, help="at most N kernels (a quick run)")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    kernels = matrix_kernels(a.limit)
    targets = available_targets()
    items = list(kernels.values())
    work = [(tr, cpu, items[i::a.jobs]) for tr, cpu in targets for i in range(a.jobs)]
    if a.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(a.jobs) as ex:
            results = [r for rs in ex.map(_sweep, work) for r in rs]
    else:
        results = [r for w in work for r in _sweep(w)]
    missing = sorted(set(TARGETS) - set(targets))
    print(f"portability: {len(kernels)} kernels x {len(targets)} targets "
          f"({', '.join(c for _, c in targets)}) in {time.perf_counter() - t0:.1f} s"
          + (f"; not in this llvmlite: {missing}" if missing else ""))
    for r in results:
        print("  " + r)
    print(f"portability: {len(results)} violation(s)")
    return 1 if results else 0


if __name__ == "__main__":
    sys.exit(main())

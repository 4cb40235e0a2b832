"""codegen's "cuda" backend: every kernel the test matrix produces compiled to PTX with NVRTC
(no GPU needed: `cuda-bindings` + `nvidia-cuda-nvrtc`), and, where cupy sees a GPU, executed
against the IR interpreter on cupy arrays (eager's kernels), gradients against eager autograd.

Compile checks batch many kernels into one NVRTC program per test (one compile of N kernels is
far cheaper than N compiles). The GPU tests run with `python -m pytest -q
tests/test_codegen_cuda.py` on a machine with cupy and a GPU; elsewhere they skip with the
reason.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import cuda_host
import numpy as np
import pytest
from opinfo import dtypes_of

import codegen
import codegen.cuda_render
import ir
from codegen import nvrtc
from codegen.cuda_compiled import CudaGraph
from codegen.cuda_render import module_source, render, schedule
from codegen.kernel import lower_group
from codegen.partition import FusionGroup, LibraryCall
from ir import dtypes as D
from ir.opdef import OpDef

R = ir.REGISTRY
REAL = [d for d in D.ALL if d.np.kind in "biuf" or d is D.bfloat16]   # bf16: the GPU only
UNARY = ["neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "erf", "erfc", "erfinv", "floor", "ceil", "round", "trunc", "isnan", "isinf",
         "logical_not", "bitwise_not"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder",
          "floordiv", "lt", "le", "gt", "ge", "eq", "ne", "bitwise_and", "bitwise_or",
          "bitwise_xor", "lshift", "rshift", "atan2", "hypot"]
CUDA = "cuda:0"

_ok, _why = nvrtc.available()
needs_nvrtc = pytest.mark.skipif(not _ok, reason=f"cuda.bindings.nvrtc cannot be loaded: {_why}")


def _gpu():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy, ""
        return None, "cupy sees no CUDA device"
    except Exception as e:  # noqa: BLE001 (ImportError, no driver...)
        return None, f"cupy with a CUDA device is needed to run kernels: {type(e).__name__}: {e}"


cp, _no_gpu = _gpu()
needs_gpu = pytest.mark.skipif(cp is None, reason=_no_gpu)


# ---------------------------------------------------------------- graph helpers


def c(g, name, *args, **kw):
    return g.call_op(R[name], args, kw)


def ph(g, name, shape, dtype=D.float32, device=CUDA):
    return g.placeholder(name, ir.TensorMeta(tuple(shape), dtype, device))


def call(g, name, args, **kwargs):
    op = R[name]
    inputs, attrs = op.bind(args, kwargs)
    metas = tuple(a.meta["val"] if isinstance(a, ir.Node) else a for a in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    return g.call_function(op, inputs, attrs, val=op.meta(metas, attrs))


def _prim_op(prim: str, nin: int) -> OpDef:
    sig = "input" if nin == 1 else "input, other"
    return OpDef(f"prim_{prim}", "elementwise", sig, nin, "keep",
                 scalar=lambda b, *xs: getattr(b, prim)(*xs), method=False)


def _prim_graph(prim, nin, dtype, shape=(257,)):
    """A graph of one node running primitive `prim` (result dtype from numpy)."""
    op = _prim_op(prim, nin)
    g = ir.Graph(f"{prim}_{dtype.name}")
    xs = [ph(g, f"x{i}", shape, dtype) for i in range(nin)]
    with np.errstate(all="ignore"):
        probe = [np.ones(1, np.float32 if dtype in D.HALF else dtype.np)] * nin
        try:
            from ir.scalar import ArrayBuilder

            out = np.asarray(getattr(ArrayBuilder(np), prim)(*probe))
        except (TypeError, ValueError):
            return None
    odt = dtype if (dtype in D.HALF and out.dtype == np.float32) else D.from_numpy(out.dtype)
    node = g.call_function(op, tuple(xs), {}, val=ir.TensorMeta(shape, odt, CUDA))
    g.output((node,))
    return g


def _op_graph(op, dtype, attrs, scalar_arg, shape=(7, 37)):
    g = ir.Graph(f"{op.name}_{dtype.name}")
    args = []
    for k, pname in enumerate(op.input_names):
        if op.name == "where" and k == 0:
            args.append(ph(g, pname, shape, D.bool_))
        elif scalar_arg and k == op.nin - 1:
            args.append(True if dtype is D.bool_ else 2 if dtype.category == D.INTEGER else 0.5)
        else:
            args.append(ph(g, pname, shape, dtype))
    g.output((call(g, op.name, tuple(args), **attrs),))
    return g


# NVVM's optimiser is most of NVRTC's time (about 25 ms per kernel): the matrices are checked
# with it off (the C++ front end and PTX generation still run), the structures with it on
FAST = nvrtc.OPTIONS + ("-Xnvvm", "-opt=0")


def compile_all(graphs, arch="compute_90", options=nvrtc.OPTIONS) -> list:
    """Render every kernel of every graph into one module and compile it with NVRTC; returns
    the CudaGraphs. A renderer bug fails here with NVRTC's log and the source."""
    cgs, sources = [], []
    for j, g in enumerate(graphs):
        cg = CudaGraph(g)
        cgs.append(cg)
        for k in cg.kernels:
            sources.append(render(k, f"g{j}_{k.name}"))
    src = module_source(sources)
    ptx = nvrtc.compile_ptx(src, arch, options)
    for s in sources:
        for ln in s.launches:
            assert f".entry {ln.func}(" in ptx, ln.func
    return cgs


def _matrix_graphs():
    graphs = []
    for op in R.values():
        if op.kind != "elementwise" or op.scalar is None:
            continue
        for dtype in dtypes_of(op):
            for attrs in op.samples:
                for scalar_arg in ([False, True] if op.nin == 2 and op.scalar_ok else [False]):
                    try:
                        graphs.append(_op_graph(op, dtype, attrs, scalar_arg))
                    except (TypeError, RuntimeError, NotImplementedError, ValueError):
                        pass   # eager rejects these dtypes before a graph exists
    return graphs


def softmax_graph(shape=(64, 100), name="softmax", dim=-1, dtype=D.float32):
    g = ir.Graph(name)
    x = ph(g, "x", shape, dtype)
    g.output((c(g, name, x, dim),))
    return g


def layernorm_graph(shape=(64, 100), dtype=D.float32):
    g = ir.Graph("layernorm")
    x, w, b = ph(g, "x", shape, dtype), ph(g, "w", shape[-1:], dtype), ph(g, "b", shape[-1:],
                                                                          dtype)
    m = c(g, "mean", x, -1, keepdim=True)
    xc = c(g, "sub", x, m)
    v = c(g, "mean", c(g, "mul", xc, xc), -1, keepdim=True)
    g.output((c(g, "add", c(g, "mul", c(g, "mul", xc, c(g, "rsqrt", c(g, "add", v, 1e-5))), w),
                b),))
    return g


def rmsnorm_graph(shape=(64, 100)):
    g = ir.Graph("rmsnorm")
    x, w = ph(g, "x", shape), ph(g, "w", shape[-1:])
    ms = c(g, "mean", c(g, "mul", x, x), -1, keepdim=True)
    g.output((c(g, "mul", c(g, "mul", x, c(g, "rsqrt", c(g, "add", ms, 1e-6))), w),))
    return g


def gelu_graph(shape=(1000, 37)):
    g = ir.Graph("gelu")
    x = ph(g, "x", shape)
    inner = c(g, "mul", c(g, "add", x, c(g, "mul", c(g, "mul", c(g, "mul", x, x), x),
                                         0.044715)), 0.7978845608028654)
    g.output((c(g, "mul", c(g, "mul", x, 0.5), c(g, "add", c(g, "tanh", inner), 1.0)),))
    return g


def mlp_graph(device=CUDA):
    g = ir.Graph("mlp")
    x, w1 = ph(g, "x", (16, 20), device=device), ph(g, "w1", (20, 12), device=device)
    b1, w2 = ph(g, "b1", (12,), device=device), ph(g, "w2", (12, 5), device=device)
    b2 = ph(g, "b2", (5,), device=device)
    h = c(g, "tanh", c(g, "add", c(g, "matmul", x, w1), b1))
    o = c(g, "add", c(g, "matmul", h, w2), b2)
    loss = c(g, "mean", c(g, "mul", c(g, "log_softmax", o, -1), -1.0))
    g.output((loss, h))
    return g


def residual_graph():
    g = ir.Graph("residual")
    x, w = ph(g, "x", (8, 32)), ph(g, "w", (32, 32))
    h = c(g, "relu", c(g, "matmul", x, w))
    g.output((c(g, "add", x, c(g, "mul", h, 0.5)), c(g, "sum", h, -1)))
    return g


def reduction_graph(name, dtype, shape, dim, keepdim=False):
    g = ir.Graph(f"{name}_{dtype.name}_{'x'.join(map(str, shape))}_{dim}")
    x = ph(g, "x", shape, dtype)
    g.output((c(g, name, x, dim, keepdim=keepdim),))
    return g


def structure_graphs():
    """The fusion tests' graphs and every reduction schedule."""
    graphs = [softmax_graph(), softmax_graph(name="log_softmax"), softmax_graph(dim=0),
              softmax_graph((4, 3000), dtype=D.float16), layernorm_graph(), rmsnorm_graph(),
              layernorm_graph((8, 4096)), gelu_graph(), mlp_graph(), residual_graph()]
    for name in ("sum", "prod", "amax", "amin"):
        for dtype in REAL:
            if dtype is D.bool_ and name in ("amax", "amin"):
                continue
            graphs.append(reduction_graph(name, dtype, (6, 50), -1))
    graphs += [reduction_graph("sum", D.float32, (1 << 17,), None),            # split
               reduction_graph("amax", D.float64, (3, 1 << 17), None),         # split, 2-d
               reduction_graph("sum", D.float32, (64, 4096), 0),               # columns
               reduction_graph("sum", D.int64, (5, 6, 7), (0, 2), True),       # 2 r-loops
               reduction_graph("sum", D.float32, (100, 3), -1)]                # short rows
    g = ir.Graph("softmax_split")          # one huge row: exp stored, read back (load_out)
    g.output((c(g, "softmax", ph(g, "x", (1 << 17,)), 0),))
    graphs.append(g)
    g = ir.Graph("full_centered")          # a full reduction read back by the full shape
    x = ph(g, "x", (1 << 16, 2))
    g.output((c(g, "sub", x, c(g, "mean", x, None, keepdim=True)),))
    graphs.append(g)
    g = ir.Graph("broadcast_chain")
    x, y, s = ph(g, "x", (4, 1, 5)), ph(g, "y", (3, 5)), ph(g, "s", ())
    t = c(g, "tanh", c(g, "maximum", c(g, "add", c(g, "mul", x, y), 2.0), s))
    g.output((t, c(g, "gt", t, 0.0)))
    graphs.append(g)
    return graphs


# ---------------------------------------------------------------- compile checks (no GPU)


@needs_nvrtc
def test_every_elementwise_op_and_dtype_of_the_matrix_compiles():
    graphs = _matrix_graphs()
    cgs = compile_all(graphs, options=FAST)
    nkernels = sum(len(cg.kernels) for cg in cgs)
    assert nkernels >= 0.8 * len(graphs), (nkernels, len(graphs))
    for g, cg in zip(graphs, cgs):
        node = g.nodes[-2]
        metas = [node.meta["val"]] + [a.meta["val"] for a in node.all_input_nodes]
        if not any(m.dtype.is_complex for m in metas) and not cg.fallbacks:
            assert len(cg.kernels) == 1 and cg.kernels[0].nodes == [node], g.name


@needs_nvrtc
@pytest.mark.parametrize("nin,prims", [(1, UNARY), (2, BINARY)], ids=["unary", "binary"])
def test_every_scalar_primitive_of_every_dtype_compiles(nin, prims):
    graphs, pairs = [], []
    for prim in prims:
        for dtype in REAL:
            g = _prim_graph(prim, nin, dtype)
            if g is not None:
                graphs.append(g)
                pairs.append((prim, dtype.name))
    cgs = compile_all(graphs, options=FAST)
    lowered = {p for p, cg in zip(pairs, cgs) if cg.kernels}
    # every primitive is lowered for float32, float64, float16 and bfloat16 at least
    for prim in prims:
        for dt in ("float32", "float64", "float16", "bfloat16"):
            if prim in ("bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "lshift",
                        "rshift", "logical_not"):
                continue
            assert (prim, dt) in lowered, (prim, dt)


@needs_nvrtc
def test_row_kernels_reductions_and_fusion_graphs_compile():
    cgs = compile_all(structure_graphs())
    assert all(not cg.fallbacks for cg in cgs), [cg.fallbacks for cg in cgs if cg.fallbacks]


@needs_nvrtc
def test_strided_views_specialisations_compile():
    g = gelu_graph((64, 48))
    cg = CudaGraph(g)
    group = cg.kernels[0].group
    x = g.placeholders[0]
    variants = [render(lower_group(group, "transposed", {x: (1, 64)}.get)),
                render(lower_group(group, "sliced", {x: (96, 2)}.get)),
                render(lower_group(group, "broadcast", {x: (0, 1)}.get))]
    nvrtc.compile_ptx(module_source(variants))
    assert variants[0].vector is None          # the inner loop is not contiguous


def test_schedules():
    sched = {}
    for g in structure_graphs():
        for k in CudaGraph(g).kernels:
            sched.setdefault(g.name, []).append((schedule(k), k))
    s, k = sched["softmax"][0]         # (64, 100) over the last dim
    assert s == "block_rows" and len(k.phases) == 3 and len(sched["softmax"]) == 3
    assert [s for s, _ in sched["layernorm"]] == ["block_rows", "block_rows"]
    assert [s for s, _ in sched["sum_float32_6x50_-1"]] == ["block_rows"]
    assert [s for s, _ in sched["sum_float32_131072_None"]] == ["split"]
    assert [s for s, _ in sched["amax_float64_3x131072_None"]] == ["split"]
    s, k = sched["softmax_split"][0]
    assert s == "split" and "load_out" in [st.op for st in k.phases[2].body]
    assert "load_out" in [st.op for st in sched["softmax"][0][1].phases[2].body]
    assert [s for s, _ in sched["sum_float32_64x4096_0"]] == ["thread_rows"]     # columns
    assert [s for s, _ in sched["sum_float32_100x3_-1"]] == ["thread_rows"]      # short rows
    full = [s for s, _ in sched["full_centered"]]
    assert full == ["split"] or full == ["split", "pointwise"], full
    (s, _), = sched["gelu"]
    assert s == "pointwise"


def test_vector_loads_and_32_bit_indexing():
    g = ir.Graph("gelu64m")
    x = ph(g, "x", (1 << 26,))
    g.output((c(g, "mul", c(g, "tanh", x), 0.5),))
    src = CudaGraph(g).sources[0]
    assert src.vector is not None and "float4" in src.source
    assert src.index_type == "int" and "long long v" not in src.source
    g = ir.Graph("huge")
    x = ph(g, "x", (1 << 31,), D.bool_)
    g.output((c(g, "logical_not", x),))
    src = CudaGraph(g).sources[0]
    assert src.index_type == "long long" and "for (long long i" in src.source


def test_source_is_readable_and_names_the_fused_ops():
    cg = CudaGraph(softmax_graph())
    text = cg.dump("cuda")
    assert '__launch_bounds__' in text and "__restrict__" in text
    assert "__shfl_down_sync" in text and "__shared__" in text
    for op in ("amax", "sub", "exp", "sum", "div"):
        assert f"= {op}(" in text, op
    assert cg.dump("llvm") == "" and "block_rows" in cg.dump("fusion")
    with pytest.raises(ValueError, match="unknown stage"):
        cg.dump("nope")


def test_llvm_backend_dumps_the_same_kernels_as_cuda():
    g = ir.Graph("cpu")
    x = g.placeholder("x", ir.TensorMeta((8, 16), D.float32))
    g.output((c(g, "softmax", x, -1),))
    cg = codegen.compile_graph(g)
    text = cg.dump("cuda")
    assert text.count("__global__") == len(cg.kernels) == 1 and "expf" in text


def test_cuda_backend_builds_without_cupy():
    code = textwrap.dedent("""
        import sys
        sys.modules["cupy"] = None          # importing cupy now raises ImportError
        import codegen, ir
        g = ir.Graph()
        x = g.placeholder("x", ir.TensorMeta((4, 5), ir.float32, "cuda:0"))
        g.output((g.call_op(ir.REGISTRY["exp"], (x,), {}),))
        cg = codegen.compile_graph(g, backend="cuda")
        assert "expf" in cg.dump("cuda") and len(cg.kernels) == 1
        try:
            cg(None)
        except RuntimeError as e:
            assert "cupy" in str(e)
        else:
            raise AssertionError("calling without cupy must raise")
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                       cwd=str(__import__("pathlib").Path(codegen.__file__).parents[1]))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@needs_nvrtc
def test_nvrtc_reports_errors_with_the_log():
    with pytest.raises(nvrtc.CudaCompileError, match="undefined"):
        nvrtc.compile_ptx('extern "C" __global__ void f(float* x) { x[0] = nope; }')


def test_library_calls_are_not_fused_on_cuda():
    cg = CudaGraph(mlp_graph())
    libs = [s.node.target.name for s in cg.steps if isinstance(s, LibraryCall)]
    assert libs.count("matmul") == 2
    assert all(isinstance(s, (LibraryCall,)) or s in cg.kernels for s in cg.steps)
    assert not any(isinstance(s, FusionGroup) for s in cg.steps)


# ---------------------------------------------------------------- host emulation (no GPU)

# The generated kernels built as host C++ by `tests/cuda_host.py` (CUDA built-ins shimmed, blocks
# of real threads): every primitive, block reduction and split pass checked against numpy
# without a GPU.


def host_library(sources, tmp_path, opt="-O1"):
    try:
        return cuda_host.compile_host("\n".join(s.source for s in sources), tmp_path, opt)
    except RuntimeError as e:
        if "g++ is needed" in str(e):
            pytest.skip(str(e))
        raise


def _host_values(dtype, rng, n=257):
    if dtype is D.bool_:
        return rng.random(n) < 0.5
    if dtype.np.kind in "iu":
        info = np.iinfo(dtype.np)
        edge = np.array([0, 1, 2, 3, info.min, info.max, info.max - 1, 7, 63, 64],
                        dtype=np.int64).astype(dtype.np)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return np.concatenate([edge, rng.integers(lo, hi, n - edge.size).astype(dtype.np)])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.5, -3.5,
                        1e-3, 60.0, -60.0, 7.0, -2.0], np.float32)
    vals = np.concatenate([special, (rng.standard_normal(n - special.size) * 3)
                           .astype(np.float32)])
    return vals.astype(dtype.np)


def _host_reference(prim, dtype, arrays):
    from ir.scalar import ArrayBuilder

    with np.errstate(all="ignore"):
        if dtype in D.HALF:   # eager computes half types in float32 and rounds once
            want = np.asarray(getattr(ArrayBuilder(np), prim)(*[a.astype(np.float32)
                                                                for a in arrays]))
            return want.astype(dtype.np) if want.dtype == np.float32 else want
        return np.asarray(getattr(ArrayBuilder(np), prim)(*arrays))


def _struct_values(rng, shape, dtype):
    if dtype is D.bool_:
        return rng.random(shape) < 0.5
    if dtype.category == D.INTEGER:
        return rng.integers(0 if dtype.np.kind == "u" else -3, 4, size=shape).astype(dtype.np)
    return rng.uniform(0.5, 1.5, size=shape).astype(np.float32).astype(dtype.np)


def host_run_graph(cg, lib, arrays, grid=3):
    """The plan of CudaGraph `cg` on numpy `arrays`: kernels as blocks of real threads
    (`grid` blocks for device-sized grids), library calls through `ir.execute` on numpy."""

    from ir.execute import apply_arrays

    env = dict(zip(cg.graph.placeholders, arrays))
    for step in cg.steps:
        if isinstance(step, LibraryCall):
            n = step.node
            args = tuple(env[a] if isinstance(a, ir.Node) else a for a in n.args)
            env[n] = apply_arrays(np, n.target, args, dict(n.kwargs))
            continue
        src = cg.sources[cg.kernels.index(step)]
        bufs = [np.ascontiguousarray(env[b.node]) for b in step.inputs]
        for b in step.outputs:
            env[b.node] = np.empty(b.node.meta["val"].shape, b.dtype.np)
            bufs.append(env[b.node])
        if src.scratch_bytes:
            bufs.append(np.zeros(src.scratch_bytes, np.uint8))
        if src.checks_div:
            bufs.append(np.zeros(1, np.uint32))
        for ln in src.launches:
            g = ln.grid if ln.grid is not None else max(1, min(grid, ln.grid_for(1)))
            cuda_host.launch(lib, ln.func, g, ln.block, bufs)
        if src.checks_div and bufs[-1][0]:
            raise RuntimeError("ZeroDivisionError")
    return [env[o] if isinstance(o, ir.Node) else o for o in cg.graph.output_node.args[0]]


def test_host_emulation_of_row_kernels_block_reductions_and_split_passes(tmp_path,
                                                                        monkeypatch):
    import codegen.cuda_render

    monkeypatch.setattr(codegen.cuda_render, "SPLIT_PARTS", 6)   # fewer emulated blocks
    graphs = structure_graphs()
    cgs = [CudaGraph(g) for g in graphs]
    sources = []
    for j, cg in enumerate(cgs):
        cg.sources = [render(k, f"r{j}_{k.name}") for k in cg.kernels]
        sources += cg.sources
    lib = host_library(sources, tmp_path)
    rng = np.random.default_rng(5)
    scheds = set()
    for g, cg in zip(graphs, cgs):
        arrays = [_struct_values(rng, p.meta["val"].shape, p.meta["val"].dtype)
                  for p in g.placeholders]
        got = host_run_graph(cg, lib, arrays)
        want = ir.Interpreter(g).run(*arrays)
        scheds |= {s.schedule for s in cg.sources}
        for a, b in zip(got, want):
            b = np.asarray(b)
            assert a.shape == b.shape and a.dtype == b.dtype, (g.name, a.dtype, b.dtype)
            if D.from_numpy(b.dtype).is_floating_point:
                rtol = 2e-2 if b.dtype.itemsize == 2 else 1e-4
                np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64),
                                           rtol=rtol, atol=rtol, err_msg=g.name)
            else:
                np.testing.assert_array_equal(a, b, err_msg=g.name)
    assert scheds == {"pointwise", "block_rows", "thread_rows", "split"}


@pytest.mark.parametrize("nin,prims", [(1, UNARY), (2, BINARY)], ids=["unary", "binary"])
def test_host_emulation_of_every_primitive_matches_numpy(nin, prims, tmp_path):
    rng = np.random.default_rng(0)
    cases, sources = [], []
    for prim in prims:
        if prim == "erfinv":
            continue   # no erfinvf on the host (CUDA's math library has it)
        for dtype in REAL:
            v = _host_values(dtype, rng)
            if nin == 1:
                arrays = [v]
            else:      # every pair of the first 16 values (the edge cases), then shuffled
                edge = v[:16]
                arrays = [np.concatenate([np.repeat(edge, 16), v]),
                          np.concatenate([np.tile(edge, 16), rng.permutation(v)])]
            if prim in ("lshift", "rshift") and dtype.category == D.INTEGER:
                arrays[-1] = (np.abs(arrays[-1].astype(np.int64)) % (8 * dtype.itemsize + 3)
                              ).astype(dtype.np)
            g = _prim_graph(prim, nin, dtype, arrays[0].shape)
            if g is None:
                continue
            cg = CudaGraph(g)
            if not cg.kernels:
                continue
            src = render(cg.kernels[0], f"h_{prim}_{dtype.name}")
            cases.append((prim, dtype, src, arrays))
            sources.append(src)
    lib = host_library(sources, tmp_path)
    failures = []
    for prim, dtype, src, arrays in cases:
        try:
            want = _host_reference(prim, dtype, arrays)
        except (TypeError, ValueError):
            continue
        out_dt = src.kernel.outputs[0].dtype.np
        for launch in [src.launches[0]] + ([src.vector] if src.vector else []):
            got = np.empty(arrays[0].shape, out_dt)
            flag = [np.zeros(1, np.uint32)] if src.checks_div else []
            cuda_host.run_sequential(lib, launch.func, list(arrays) + [got] + flag)
            try:
                if prim in ("fmod", "remainder", "floordiv") and dtype.category != D.FLOATING:
                    assert src.checks_div, "an integer division without the zero flag"
                    assert flag[0][0] == (not arrays[1].all()), "the division-by-zero flag"
                assert got.dtype == want.dtype, (got.dtype, want.dtype)
                if D.from_numpy(want.dtype).is_floating_point:
                    tol = {2: 1e-2 if dtype is D.bfloat16 else 2e-3, 4: 4e-6,
                           8: 1e-13}[want.dtype.itemsize]
                    g64, w64 = got.astype(np.float64), want.astype(np.float64)
                    np.testing.assert_allclose(g64, w64, rtol=tol, atol=tol * 1e-3,
                                               equal_nan=True)
                    np.testing.assert_array_equal(np.signbit(g64[w64 == 0]),
                                                  np.signbit(w64[w64 == 0]))
                else:
                    np.testing.assert_array_equal(got, want)
            except AssertionError as e:
                failures.append(f"{prim} {dtype.name} {launch.func}: {str(e)[:300]}")
    assert not failures, "\n".join(failures)


def test_launcher_on_an_emulated_device(tmp_path, monkeypatch):
    """`CudaGraph`'s runner (module cache, grids, vector variant by alignment, layouts of
    views, scratch buffers, library calls with xp=cupy) against the interpreter, with cupy
    replaced by host C++ kernels run as real threads."""
    import codegen.cuda_compiled as cc

    fake = cuda_host.EmulatedCupy(tmp_path)
    monkeypatch.setattr(cc, "_cupy", lambda: fake)
    monkeypatch.setattr(cc, "_modules", {})
    monkeypatch.setattr(cc, "_sms", {})
    monkeypatch.setattr(codegen.cuda_render, "SPLIT_PARTS", 6)
    rng = np.random.default_rng(7)
    graphs = [gelu_graph((64, 48)), softmax_graph(), mlp_graph(), structure_graphs()[-2]]
    for g in graphs:
        arrays = [_struct_values(rng, p.meta["val"].shape, p.meta["val"].dtype)
                  for p in g.placeholders]
        cg = codegen.compile_graph(g, backend="cuda")
        got = cg(*[a.view(cuda_host.DevArray) for a in arrays])
        assert all(isinstance(o, cuda_host.DevArray) for o in got)
        _compare([np.asarray(o) for o in got], ir.Interpreter(g).run(*arrays), rtol=1e-4,
                 atol=1e-5, what=g.name)
    assert fake.modules == len(graphs)
    cg = codegen.compile_graph(graphs[0], backend="cuda")   # same source: the module cache
    assert fake.modules == len(graphs)
    base = rng.standard_normal((48, 130)).astype(np.float32).view(cuda_host.DevArray)
    for x in (base[:, :64].T, np.broadcast_to(base[0, :48], (64, 48)).view(cuda_host.DevArray),
              base.ravel()[1:1 + 64 * 48].reshape(64, 48)):
        want = ir.Interpreter(graphs[0]).run(np.asarray(x))[0]
        np.testing.assert_allclose(np.asarray(cg(x)[0]), want, rtol=1e-5, atol=1e-6)
    assert fake.modules == len(graphs) + 2      # one specialisation per layout of views
    assert "--use_fast_math" not in fake.options
    with pytest.raises(TypeError, match="cuda array"):
        cg(np.zeros((64, 48), np.float32))


# ---------------------------------------------------------------- execution (GPU)


def _rand(rng, shape, dtype):
    if dtype is D.bool_:
        return rng.random(shape) < 0.5
    if dtype.category == D.INTEGER:
        return rng.integers(-5 if dtype.np.kind == "i" else 0, 6, size=shape).astype(dtype.np)
    return (rng.standard_normal(shape) * 1.5).astype(np.float32).astype(dtype.np)


def _run_both(g, arrays):
    """(compiled cuda outputs, interpreter outputs on cupy) as numpy arrays."""
    dev = [cp.asarray(a) for a in arrays]
    cg = codegen.compile_graph(g, backend="cuda")
    got = cg(*dev)
    want = ir.Interpreter(g).run(*dev)
    for o in got:
        assert isinstance(o, cp.ndarray), type(o)
    return cg, [cp.asnumpy(o) for o in got], [cp.asnumpy(cp.asarray(w)) for w in want]


def _compare(got, want, rtol=1e-5, atol=1e-6, what=""):
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype,
                                                           b.dtype)
        if D.from_numpy(b.dtype).is_floating_point:
            tol = (2e-2, 2e-2) if b.dtype.itemsize == 2 else (rtol, atol)
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol[0],
                                       atol=tol[1], equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(a, b, err_msg=what)


@needs_gpu
def test_gpu_matrix_matches_eager_on_cupy():
    rng = np.random.default_rng(0)
    failures, ran = [], 0
    for g in _matrix_graphs():
        arrays = [_rand(rng, p.meta["val"].shape, p.meta["val"].dtype) for p in g.placeholders]
        try:
            ir.Interpreter(g).run(*[cp.asarray(a) for a in arrays])
        except Exception as e:  # noqa: BLE001 (eager rejects it: so must the compiled graph)
            with pytest.raises(type(e)):
                codegen.compile_graph(g, backend="cuda")(*[cp.asarray(a) for a in arrays])
            continue
        try:
            _, got, want = _run_both(g, arrays)
            _compare(got, want, what=g.name)
            ran += 1
        except AssertionError as e:
            failures.append(f"{g.name}: {str(e)[:300]}")
    assert not failures, "\n".join(failures)
    assert ran > 100


@needs_gpu
@pytest.mark.parametrize("g", structure_graphs(), ids=lambda g: g.name)
def test_gpu_structures_match_eager_on_cupy(g):
    rng = np.random.default_rng(1)
    arrays = [_struct_values(rng, p.meta["val"].shape, p.meta["val"].dtype)
              for p in g.placeholders]
    _, got, want = _run_both(g, arrays)
    _compare(got, want, rtol=1e-4, atol=1e-5, what=g.name)


@needs_gpu
def test_gpu_views_alignment_and_empty_inputs():
    g = gelu_graph((64, 48))
    cg = codegen.compile_graph(g, backend="cuda")
    base = cp.asarray(np.random.default_rng(2).standard_normal((48, 130)).astype(np.float32))
    views = [base[:, :64].T,                                  # transposed
             base[:, 1:65].T,                                 # transposed, offset
             cp.broadcast_to(base[0, :48], (64, 48)),         # broadcast
             base.ravel()[1:1 + 64 * 48].reshape(64, 48)]     # contiguous, not 16-byte aligned
    for x in views:
        assert x.shape == (64, 48)
        want = ir.Interpreter(g).run(x)[0]
        np.testing.assert_allclose(cp.asnumpy(cg(x)[0]), cp.asnumpy(want), rtol=1e-5,
                                   atol=1e-6)
    g = reduction_graph("sum", D.float32, (0, 5), 0)
    out = codegen.compile_graph(g, backend="cuda")(cp.zeros((0, 5), cp.float32))[0]
    assert cp.asnumpy(out).tolist() == [0.0] * 5


@needs_gpu
def test_gpu_no_host_device_copies_and_numpy_inputs_refused(monkeypatch):
    import cupy

    calls = []
    real_asarray, real_asnumpy = cupy.asarray, cupy.asnumpy
    g = mlp_graph()
    arrays = [real_asarray(_rand(np.random.default_rng(3), p.meta["val"].shape, D.float32))
              for p in g.placeholders]
    cg = codegen.compile_graph(g, backend="cuda")
    cg(*arrays)                           # first call: compile, outside the count

    def asarray(a, *args, **kw):
        if isinstance(a, np.ndarray):
            calls.append("asarray")
        return real_asarray(a, *args, **kw)

    def asnumpy(a, *args, **kw):
        calls.append("asnumpy")
        return real_asnumpy(a, *args, **kw)

    monkeypatch.setattr(cupy, "asarray", asarray)
    monkeypatch.setattr(cupy, "asnumpy", asnumpy)
    out = cg(*arrays)
    assert calls == [] and all(isinstance(o, cupy.ndarray) for o in out)
    with pytest.raises(TypeError, match="cuda array"):
        cg(*[np.zeros(p.meta["val"].shape, np.float32) for p in g.placeholders])


def _gradients_vs_eager(backend, to_device, to_host):
    """The MLP's backward graph (`ir.autodiff.build_backward`) compiled by `backend` against
    eager autograd on the CPU; `to_device`/`to_host` move arrays for the backend."""
    import eager
    from eager import dispatch
    from ir.autodiff import build_backward, copy_graph, decompose

    g = decompose(mlp_graph(device="cuda:0" if backend == "cuda" else "cpu"))
    wrt = [False, True, True, True, True]
    bwd, saved = build_backward(g, list(wrt))
    fwd, _ = copy_graph(g, name="mlp_forward", extra_outputs=saved)
    rng = np.random.default_rng(4)
    arrays = [(rng.standard_normal(p.meta["val"].shape) * 0.3).astype(np.float32)
              for p in g.placeholders]
    f = codegen.compile_graph(fwd, backend=backend)
    b = codegen.compile_graph(bwd, backend=backend)
    res = f(*[to_device(a) for a in arrays])
    n_out = len(g.output_node.args[0])
    outs, saved_vals = res[:n_out], res[n_out:]
    grads = b(*saved_vals, *[to_device(np.ones(o.shape, np.float32)) for o in outs])
    ts = [eager.from_numpy(a.copy()) for a in arrays]
    for t, w in zip(ts, wrt):
        if w:
            t.requires_grad_(True)
    env = dict(zip(g.placeholders, ts))
    for n in g.nodes:
        if n.op == "call_function":
            env[n] = dispatch.apply(n.target, tuple(env[a] if isinstance(a, ir.Node) else a
                                                    for a in n.args), dict(n.kwargs))
    loss = None
    for o in g.output_node.args[0]:
        s = env[o].sum()
        loss = s if loss is None else loss + s
    loss.backward()
    want = [t.grad.numpy() for t, w in zip(ts, wrt) if w]
    assert len(grads) == len(want) == 4
    for got, ref in zip(grads, want):
        np.testing.assert_allclose(to_host(got), ref, rtol=1e-4, atol=1e-5)
    return b


def test_gradient_check_of_the_backward_graph_on_the_cpu():
    b = _gradients_vs_eager("llvm", np.asarray, np.asarray)   # the GPU test's logic, on llvm
    assert b.kernels


@needs_gpu
def test_gpu_gradients_equal_eager_autograd():
    b = _gradients_vs_eager("cuda", cp.asarray, cp.asnumpy)
    assert b.kernels and any(k.rloops for k in b.kernels)


@needs_gpu
def test_gpu_capture_compile_with_the_cuda_backend():
    import capture
    import eager

    def f(x, w):
        return (x * w).softmax(-1) + x.tanh()

    rng = np.random.default_rng(6)
    x = eager.from_numpy(rng.standard_normal((32, 300)).astype(np.float32)).cuda()
    w = eager.from_numpy(rng.standard_normal((300,)).astype(np.float32)).cuda()
    got = capture.compile(f, backend="cuda")(x, w)
    want = f(x, w)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-6)


@needs_gpu
def test_gpu_device_copies_record_gradients_back_to_the_source_device():
    import eager

    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4))
    x = eager.tensor(a, requires_grad=True)
    y = x.cuda()
    assert y.device.type == "cuda" and y.grad_fn is not None
    z = (y * y).sum()
    z.backward()
    assert x.grad.device.type == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    back = y.to("cpu")
    assert back.device.type == "cpu"
    np.testing.assert_array_equal(back.detach().numpy(), a)
    assert y.cpu().dtype is x.dtype and x.to("cuda", eager.float32).dtype is eager.float32


# ---------------------------------------------------------------- integer division by zero

# Eager (and PyTorch on the CPU) raise RuntimeError("ZeroDivisionError") for an integer
# division, floor division, remainder or fmod by zero: kernels with such a division take a
# device flag (`CudaSource.checks_div`) that the launcher reads back after the launch.

INT_DIV = (D.int8, D.int32, D.int64, D.uint8)


def int_division_graph(dtypes=INT_DIV, shape=(6, 37), divisor=None):
    """Per dtype: div (trunc and floor), remainder, floor_divide and fmod of x by y (or by the
    Python number `divisor`)."""
    g = ir.Graph("int_division")
    outs = []
    for dt in dtypes:
        x = ph(g, f"x_{dt.name}", shape, dt)
        y = ph(g, f"y_{dt.name}", shape, dt) if divisor is None else divisor
        outs += [c(g, "div", x, y, rounding_mode="trunc"), c(g, "div", x, y, rounding_mode="floor"),
                 c(g, "remainder", x, y), c(g, "floor_divide", x, y), c(g, "fmod", x, y)]
    g.output(tuple(outs))
    return g


def int_division_rows_graph(shape, dim, dtype=D.int32):
    """sum(remainder(x, y) + fmod(x, y), dim): the flag through reduction schedules."""
    g = ir.Graph(f"int_division_rows_{'x'.join(map(str, shape))}")
    x, y = ph(g, "x", shape, dtype), ph(g, "y", shape, dtype)
    g.output((c(g, "sum", c(g, "add", c(g, "remainder", x, y), c(g, "fmod", x, y)), dim),))
    return g


def int_division_graphs():
    return [int_division_graph(), int_division_rows_graph((6, 100), -1),       # block_rows
            int_division_rows_graph((64, 8), -1),                               # thread_rows
            int_division_rows_graph((1 << 16,), None)]                          # split


def _division_values(rng, shape, dtype, zero_at=None):
    """(x, y): x with MIN where y is -1 (no UB: MIN / -1 wraps), y never 0 but at flat index
    `zero_at`."""
    n = int(np.prod(shape))
    if dtype.np.kind == "u":
        x = rng.integers(0, 200, n)
        y = rng.integers(1, 8, n)
    else:
        x = rng.integers(-50, 51, n)
        y = rng.integers(1, 8, n) * rng.choice([-1, 1], n)
        x[:3], y[:3] = np.iinfo(dtype.np).min, -1
    if zero_at is not None:
        y[zero_at] = 0
    return x.astype(dtype.np).reshape(shape), y.astype(dtype.np).reshape(shape)


def _division_inputs(g, rng, zero=None, zero_at=0):
    """One array per placeholder of `g` (x_*, y_* pairs); the y of dtype `zero` gets a 0."""
    arrays = []
    for p in g.placeholders[::2]:
        dt = p.meta["val"].dtype
        arrays += _division_values(rng, p.meta["val"].shape, dt,
                                   zero_at if dt is zero else None)
    return arrays


@needs_nvrtc
def test_integer_division_kernels_take_the_zero_flag_and_compile():
    graphs = int_division_graphs()
    cgs = compile_all(graphs, options=FAST)    # NVRTC checks wk_dz and the flag parameter
    scheds = set()
    for cg in cgs:
        for src in cg.sources:
            assert src.checks_div and src.kernel.checks_div, src.kernel.name
            scheds.add(src.schedule)
            for ln in src.launches + ([src.vector] if src.vector else []):
                head = src.source[src.source.index(f"\n{ln.func}("):]
                head = head[:head.index(")")]
                assert head.endswith("unsigned int* __restrict__ wk_err"), head
            assert "wk_dz(" in src.source
    assert scheds == {"pointwise", "block_rows", "thread_rows", "split"}
    # the parameter is in the PTX: inputs, outputs, (scratch), flag
    src = cgs[0].sources[0]
    ptx = nvrtc.compile_ptx(module_source([src]), "compute_90", FAST)
    entry = ptx[ptx.index(f".entry {src.launches[0].func}("):]
    nargs = len(src.kernel.inputs) + len(src.kernel.outputs) + 1
    assert entry[:entry.index(")")].count(".param") == nargs
    # a division by a non-zero constant cannot fail (no flag, no read-back); by 0 it can
    for divisor, flagged in ((3, False), (-1, False), (0, True)):
        for src in CudaGraph(int_division_graph((D.int32,), divisor=divisor)).sources:
            assert src.checks_div is flagged and ("wk_err" in src.source) is flagged, divisor
    # float division, and kernels without any division, take no flag
    for g in (int_division_graph((D.float32,)), gelu_graph(), softmax_graph()):
        for src in CudaGraph(g).sources:
            assert not src.checks_div and "wk_err" not in src.source, g.name


@pytest.mark.filterwarnings("ignore:overflow encountered")   # eager's numpy on MIN // -1
def test_host_emulation_of_integer_division_by_zero(tmp_path, monkeypatch):
    """Through `CudaGraph`'s launcher on the emulated device: a 0 divisor raises eager's
    RuntimeError("ZeroDivisionError") (wherever it is: vector body, vector tail, a reduction
    row, a split pass), non-zero divisors give eager's and numpy's values (MIN / -1 too), and
    kernels without integer division allocate no flag."""
    import codegen.cuda_compiled as cc

    fake = cuda_host.EmulatedCupy(tmp_path)
    monkeypatch.setattr(cc, "_cupy", lambda: fake)
    monkeypatch.setattr(cc, "_modules", {})
    monkeypatch.setattr(cc, "_sms", {})
    monkeypatch.setattr(codegen.cuda_render, "SPLIT_PARTS", 6)
    zeros = []
    real_zeros = fake.zeros
    fake.zeros = lambda shape, dtype: zeros.append(shape) or real_zeros(shape, dtype)
    rng = np.random.default_rng(11)
    dev = cuda_host.DevArray
    for g in int_division_graphs():
        cg = codegen.compile_graph(g, backend="cuda")
        arrays = _division_inputs(g, rng)
        zeros.clear()
        got = [np.asarray(o) for o in cg(*[a.view(dev) for a in arrays])]
        assert len(zeros) == len(cg.sources)          # one flag per kernel and call
        want = ir.Interpreter(g).run(*arrays)
        _compare(got, want, what=g.name)
        if g.name == "int_division":
            with np.errstate(all="ignore"):
                for j, dt in enumerate(INT_DIV):
                    x, y = arrays[2 * j], arrays[2 * j + 1]
                    np.testing.assert_array_equal(got[5 * j + 2], np.remainder(x, y))
                    np.testing.assert_array_equal(got[5 * j + 3], np.floor_divide(x, y))
                    np.testing.assert_array_equal(got[5 * j + 4], np.fmod(x, y))
            cases = [(dt, at) for dt in INT_DIV for at in (0,)] + [(D.int32, 221),
                                                                   (D.int64, 100)]
        else:
            cases = [(D.int32, 0), (D.int32, int(np.prod(g.placeholders[0].meta["val"].shape))
                                    - 1)]
        for dt, at in cases:
            arrays = _division_inputs(g, rng, zero=dt, zero_at=at)
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                ir.Interpreter(g).run(*arrays)
            with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                cg(*[a.view(dev) for a in arrays])
    g = int_division_graph((D.int32,))           # a layout of views: the specialised kernels
    cg = codegen.compile_graph(g, backend="cuda")
    x, y = (a.T.copy().T for a in _division_values(rng, (6, 37), D.int32))
    assert not x.flags.c_contiguous
    _compare([np.asarray(o) for o in cg(x.view(dev), y.view(dev))], ir.Interpreter(g).run(x, y),
             what="views")
    y[5, 36] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        cg(x.view(dev), y.view(dev))
    g = gelu_graph((64, 48))                     # no integer division: no flag, no read-back
    zeros.clear()
    codegen.compile_graph(g, backend="cuda")(np.ones((64, 48), np.float32).view(dev))
    assert zeros == []


@needs_gpu
@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_gpu_integer_division_by_zero_raises_like_eager():
    rng = np.random.default_rng(12)
    for g in int_division_graphs():
        cg = codegen.compile_graph(g, backend="cuda")
        assert all(s.checks_div for s in cg.sources)
        arrays = _division_inputs(g, rng)
        dev = [cp.asarray(a) for a in arrays]
        got = [cp.asnumpy(o) for o in cg(*dev)]
        want = [cp.asnumpy(cp.asarray(w)) for w in ir.Interpreter(g).run(*dev)]
        _compare(got, want, what=g.name)
        _compare(got, ir.Interpreter(g).run(*arrays), what=g.name)   # numpy's eager too
        n = int(np.prod(g.placeholders[0].meta["val"].shape))
        for dt in ({p.meta["val"].dtype for p in g.placeholders}):
            for at in (0, n - 1, n // 2):
                dev = [cp.asarray(a) for a in _division_inputs(g, rng, zero=dt, zero_at=at)]
                with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                    ir.Interpreter(g).run(*dev)
                with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                    cg(*dev)
        got = [cp.asnumpy(o) for o in cg(*[cp.asarray(a) for a in arrays])]   # flag re-zeroed
        _compare(got, want, what=g.name)

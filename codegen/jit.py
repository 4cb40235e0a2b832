"""The process-wide LLVM JIT: target machine, O3 pipeline, one MCJIT engine, kernel caches.

Follows CODEGEN.md ("LLVM through llvmlite", "Portability"): native target initialised once;
a target machine drives the new pass manager's O3 pipeline (loop and SLP vectorization on) and
emits each kernel's object code; one MCJIT engine per process, created lazily (it owns a
target machine of its own), receives every object and is kept as long as the process (the
kernels' addresses are). Before an object reaches the engine, `codegen.linkcheck` reads its
symbol table: an undefined symbol the JIT cannot bind (a compiler-rt helper such as
`__truncdfhf2`, which MCJIT would report by aborting the process) or a global symbol other
than the kernel's own (it would collide in the engine) raises `UnresolvedSymbolError`, which
`CompiledGraph` turns into an eager fallback of that kernel's ops. Compiled kernels are cached
in memory by a hash of their LLVM IR and on disk by `codegen.kernel_cache` (keyed by the IR,
the target triple, CPU, CPU features and the wick and llvmlite versions; `WICK_CACHE_DIR=0`
disables it), so a new process skips LLVM's optimiser and code generator; a cached object is
checked like a new one and rebuilt when it fails. `WICK_LLVM_CPU=<cpu>` (testing only)
compiles for that LLVM CPU with its default features instead of the host's (x86-64,
x86-64-v2, x86-64-v3, haswell, skylake-avx512, znver4...; it must be a CPU this machine can
execute). `trampoline(argc, offset)` is the cheap way to call a kernel from Python: a tiny
compiled function that takes the kernel's address and the numpy arrays themselves (ctypes
passes a `py_object` as the bare pointer) and reads each array's data pointer at `offset` in
its object, which saves `a.ctypes.data` (about 1 us per array) on every call. Thread-safe.
Imports only llvmlite and codegen's kernel_cache and linkcheck.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import threading
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from . import emit, kernel_cache, linkcheck
from .linkcheck import UnresolvedSymbolError  # noqa: F401 (public name kept here)
from .kernel_cache import cache_dir  # noqa: F401 (public name kept here)

WICK_VERSION = "0.1.0"

_lock = threading.RLock()
_state: dict = {}
_cache: dict = {}
_by_structure: dict = {}   # structural key of a kernel (codegen.kernel_key) -> its _cache key
stats = {"compiled": 0, "disk_hits": 0, "memory_hits": 0}


@dataclass(frozen=True)
class JitFunction:
    """A compiled kernel: its symbol, address, ctypes callable, optimised and source IR."""

    symbol: str
    address: int
    cfunc: object
    llvm_ir: str
    source_ir: str


def target_cpu() -> tuple[str, str]:
    """(CPU name, feature string) the kernels are compiled for: the host's, or the CPU named by
    `WICK_LLVM_CPU` (testing only, e.g. x86-64, x86-64-v3, haswell, skylake-avx512, znver4:
    LLVM's default features of that CPU; it must be one this machine can run)."""
    cpu = os.environ.get("WICK_LLVM_CPU", "").strip()
    if cpu and cpu != "host":
        return cpu, ""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _target_machine(target, cpu: str, features: str):
    return target.create_target_machine(cpu=cpu, features=features, opt=3)


def _init() -> dict:
    if _state:
        return _state
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:  # tanhf, erff...: usually already in the process, but make sure
        llvm.load_library_permanently(libm)
    target = llvm.Target.from_triple(llvm.get_process_triple())
    cpu, features = target_cpu()
    tm = _target_machine(target, cpu, features)
    target_id = "|".join([tm.triple, cpu, features, WICK_VERSION, llvmlite.__version__])
    _state.update(target=target, cpu=cpu, features=features, tm=tm, engine=None,
                  symbols=set(), target_id=target_id)
    return _state


def ir_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def optimize(text: str, tm=None):
    """Parse, verify and run the O3 module pipeline for target machine `tm` (default: the
    JIT's); returns the llvm ModuleRef."""
    return optimize_many([text], tm)


def optimize_many(texts, tm=None):
    """`optimize` of the IR modules `texts` linked into one module (their definitions must
    not collide): LLVM's per-module and per-pass costs are paid once for all of them."""
    st = _init()
    tm = tm or st["tm"]
    mod = llvm.parse_assembly(texts[0])
    for text in texts[1:]:
        mod.link_in(llvm.parse_assembly(text))
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    _, pb = emit.pipeline(tm)
    pb.getModulePassManager().run(mod, pb)
    return mod


NEUTRAL = "__wick_kernel__"   # the symbol kernels are keyed under


def compile_function(render, name: str, argc: int) -> JitFunction:
    """JIT-compile the kernel `render(symbol) -> LLVM IR text` as `void(ptr * argc, i64, i64)`.

    The cache key is the IR rendered under a neutral symbol, so kernels that differ only in
    name share one compiled function; a new one is exported as `{name}_{hash}` (symbols must be
    unique in the one engine; the neutral text is renamed, not rendered again). Looks in
    memory, then on disk, then compiles. Raises UnresolvedSymbolError (see `_load`).
    """
    neutral = render(NEUTRAL)
    key = ir_hash(neutral)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            stats["memory_hits"] += 1
            return hit
        return _compile_one(_init(), neutral, key, name, argc)


def _compile_one(st: dict, neutral: str, key: str, name: str, argc: int) -> JitFunction:
    path = None
    if kernel_cache.cache_dir() is not None:
        path = kernel_cache.entry_key(st["target_id"], neutral)
        found = kernel_cache.load(path, f"_{key}")
        if found is not None:
            rec, obj = found
            try:
                (address,) = _load(st, obj, [rec["symbol"]], rec.get("llvm_ir", ""))
            except Exception:  # noqa: BLE001 (a foreign object: rebuild below)
                address = 0
            if address:
                stats["disk_hits"] += 1
                return _finish(key, rec["symbol"], address, argc, rec.get("llvm_ir", ""),
                               rec.get("source_ir", ""))
    symbol = f"{name}_{key}"
    source = neutral.replace(NEUTRAL, symbol)
    mod = optimize(source)
    opt_ir = str(mod)
    obj = st["tm"].emit_object(mod)
    linkcheck.check_object(obj, opt_ir, f"kernel {symbol}", exports=symbol)
    if path is not None:
        kernel_cache.store(path, {"symbol": symbol, "llvm_ir": opt_ir, "source_ir": source}, obj)
    (address,) = _load(st, obj, [symbol], opt_ir)
    stats["compiled"] += 1
    return _finish(key, symbol, address, argc, opt_ir, source)


def compile_batch(jobs) -> list:
    """`compile_function` of many kernels `jobs` [(render, name, argc[, structural key])] at
    once. A job whose structural key (`codegen.kernel_key`: a text that determines its IR)
    was seen before is a memory hit without rendering; the kernels that miss the caches are
    linked into one LLVM module, optimised and emitted as one object (and kept on disk as one
    entry), which saves LLVM's fixed per-module costs (about a fifth of the compile time of a
    graph of small kernels). Returns, per job, its JitFunction or the Exception that stopped
    it: when the batch fails as a whole (a kernel that needs a symbol the JIT lacks), each
    kernel is compiled alone, so only the faulty ones fail."""
    with _lock:
        out: list = [None] * len(jobs)
        misses: dict = {}   # key -> (neutral IR, name, argc, [job indices])
        skeys: dict = {}    # key -> the structural keys of its jobs
        seen: dict = {}     # structural key -> key, in this batch
        for i, (render, name, argc, *skey) in enumerate(jobs):
            skey = skey[0] if skey else None
            hit = _cache.get(_by_structure.get(skey, ""))
            if hit is not None:
                stats["memory_hits"] += 1
                out[i] = hit
                continue
            if skey is not None and skey in seen:   # a twin of an earlier job
                misses[seen[skey]][3].append(i)
                continue
            try:
                neutral = render(NEUTRAL)
            except Exception as e:  # noqa: BLE001 (reported per job)
                out[i] = e
                continue
            key = ir_hash(neutral)
            misses.setdefault(key, (neutral, name, argc, []))[3].append(i)
            if skey is not None:
                seen[skey] = key
                skeys.setdefault(key, []).append(skey)
        st = _init()
        for key in list(misses):
            hit = _cache.get(key)
            if hit is not None:
                for i in misses.pop(key)[3]:
                    stats["memory_hits"] += 1
                    out[i] = hit
        fns: dict = {}
        if len(misses) > 1:
            try:
                fns = _compile_many(st, misses)
            except Exception:  # noqa: BLE001 (retried one by one below)
                fns = {}
        for key, (neutral, name, argc, idx) in misses.items():
            fn = fns.get(key)
            if fn is None:
                try:
                    fn = _compile_one(st, neutral, key, name, argc)
                except Exception as e:  # noqa: BLE001 (reported per job)
                    fn = e
            out[idx[0]] = fn
            for i in idx[1:]:
                if not isinstance(fn, Exception):
                    stats["memory_hits"] += 1
                out[i] = fn
        for key, keys in skeys.items():
            if key in _cache:
                _by_structure.update(dict.fromkeys(keys, key))
    return out


class Pending:
    """A compile on a background thread (`compile_later`): `done()`, then `result`, its
    JitFunction or the Exception that stopped it."""

    def __init__(self):
        self._done = threading.Event()
        self.result = None

    def done(self) -> bool:
        return self._done.is_set()


def compile_later(job) -> Pending:
    """`compile_batch([job])[0]` on a thread of its own (not a daemon: the interpreter waits
    for it at exit); with `WICK_COMPILE_THREADS=1`, compiled before this returns."""
    pending = Pending()

    def work():
        try:
            pending.result = compile_batch([job])[0]
        except BaseException as e:  # noqa: BLE001 (handed to the caller)
            pending.result = e
        finally:
            pending._done.set()

    if emit.threads_wanted() <= 1:
        work()
    else:
        threading.Thread(target=work, name="wick-jit").start()
    return pending


def _compile_many(st: dict, misses: dict) -> dict:
    """{key: JitFunction} of the kernels `misses` (at least two), compiled as one object per
    part of the batch (`emit.split`: one part per compile thread) and kept as one disk entry
    (record: the symbols and source IR per kernel, each part's object size and kernels)."""
    keys = list(misses)
    neutrals = [misses[k][0] for k in keys]
    path = None
    if kernel_cache.cache_dir() is not None:
        path = kernel_cache.entry_key(st["target_id"], "\0".join(neutrals))
        found = kernel_cache.load(path)
        if found is not None:
            hit = _load_parts(st, keys, found)
            if hit is not None:
                stats["disk_hits"] += len(keys)
                return _finish_many(keys, misses, *hit)
    syms = [f"{misses[k][1]}_{k}" for k in keys]
    srcs = [n.replace(NEUTRAL, s) for n, s in zip(neutrals, syms)]
    parts = emit.split([emit.cost(t) for t in srcs], min(emit.threads_wanted(), len(srcs) // 2))
    built = emit.emit_parts(st, [[srcs[i] for i in p] for p in parts], optimize_many)
    addresses: list = [0] * len(keys)
    for part, (obj, opt_ir) in zip(parts, built):
        psyms = [syms[i] for i in part]
        linkcheck.check_object(obj, opt_ir, f"kernels {', '.join(psyms)}", exports=set(psyms))
    for part, (obj, opt_ir) in zip(parts, built):
        for i, a in zip(part, _load(st, obj, [syms[i] for i in part], opt_ir)):
            addresses[i] = a
    opt_ir = "\n".join(ir for _, ir in built)
    if path is not None:
        kernel_cache.store(path, {"symbol": "", "symbols": syms, "llvm_ir": opt_ir,
                                  "source_irs": srcs,
                                  "parts": [[len(obj), p] for p, (obj, _) in zip(parts, built)]},
                           b"".join(obj for obj, _ in built))
    stats["compiled"] += len(keys)
    return _finish_many(keys, misses, syms, addresses, opt_ir, srcs)


def _load_parts(st: dict, keys: list, found: tuple):
    """(symbols, addresses, optimised IR, sources) of a batch's disk entry `found` loaded into
    the engine, or None when the entry does not fit `keys` or does not load."""
    rec, blob = found
    syms, srcs, parts = rec.get("symbols"), rec.get("source_irs"), rec.get("parts")
    if not (isinstance(syms, list) and isinstance(srcs, list) and isinstance(parts, list)
            and len(syms) == len(keys) == len(srcs)
            and all(isinstance(s, str) and s.endswith(f"_{k}") for s, k in zip(syms, keys))):
        return None
    opt_ir = rec.get("llvm_ir", "")
    objs, at = [], 0
    try:
        for size, idx in parts:
            objs.append((blob[at:at + size], [syms[i] for i in idx], idx))
            at += size
        if at != len(blob) or sorted(i for _, _, idx in objs for i in idx) != list(
                range(len(keys))):
            return None
        for obj, psyms, _ in objs:   # every part checked before any reaches the engine
            linkcheck.check_object(obj, opt_ir, "a cached kernel", exports=set(psyms))
        addresses: list = [0] * len(keys)
        for obj, psyms, idx in objs:
            for i, a in zip(idx, _load(st, obj, psyms, opt_ir)):
                addresses[i] = a
    except Exception:  # noqa: BLE001 (a foreign or malformed entry: rebuild)
        return None
    return syms, addresses, opt_ir, srcs


def _finish_many(keys, misses, syms, addresses, opt_ir, srcs) -> dict:
    texts = function_texts(opt_ir)
    return {k: _finish(k, s, a, misses[k][2], texts.get(s, ""), src)
            for k, s, a, src in zip(keys, syms, addresses, srcs)}


def function_texts(module_ir: str) -> dict:
    """{symbol: its `define ... { ... }` text} of the functions a printed LLVM module defines."""
    out: dict = {}
    lines = module_ir.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            j = i
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            name = line.split("@", 1)[1].split("(", 1)[0].strip('"')
            out[name] = "".join(lines[i:j + 1])
            i = j
        i += 1
    return out


def _load(st: dict, obj: bytes, symbols: list, opt_ir: str) -> list:
    """Link object code `obj` into the engine and return the addresses of `symbols`.

    Raises UnresolvedSymbolError, before the engine sees the object, when it needs a symbol
    the JIT cannot bind (MCJIT would abort the process) or defines another global symbol than
    `symbols` or one already in the engine (symbols of one engine must be unique)."""
    what = f"kernel {symbols[0]}" if len(symbols) == 1 else f"kernels {', '.join(symbols)}"
    linkcheck.check_object(obj, opt_ir, what, exports=set(symbols))
    taken = [s for s in symbols if s in st["symbols"]]
    if taken or len(set(symbols)) != len(symbols):
        raise linkcheck.UnresolvedSymbolError(f"codegen: {taken or symbols} already in the JIT")
    engine = st.get("engine")
    if engine is None:
        backing = llvm.parse_assembly("")
        backing.triple = st["tm"].triple
        backing.data_layout = str(st["tm"].target_data)
        engine = st["engine"] = llvm.create_mcjit_compiler(
            backing, _target_machine(st["target"], st["cpu"], st["features"]))
    st["symbols"].update(symbols)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addresses = [engine.get_function_address(s) for s in symbols]
    if not all(addresses):
        raise RuntimeError(f"codegen: the JIT did not export {symbols}")
    return addresses


def _finish(key, symbol, address, argc, opt_ir, source) -> JitFunction:
    cfunc = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * argc, ctypes.c_int64,
                             ctypes.c_int64)(address)
    fn = JitFunction(symbol, address, cfunc, opt_ir, source)
    _cache[key] = fn
    return fn


_tramps: dict = {}


def _trampoline_ir(symbol: str, argc: int, offset: int) -> str:
    params = ", ".join(["ptr %f"] + [f"ptr %a{i}" for i in range(argc)] + ["i64 %lo", "i64 %hi"])
    lines = [f"define void @{symbol}({params}) {{"]
    for i in range(argc):
        lines += [f"  %p{i} = getelementptr i8, ptr %a{i}, i64 {offset}",
                  f"  %d{i} = load ptr, ptr %p{i}"]
    args = ", ".join([f"ptr %d{i}" for i in range(argc)] + ["i64 %lo", "i64 %hi"])
    lines += [f"  call void %f({args})", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def trampoline(argc: int, offset: int):
    """`call(kernel_address, *arrays, lo, hi)`: runs the kernel `void(ptr * argc, i64, i64)`
    on the data pointers stored at byte `offset` of each array object (the caller checks that
    numpy keeps it there, and passes only exact `numpy.ndarray`s)."""
    fn = _tramps.get((argc, offset))
    if fn is None:
        fn = trampolines([argc], offset)[0]
    return fn


def trampolines(argcs, offset: int) -> list:
    """`trampoline(argc, offset)` for each of `argcs`, the missing ones compiled as one batch
    (not counted in `stats`: it counts kernels)."""
    missing = sorted({a for a in argcs if (a, offset) not in _tramps})
    if missing:
        with _lock:
            saved = dict(stats)
            jfs = compile_batch([(lambda sym, a=a: _trampoline_ir(sym, a, offset),
                                  f"wick_tramp{a}", a + 1) for a in missing])
            stats.update(saved)
        for a, jf in zip(missing, jfs):
            if isinstance(jf, Exception):
                raise jf
            _tramps[(a, offset)] = ctypes.CFUNCTYPE(
                None, ctypes.c_void_p, *[ctypes.py_object] * a, ctypes.c_int64,
                ctypes.c_int64)(jf.address)
    return [_tramps[(a, offset)] for a in argcs]


def cache_size() -> int:
    return len(_cache)

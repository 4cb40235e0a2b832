"""The process-wide LLVM JIT: target machine, O3 pipeline, one MCJIT engine, in-memory cache.

Follows CODEGEN.md ("LLVM through llvmlite"): native target initialised once; one MCJIT engine
per process, created lazily, which owns its own target machine and receives every kernel
module (modules are kept alive as long as the process, since their function pointers are);
a second target machine drives the new pass manager's O3 pipeline (loop and SLP vectorization
on). Compiled kernels are cached by a hash of their LLVM IR text, so the same kernel built by
two graphs is optimised and machine-compiled once. Thread-safe. Imports only llvmlite.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm

_lock = threading.RLock()
_state: dict = {}
_cache: dict = {}


@dataclass(frozen=True)
class JitFunction:
    """A compiled kernel: its symbol, address, ctypes callable, optimised and source IR."""

    symbol: str
    address: int
    cfunc: object
    llvm_ir: str
    source_ir: str


def _target_machine(target):
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=3)


def _init() -> dict:
    if _state:
        return _state
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:  # tanhf, erff...: usually already in the process, but make sure
        llvm.load_library_permanently(libm)
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = _target_machine(target)
    backing = llvm.parse_assembly("")
    backing.triple = tm.triple
    backing.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(backing, _target_machine(target))
    _state.update(tm=tm, engine=engine, modules=[backing])
    return _state


def ir_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def optimize(text: str):
    """Parse, verify and run the O3 module pipeline; returns the llvm ModuleRef."""
    st = _init()
    mod = llvm.parse_assembly(text)
    mod.triple = st["tm"].triple
    mod.data_layout = str(st["tm"].target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(st["tm"], pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def compile_function(render, name: str, argc: int) -> JitFunction:
    """JIT-compile the kernel `render(symbol) -> LLVM IR text` as a `void(ptr * argc)` function.

    The cache key is the IR rendered under a neutral symbol, so kernels that differ only in
    name share one compiled function; a new one is exported as `{name}_{hash}` (symbols must be
    unique in the one engine).
    """
    key = ir_hash(render("__wick_kernel__"))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        st = _init()
        symbol = f"{name}_{key}"
        source = render(symbol)
        mod = optimize(source)
        opt_ir = str(mod)
        st["engine"].add_module(mod)
        st["engine"].finalize_object()
        st["modules"].append(mod)
        address = st["engine"].get_function_address(symbol)
        if not address:
            raise RuntimeError(f"codegen: the JIT did not export {symbol}")
        cfunc = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * argc)(address)
        fn = JitFunction(symbol, address, cfunc, opt_ir, source)
        _cache[key] = fn
        return fn


def cache_size() -> int:
    return len(_cache)

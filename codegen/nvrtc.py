"""Compile checks of generated CUDA C without a GPU: NVRTC from pip (`cuda-bindings`).

`compile_ptx(source, arch)` compiles one module to PTX with the NVRTC library of the
`nvidia-cuda-nvrtc` wheel (no driver, no GPU needed) and raises `CudaCompileError` with
NVRTC's log on failure, so a renderer bug fails CI on any machine (CODEGEN.md, "Compile checks
without a GPU"). `available()` says whether NVRTC can be loaded (and why not). The launcher
compiles through cupy instead; this module is for checks and `wick dump`. Imports nothing of
wick.
"""

from __future__ import annotations

OPTIONS = ("--std=c++17",)


class CudaCompileError(RuntimeError):
    """NVRTC rejected a generated module; the message holds NVRTC's log and the source."""


def _nvrtc():
    from cuda.bindings import nvrtc

    return nvrtc


def available() -> tuple:
    """(True, version) when NVRTC loads, else (False, the reason)."""
    try:
        nvrtc = _nvrtc()
        err, major, minor = nvrtc.nvrtcVersion()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return False, f"nvrtcVersion failed: {err}"
        return True, f"{major}.{minor}"
    except Exception as e:  # noqa: BLE001 (ImportError, missing shared library...)
        return False, f"{type(e).__name__}: {e}"


def _check(nvrtc, result, what: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CudaCompileError(f"NVRTC {what} failed: {result}")


def compile_ptx(source: str, arch: str = "compute_90", options=OPTIONS,
                name: str = "wick.cu") -> str:
    """PTX text of CUDA C `source` for virtual architecture `arch` ("compute_90").

    Raises CudaCompileError (with NVRTC's log and the numbered source) when it does not
    compile, ImportError when NVRTC is not installed.
    """
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode()] + [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            err, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            numbered = "\n".join(f"{i + 1:5d} {line}" for i, line in
                                 enumerate(source.splitlines()))
            raise CudaCompileError(f"NVRTC could not compile {name}:\n"
                                   f"{log.decode(errors='replace').strip()}\n{numbered}")
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(nvrtc, err, "nvrtcGetPTXSize")
        ptx = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, ptx)
        _check(nvrtc, err, "nvrtcGetPTX")
        return ptx.rstrip(b"\0 ").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

"""Host emulation of generated CUDA kernels: the checks of the "cuda" backend without a GPU.

The CUDA C of `codegen.cuda_render` is plain C++ but for a few built-ins; `HOST_SHIM` provides
them on the host (`blockIdx`/`threadIdx` per thread, `__syncthreads` as a block barrier,
`__shfl_down_sync` as an exchange through memory between two warp barriers, vector types,
bit casts, `_Float16` for the float16 conversions done in PTX on the device), so that
`compile_host` builds the kernels with g++ and `launch` runs a grid as blocks of real threads
(one block at a time). `EmulatedCupy` is just enough of cupy (`RawModule`, `empty`,
`cuda.Device`...) for `codegen.cuda_compiled.CudaGraph` to run its whole launcher on the host.
Used by the tests (the semantics of every primitive, block reductions, split passes and the
launcher are checked on machines without a GPU); not a fast path. Imports numpy and
`codegen.cuda` only; needs g++ with C++20 (`std::barrier`).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np

from codegen.cuda import HELPERS, PRELUDE

MAX_ARGS = 8   # every kernel argument is a pointer; extra ones are ignored by the x86-64 ABI

HOST_SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
using std::isnan; using std::isinf; using std::fmod; using std::copysign; using std::floor;
struct wk_dim3 { unsigned int x, y, z; };
static thread_local wk_dim3 blockIdx, threadIdx;
static wk_dim3 gridDim;
extern "C" void wk_set(unsigned b, unsigned t, unsigned g) {
  blockIdx.x = b; threadIdx.x = t; gridDim.x = g;
}
// a block of real threads: __syncthreads is a block barrier, __shfl_down_sync exchanges
// through memory between two barriers of the thread's warp
static std::barrier<>* wk_block_bar;
static std::vector<std::barrier<>*> wk_warp_bar;
static unsigned long long wk_slots[1024];
#define __syncthreads() wk_block_bar->arrive_and_wait()
template <typename T> static T __shfl_down_sync(unsigned, T v, int o) {
  unsigned t = threadIdx.x;
  std::memcpy(&wk_slots[t], &v, sizeof(T));
  wk_warp_bar[t >> 5]->arrive_and_wait();
  T r = v;
  if ((t & 31) + o < 32) std::memcpy(&r, &wk_slots[t + o], sizeof(T));
  wk_warp_bar[t >> 5]->arrive_and_wait();
  return r;
}
typedef void (*wk_fn)(void*, void*, void*, void*, void*, void*, void*, void*);
// every kernel argument is a pointer: extra pointer arguments are ignored by the x86-64 ABI
extern "C" void wk_launch(void* f, unsigned grid, unsigned block, void** a) {
  std::barrier<> bar(block);
  wk_block_bar = &bar;
  wk_warp_bar.clear();
  for (unsigned w = 0; w < (block + 31) / 32; ++w) wk_warp_bar.push_back(new std::barrier<>(32));
  gridDim.x = grid;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < block; ++t) {
    ts.emplace_back([=, &bar] {
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b; threadIdx.x = t;
        ((wk_fn)f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
        bar.arrive_and_wait();
      }
    });
  }
  for (auto& th : ts) th.join();
  for (auto* w : wk_warp_bar) delete w;
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
template <typename T, typename U> static inline T wk_bits(U u) {
  T t; std::memcpy(&t, &u, sizeof(T)); return t;
}
static inline float __uint_as_float(unsigned u) { return wk_bits<float>(u); }
static inline float __int_as_float(int u) { return wk_bits<float>(u); }
static inline unsigned __float_as_uint(float f) { return wk_bits<unsigned>(f); }
static inline double __longlong_as_double(long long u) { return wk_bits<double>(u); }
static inline float wk_h2f(unsigned short h) { return (float)wk_bits<_Float16>(h); }
static inline unsigned short wk_f2h(float f) { return wk_bits<unsigned short>((_Float16)f); }
static inline unsigned short wk_d2h(double d) { return wk_bits<unsigned short>((_Float16)d); }
#define WK_VEC(N, T) struct N { T x, y, z, w; }; \
  static inline N make_##N(T a, T b, T c, T d) { N v = {a, b, c, d}; return v; }
WK_VEC(float4, float) WK_VEC(int4, int) WK_VEC(uint4, unsigned int) WK_VEC(short4, short)
WK_VEC(ushort4, unsigned short) WK_VEC(char4, signed char) WK_VEC(uchar4, unsigned char)
"""




def compile_host(sources: str, directory, opt: str = "-O1") -> ctypes.CDLL:
    """The CUDA C kernels `sources` (without `PRELUDE`) built by g++ as a shared library.

    Raises RuntimeError when g++ is missing or rejects the source (with its messages).
    """
    if shutil.which("g++") is None:
        raise RuntimeError("g++ is needed for the host emulation of CUDA kernels")
    d = Path(directory)
    cpp, so = d / "kernels.cpp", d / "kernels.so"
    cpp.write_text(HOST_SHIM + HELPERS + sources)
    r = subprocess.run(["g++", opt, "-shared", "-fPIC", "-std=c++20", "-pthread", "-w", str(cpp),
                        "-o", str(so)], check=False, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"g++ could not build the emulated kernels:\n{r.stderr[:4000]}")
    return ctypes.CDLL(str(so))


def launch(lib, func: str, grid: int, block: int, arrays) -> None:
    """Run kernel `func` of `lib` over `grid` blocks of `block` real threads on numpy arrays."""
    if len(arrays) > MAX_ARGS:
        raise ValueError(f"the emulator passes at most {MAX_ARGS} arguments")
    ptrs = (ctypes.c_void_p * MAX_ARGS)(*[a.ctypes.data for a in arrays])
    fn = ctypes.cast(getattr(lib, func), ctypes.c_void_p)
    lib.wk_launch(fn, ctypes.c_uint(grid), ctypes.c_uint(block), ptrs)


def run_sequential(lib, func: str, arrays, block: int = 256) -> None:
    """Run a kernel without barriers (grid-stride loops) as one block of sequential threads:
    far cheaper than `launch` for the many small kernels of the primitive matrix."""
    fn = getattr(lib, func)
    ptrs = [ctypes.c_void_p(a.ctypes.data) for a in arrays]
    for t in range(block):
        lib.wk_set(0, t, 1)
        fn(*ptrs)


class DevArray(np.ndarray):
    """A numpy array posing as a cupy array (`.data.ptr`) on the emulated device."""

    @property
    def data(self):
        return type("Ptr", (), {"ptr": self.ctypes.data})()


class EmulatedCupy:
    """Just enough of cupy for `CudaGraph`: `RawModule` builds the module with `compile_host`
    and its functions run with `launch`; array functions are numpy's (results as `DevArray`).
    `modules` counts the modules built; `options` records the last compile options."""

    __name__ = "numpy"   # `ir.scalar.ArrayBuilder` then takes scipy.special
    ndarray = DevArray

    def __init__(self, directory, sms: int = 2):
        self.directory = Path(directory)
        self.modules = 0
        self.options = ()
        dev = type("Device", (), {"id": 0, "compute_capability": "90",
                                  "attributes": {"MultiProcessorCount": sms}})
        self.cuda = type("cuda", (), {"Device": dev})

    def __getattr__(self, name):
        return getattr(np, name)

    def asarray(self, a, *args, **kw):
        return np.asarray(a, *args, **kw).view(DevArray)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype).view(DevArray)

    def zeros(self, shape, dtype):
        return np.zeros(shape, dtype).view(DevArray)

    def ascontiguousarray(self, a):
        return np.ascontiguousarray(a).view(DevArray)

    def RawModule(self, code: str, options=()):  # cupy's name
        if not code.startswith(PRELUDE):
            raise ValueError("not a module of codegen.cuda_render")
        self.modules += 1
        self.options = tuple(options)
        d = self.directory / f"module{self.modules}"
        d.mkdir(parents=True, exist_ok=True)
        lib = compile_host(code[len(PRELUDE):], d, "-O0")

        class Module:
            def get_function(self, name):
                getattr(lib, name)   # AttributeError for a missing kernel, as cupy raises

                def run(grid, block, args):
                    launch(lib, name, grid[0], block[0], args)

                return run

        return Module()


__all__ = ["HOST_SHIM", "DevArray", "EmulatedCupy", "compile_host", "launch", "run_sequential"]

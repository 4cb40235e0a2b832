"""Which external symbols a compiled kernel needs, and whether the JIT can provide them.

LLVM lowers some operations to calls into runtime helpers, differently per target CPU
(`__truncdfhf2` for a double->half conversion, `__divti3` for 128-bit division, `fmaf` for
`llvm.fma` without FMA instructions...). MCJIT resolves external symbols only from the
process (libc, libm); a missing one aborts the whole process at finalization (`LLVM ERROR:
Symbol not found`) and cannot be caught. So every object is checked before it reaches the
engine: `elf_symbols(obj)` reads the ELF symbol table (the global symbols the object defines,
and those its relocations refer to but it does not define), `check_object(obj, ir)` raises
`UnresolvedSymbolError` for any undefined one that is not in `RUNTIME_SYMBOLS` or that the
process cannot resolve, and for an object that defines any global symbol but its kernel's.
`RUNTIME_SYMBOLS` is the allowed set: the libm functions the renderer declares, the ones LLVM
lowers intrinsics to on CPUs without the instruction (floor, ceil, trunc, roundeven, sqrt,
fma, fmod for `frem`, sincos for sin and cos of one value, ldexp, exp10), and the C library's
memset/memcpy/memmove (loop idioms); compiler-rt helpers are never allowed (their ABI differs
between libgcc versions even where one happens to be loaded). Objects in another format than
ELF (macOS, Windows) are checked by the declarations of the optimised IR instead.
Imports only llvmlite.
"""

from __future__ import annotations

import re
import struct

import llvmlite.binding as llvm

# libm functions of one or two float arguments the renderer declares (float32: name + "f")
LIBM = ("exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "asin", "acos",
        "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "atan2",
        "hypot")
# what LLVM lowers intrinsics and library idioms to on some CPUs (float32: name + "f")
_LOWERED = ("pow", "fmod", "floor", "ceil", "trunc", "round", "roundeven", "rint", "nearbyint",
            "sqrt", "fma", "fabs", "copysign", "fmin", "fmax", "fminimum", "fmaximum",
            "sincos", "ldexp", "exp10", "cbrt")
RUNTIME_SYMBOLS = frozenset(
    [n + s for n in LIBM + _LOWERED for s in ("", "f")] + ["memset", "memcpy", "memmove"])


class UnresolvedSymbolError(RuntimeError):
    """A kernel's object code needs a symbol the JIT does not provide (it would abort the
    process if it were finalized); the caller runs the kernel's ops eagerly instead."""


def elf_symbols(obj: bytes) -> tuple[set[str], set[str]] | None:
    """(global symbols defined, named symbols undefined) of an ELF64 little-endian object;
    None for anything else (or a malformed file)."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    try:
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                    for i in range(shnum)]
        defined: set[str] = set()
        undefined: set[str] = set()
        for sh in sections:
            if sh[1] != 2:   # SHT_SYMTAB
                continue
            off, size, entsize = sh[4], sh[5], sh[9] or 24
            stroff = sections[sh[6]][4]
            for i in range(entsize, size, entsize):   # entry 0 is the null symbol
                name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, off + i)
                if not name:
                    continue
                text = obj[stroff + name:obj.index(b"\0", stroff + name)].decode()
                if shndx == 0:   # SHN_UNDEF
                    undefined.add(text)
                elif info >> 4 != 0:   # not STB_LOCAL
                    defined.add(text)
        return defined, undefined
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return None


_DECLARE = re.compile(r'^declare [^@]*@"?([^"(]+)"?\(', re.M)


def declared_symbols(ir_text: str) -> set[str]:
    """External functions an LLVM IR module declares (intrinsics excluded)."""
    return {n for n in _DECLARE.findall(ir_text) if not n.startswith("llvm.")}


def undefined_symbols(obj: bytes, ir_text: str = "") -> set[str]:
    """The external symbols object code `obj` needs (for a non-ELF object: the functions its
    optimised IR `ir_text` declares)."""
    found = elf_symbols(obj)
    return declared_symbols(ir_text) if found is None else found[1]


def resolvable(name: str) -> bool:
    """True when the JIT can bind `name`: allowed and present in the process."""
    return name in RUNTIME_SYMBOLS and bool(llvm.address_of_symbol(name))


def check_object(obj: bytes, ir_text: str = "", what: str = "kernel",
                 exports=None) -> None:
    """Raise UnresolvedSymbolError when `obj` needs a symbol the JIT must not or cannot bind,
    or (for an ELF object, when `exports`, a symbol or a set of them, is given) defines any
    global symbol but `exports` (two objects defining one symbol in the engine would collide)."""
    found = elf_symbols(obj)
    expected = {exports} if isinstance(exports, str) else set(exports or ())
    if exports is not None and found is not None and found[0] != expected:
        raise UnresolvedSymbolError(
            f"codegen: {what} defines {sorted(found[0])}, expected just {sorted(expected)}")
    needed = declared_symbols(ir_text) if found is None else found[1]
    bad = sorted(n for n in needed if not resolvable(n))
    if bad:
        raise UnresolvedSymbolError(
            f"codegen: {what} needs {', '.join(bad)}, which the JIT does not provide on this "
            f"target ({llvm.get_process_triple()})")

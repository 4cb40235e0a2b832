"""The on-disk kernel cache: object code of compiled kernels, safe against a hostile directory.

`codegen.jit` asks here before running LLVM's optimiser and code generator. One entry is one
file `<entry>.wkc` in `cache_dir()` (`$WICK_CACHE_DIR`, default `~/.cache/wick/kernels`;
`WICK_CACHE_DIR=0` disables the cache), where `<entry>` is the first 32 hex digits of
`entry_key(target_id, ir)`. The file is

    MAGIC | u32 length of the record | record (JSON) | object code

and the record holds the full entry key and the object's sha256, both checked on load: an
entry copied or swapped from another kernel, a truncated or garbage file, an entry written by
another wick or llvmlite version is a miss (the kernel is rebuilt and the entry rewritten),
never trusted. Files are opened with `O_NOFOLLOW | O_NONBLOCK` and must be regular files owned
by this user (a symlink or a FIFO planted at an entry's path is a miss, never followed and
never waited on); new entries are written to a fresh `O_CREAT | O_EXCL | O_NOFOLLOW` temporary
file (mode 0600) and renamed into place, so a symlink at the entry's path is replaced, not
written through, and two processes writing one entry at once both leave a whole file. The
directory is created with mode 0700; object code is loaded only from a directory this user
owns that no other user can write to (and whose ancestors others can only write to when they
are sticky): otherwise a warning is issued once and the process runs without the disk cache.
Errors (a read-only or full disk) only cost a compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import threading
import warnings

MAGIC = b"WICKKC1\n"
SUFFIX = ".wkc"
_MAX_RECORD = 1 << 24
_MAX_ENTRY = 1 << 28
_warned: set = set()
_counter = [0]
_lock = threading.Lock()


def cache_dir() -> str | None:
    """The configured cache directory (not checked), or None when `WICK_CACHE_DIR=0`."""
    d = os.environ.get("WICK_CACHE_DIR")
    if d == "0":
        return None
    if not d:
        d = os.path.join(os.path.expanduser("~"), ".cache", "wick", "kernels")
    return d


def entry_key(target_id: str, ir_text: str) -> str:
    """The full key of a kernel's entry: sha256 of the target id and the kernel's IR."""
    return hashlib.sha256((target_id + "\n" + ir_text).encode()).hexdigest()


def _unsafe_reason(d: str) -> str | None:
    """Why object code must not be loaded from directory `d` (None when it is safe)."""
    uid = os.getuid()
    st = os.stat(d)
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by this user ({uid})"
    if st.st_mode & 0o022:
        return f"other users can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    parent = os.path.realpath(d)
    while True:
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up
        pst = os.stat(parent)
        if pst.st_uid not in (uid, 0):
            return f"its ancestor {parent} is owned by uid {pst.st_uid}"
        if pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX:
            return f"other users can write to its ancestor {parent} (not sticky)"


def usable_dir() -> str | None:
    """The cache directory, created (mode 0700) if missing, or None when disabled, not
    creatable or unsafe (then a `warnings.warn` once per directory says why)."""
    d = cache_dir()
    if d is None:
        return None
    try:
        if not os.path.isdir(d):
            parent = os.path.dirname(os.path.abspath(d))
            os.makedirs(parent, exist_ok=True)
            os.mkdir(d, 0o700)
        reason = _unsafe_reason(d)
    except OSError:
        return None  # cannot create or inspect it: run without the disk cache
    if reason is None:
        return d
    with _lock:
        if d not in _warned:
            _warned.add(d)
            warnings.warn(f"wick: not using the kernel cache directory {d!r}: {reason}; "
                          "running without the disk cache", RuntimeWarning, stacklevel=3)
    return None


def _path(d: str, key: str) -> str:
    return os.path.join(d, key[:32] + SUFFIX)


def _read_entry(path: str) -> bytes | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()
                or st.st_size > _MAX_ENTRY):
            return None
        chunks, left = [], st.st_size
        while left > 0:
            b = os.read(fd, left)
            if not b:
                return None  # shrank while reading
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def load(key: str, symbol_suffix: str = "") -> tuple[dict, bytes] | None:
    """(record, object code) of the entry for `key`, or None when missing or untrustworthy:
    unreadable, not a regular file of this user's, malformed, for another key, the object's
    hash wrong, or its record's `symbol` not a string ending in `symbol_suffix`."""
    d = usable_dir()
    if d is None:
        return None
    data = _read_entry(_path(d, key))
    if data is None or not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        return None
    (n,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    if n > _MAX_RECORD or start + n > len(data):
        return None
    try:
        rec = json.loads(data[start:start + n].decode())
    except (ValueError, UnicodeDecodeError):
        return None
    obj = data[start + n:]
    if (not isinstance(rec, dict) or rec.get("key") != key
            or rec.get("sha256") != hashlib.sha256(obj).hexdigest()
            or not isinstance(rec.get("symbol"), str)
            or not rec["symbol"].endswith(symbol_suffix)):
        return None
    return rec, obj


def store(key: str, rec: dict, obj: bytes) -> None:
    """Write the entry for `key` (record `rec` plus object code `obj`) atomically; any error
    (read-only or full disk, an unsafe directory) leaves the cache as it was."""
    d = usable_dir()
    if d is None:
        return
    body = json.dumps({**rec, "key": key, "sha256": hashlib.sha256(obj).hexdigest()}).encode()
    data = MAGIC + struct.pack("<I", len(body)) + body + obj
    with _lock:
        _counter[0] += 1
        n = _counter[0]
    tmp = os.path.join(d, f".{key[:32]}.{os.getpid()}.{threading.get_ident()}.{n}.tmp")
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
             | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(tmp, flags, 0o600)
    except OSError:
        return
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, _path(d, key))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass

"""`WICK_LOGS=graph,breaks,recompiles,guards,code`: capture's logging, quiet by default.

Each kind prints to stderr as the event happens (a graph captured, a graph break, a
recompile and its failing guard, an entry's guard closure, a transformed function's
pseudo-source), prefixed `[wick:<kind>]`. `WICK_LOGS=all` turns every kind on. The variable is
read at each event (not on the hot path: events happen on cache misses only), so tests and
users may set it at any time. Touches `os`, `sys`.
"""

from __future__ import annotations

import os
import sys

KINDS = ("graph", "breaks", "recompiles", "guards", "code")


def enabled(kind: str) -> bool:
    value = os.environ.get("WICK_LOGS", "")
    if not value:
        return False
    names = {v.strip() for v in value.split(",")}
    return kind in names or "all" in names


def log(kind: str, message: str) -> None:
    """Print `message` under `kind` when WICK_LOGS asks for it."""
    if enabled(kind):
        for line in str(message).splitlines() or [""]:
            print(f"[wick:{kind}] {line}", file=sys.stderr)

"""`eager.compiler` (`torch.compiler`): the public helpers around `eager.compile`, delegating
to `capture` (imported on first use to keep `ir <- eager <- capture`): `reset`, `disable`,
`list_backends`, and the predicates `is_compiling` / `is_dynamo_compiling` (False when run
eagerly, as in PyTorch). `allow_in_graph`, `assume_constant_result` and
`cudagraph_mark_step_begin` are hints wick's capture does not need: they return their
argument or do nothing. Semantics: the torch.compiler documentation.
"""

from __future__ import annotations

__all__ = ["allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "disable",
           "is_compiling", "is_dynamo_compiling", "list_backends", "reset"]


def reset() -> None:
    """Forget every compiled function's cache (`torch.compiler.reset`)."""
    import capture  # lazy: capture imports eager (ir <- eager <- capture)

    capture.reset()


def disable(fn=None, recursive=True, *, reason=None):
    """`fn` (or a decorator) that always runs eagerly, never captured."""
    import capture  # lazy: capture imports eager (ir <- eager <- capture)

    return capture.disable(fn)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names `eager.compile` takes."""
    from capture.backends import BACKENDS  # lazy: capture imports eager

    return sorted(BACKENDS)


def is_compiling() -> bool:
    """Whether this code is being traced by the compiler (False when it runs eagerly)."""
    return False


is_dynamo_compiling = is_compiling


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: wick records no CUDA graphs."""

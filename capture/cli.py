"""The `wick` command: run a script and dump every stage of every function it compiled.

    wick dump SCRIPT [--stages bytecode,graph,guards,code,fusion,kernels,llvm]
                     [--format text|dot|svg] [--function NAME] [-- script args]
    wick explain SCRIPT [-- script args]      # every compiled function's report
    wick run -n N SCRIPT [args]               # N processes over MPI (eager.distributed.run)

`code` is the transformed function of an entry that resumes after a graph break (readable
pseudo-source, then the generated break/resume/loop functions' bytecode); `--format dot|svg`
draws the graph stage with `ir.drawing.render` (fusion groups coloured when the backend
compiled kernels), text otherwise. Resume functions and callees compiled after a break are
dumped under their parent.

The script runs as `__main__` (`runpy.run_path`, `sys.argv` set to its own arguments); the
dump is printed afterwards from `capture.registry.COMPILED`. Touches `capture` only.
"""

from __future__ import annotations

import argparse
import dis
import os
import runpy
import sys

from . import registry

STAGES = ("bytecode", "graph", "guards", "code", "fusion", "kernels", "llvm", "cuda")


def _header(title: str, char: str = "-") -> str:
    return f"{char * 8} {title} {char * max(4, 72 - len(title))}"


def _run_script(script: str, script_args: list) -> int:
    argv, path = sys.argv, list(sys.path)
    sys.argv = [script] + script_args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv, sys.path[:] = argv, path
    return 0


def render_graph(graph, compiled, fmt: str) -> str:
    """The graph as text, or drawn by `ir.drawing.render` (dot/svg) when it exists."""
    if fmt == "text":
        return str(graph)
    import ir

    drawing = getattr(ir, "drawing", None)
    if drawing is None or not hasattr(drawing, "render"):
        return str(graph)
    groups = {}
    for k, kernel in enumerate(getattr(compiled, "kernels", None) or []):
        for node in getattr(kernel, "nodes", ()):
            groups[getattr(node, "name", str(node))] = k
    return drawing.render(graph, fmt=fmt, groups=groups or None)


def dump_function(cf, stages, out, fmt: str = "text") -> None:
    from .compiler import code_text

    code = cf.code
    print(_header(f"function {cf.name} ({code.co_filename}:{code.co_firstlineno})", "="),
          file=out)
    if "bytecode" in stages:
        print(_header("bytecode"), file=out)
        print(dis.Bytecode(code).dis(), file=out)
    for i, e in enumerate(cf.entries):
        kind = {"graph": "one compiled graph", "resume": "a graph, then a graph break that "
                "resumes"}.get(e.mode, "runs eagerly")
        print(_header(f"cache entry {i}: {kind}", "~"), file=out)
        if e.recompile_reason:
            print(f"recompiled because: {e.recompile_reason}", file=out)
        if "guards" in stages:
            print(_header(f"guards (entry {i})"), file=out)
            print(e.guards_text, file=out)
        if e.break_reason is not None:
            print(_header(f"graph break (entry {i})"), file=out)
            print(str(e.break_reason), file=out)
        if "graph" in stages and e.graph is not None:
            print(_header(f"graph (entry {i})"), file=out)
            print(render_graph(e.graph, e.compiled, fmt), file=out)
        if "code" in stages and e.mode != "eager":
            print(_header(f"code (entry {i})"), file=out)
            if e.continuation is not None:
                print(code_text(cf, e, i), file=out)
            else:
                print(f"def {cf.fn.__name__}(...):  # entry {i}: one graph, no break\n"
                      f"    return graph_{i}(*inputs)", file=out)
        for stage in ("fusion", "kernels", "llvm", "cuda"):
            if stage not in stages or e.graph is None:
                continue
            print(_header(f"{stage} (entry {i})"), file=out)
            if e.compiled is None:
                print("(no compiled graph: this entry runs through eager autograd)", file=out)
                continue
            dump = getattr(e.compiled, "dump", None)
            try:
                text = dump(stage) if dump is not None else "(backend has no such stage)"
            except Exception as err:  # a stage the backend does not know  # noqa: BLE001
                text = f"(backend has no such stage: {err})"
            print(text, file=out)
    for child in cf.children:
        dump_function(child, stages, out, fmt)


def explain_function(cf, out) -> None:
    from .explain import ExplainOutput

    print(_header(f"function {cf.name}", "="), file=out)
    print(str(ExplainOutput(cf, None)), file=out)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:  # `wick run -n N script.py`: the launcher lives in eager.distributed
        from eager.distributed import run

        return run.main(argv[1:])
    script_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, script_args = argv[:i], argv[i + 1:]
    parser = argparse.ArgumentParser(prog="wick", description="Dump what capture compiled.")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="run SCRIPT and print every stage of each compiled function")
    d.add_argument("script")
    d.add_argument("--stages", default=",".join(STAGES),
                   help=f"comma-separated, from {','.join(STAGES)} (default: all)")
    d.add_argument("--function", default=None, help="only functions with this name")
    d.add_argument("--format", default="text", choices=("text", "dot", "svg"),
                   help="how the graph stage is printed")
    e = sub.add_parser("explain", help="run SCRIPT and print graph-break and recompile reasons")
    e.add_argument("script")
    e.add_argument("--function", default=None)
    args = parser.parse_args(argv)
    stages = set()
    if args.command == "dump":
        stages = {s.strip() for s in args.stages.split(",") if s.strip()}
        unknown = stages - set(STAGES)
        if unknown:
            parser.error(f"unknown stage(s) {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(STAGES)}")
    registry.keep = True  # the dump comes after the script: keep what it compiled alive
    rc = _run_script(args.script, script_args)
    out = sys.stdout
    out.flush()
    for cf in registry.COMPILED:
        if args.function and args.function not in (cf.name, cf.fn.__name__):
            continue
        if args.command == "dump":
            dump_function(cf, stages, out, args.format)
        else:
            explain_function(cf, out)
    if not registry.COMPILED:
        print("(no function was compiled while the script ran)", file=out)
    return rc

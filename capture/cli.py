"""The `wick` command: run a script and dump every stage of every function it compiled.

    wick dump SCRIPT [--stages bytecode,graph,guards,fusion,kernels,llvm] [--function NAME]
                     [-- script args]
    wick explain SCRIPT [-- script args]      # graph-break and recompile reasons only

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

STAGES = ("bytecode", "graph", "guards", "fusion", "kernels", "llvm")


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


def dump_function(cf, stages, out) -> None:
    code = cf.code
    print(_header(f"function {cf.name} ({code.co_filename}:{code.co_firstlineno})", "="),
          file=out)
    if "bytecode" in stages:
        print(_header("bytecode"), file=out)
        print(dis.Bytecode(code).dis(), file=out)
    for i, e in enumerate(cf.entries):
        print(_header(f"entry {i}: {'graph' if e.mode == 'graph' else 'runs eagerly'}"),
              file=out)
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
            print(str(e.graph), file=out)
        for stage in ("fusion", "kernels", "llvm"):
            if stage not in stages or e.graph is None:
                continue
            print(_header(f"{stage} (entry {i})"), file=out)
            if e.compiled is None:
                print("(no compiled graph: this entry runs through eager autograd)", file=out)
                continue
            dump = getattr(e.compiled, "dump", None)
            try:
                text = dump(stage) if dump is not None else "(backend has no such stage)"
            except Exception as err:  # a stage the backend does not know
                text = f"(backend has no such stage: {err})"
            print(text, file=out)


def explain_function(cf, out) -> None:
    print(_header(f"function {cf.name}", "="), file=out)
    graphs = sum(e.mode == "graph" for e in cf.entries)
    print(f"{len(cf.entries)} cache entries, {graphs} compiled graph(s)", file=out)
    for r in cf.break_reasons:
        print(f"graph break: {r}", file=out)
    for r in cf.recompile_reasons:
        print(f"recompile: {r}", file=out)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
    rc = _run_script(args.script, script_args)
    out = sys.stdout
    out.flush()
    for cf in registry.COMPILED:
        if args.function and args.function not in (cf.name, cf.fn.__name__):
            continue
        if args.command == "dump":
            dump_function(cf, stages, out)
        else:
            explain_function(cf, out)
    if not registry.COMPILED:
        print("(no function was compiled while the script ran)", file=out)
    return rc

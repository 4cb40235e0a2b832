"""Import cycles among eager's modules, read from their module-level imports (function-level ones
are lazy and checked by test_code_limits).

Issue 15 found an 18-file import circle through eager/autograd, tensor and dispatch, hidden by
function-level imports. It is open: the layer below keeps a registration slot that the layer
above fills when it is imported (`engine.NAMESPACES`, `nodes.VIEWS`, `forward_ad.DISPATCH`,
`forward_ad.ALIAS`). This test keeps the autograd core out of every cycle, and lists the cycles
still left elsewhere so that the list can only shrink: a new cycle fails, and so does a listed one
that is gone (delete its entry).
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import networkx as nx

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Cycles left (strongly connected module sets), each with why it is still there: none since the
# eighth session (nn.functional a re-export hub, rnn_steps.py, utils.data.sampler, the array API
# namespace imported on first use). A new cycle needs an entry here and a reason.
KNOWN_CYCLES: dict = {}

CORE = ("eager.autograd", "eager.tensor", "eager.dispatch", "eager.fastpaths")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _targets(module: str, is_package: bool, node, modules: set) -> list:
    """The eager modules one module-level import statement loads (a package is counted only
    when a name imported from it is not one of its submodules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
    rest = any(f"{target}.{a.name}" not in modules for a in node.names)
    return subs + ([target] if rest and target in modules else [])


def _graph() -> nx.DiGraph:
    paths = {_module_name(p): p for p in (ROOT / "eager").rglob("*.py")}
    modules = set(paths)
    g = nx.DiGraph()
    for module, path in paths.items():
        tree = ast.parse(path.read_text())
        for stmt in tree.body:  # (module level, including inside if/try blocks)
            nodes = ast.walk(stmt) if isinstance(stmt, (ast.If, ast.Try)) else (stmt,)
            for node in nodes:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for t in _targets(module, path.name == "__init__.py", node, modules):
                        if t != module:
                            g.add_edge(module, t)
    return g


def _cycles(g: nx.DiGraph) -> set:
    return {frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 1}


def test_the_autograd_core_is_in_no_import_cycle():
    for cycle in _cycles(_graph()):
        core = sorted(m for m in cycle if m.startswith(CORE))
        assert not core, f"import cycle through the autograd core: {sorted(cycle)}"


def test_no_new_import_cycles_and_listed_ones_are_still_there():
    found = _cycles(_graph())
    new = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert not new, f"new import cycles in eager (open them, or list them with a reason): {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"these listed cycles changed or are gone: update KNOWN_CYCLES: {gone}"


def test_the_cycle_check_can_fail():
    g = nx.DiGraph([("eager.tensor", "eager.autograd.engine"),
                    ("eager.autograd.engine", "eager.tensor")])
    assert _cycles(g) == {frozenset({"eager.tensor", "eager.autograd.engine"})}


def test_array_api_namespace_imported_on_first_use():
    """`import eager` does not import the array API namespace (it is built on eager's names);
    `x.__array_namespace__()`, `eager.array_api` and `import eager.array_api` reach the same
    module afterwards, and unary plus is the tensor itself as torch's (`+x is x`)."""
    code = (
        "import sys, eager\n"
        "assert 'eager.array_api' not in sys.modules\n"
        "x = eager.ones(2)\n"
        "assert (+x) is x\n"
        "xp = x.__array_namespace__()\n"
        "import eager.array_api as xp2\n"
        "assert xp is xp2 is eager.array_api is eager.__array_namespace__()\n"
        "assert xp.asarray([1.0]).to_device('cpu').shape == (1,)\n"
        "try:\n"
        "    +eager.ones(2, dtype=eager.bool)\n"
        "    raise SystemExit('bool unary plus did not raise')\n"
        "except RuntimeError:\n"
        "    pass\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)

"""A generator made and seeded in the captured frame: `g = torch.Generator(device="cpu");
g.manual_seed(s)` or `torch.Generator().manual_seed(s)`, then `randn(..., generator=g)`,
`randperm(n, generator=g)` (augmentation noise, a fixed shuffle): in the graph, no break.

The generator is a `LocalGeneratorVariable` over a template `eager.random.Generator` seeded at
capture time. Its state in the graph is a fresh source on every call (the state words of a
generator seeded with `s`, `randomness.seeded_state(s)`, a graph input), so each call draws as
eager's new generator does; draws chain through its state as for any generator
(`randomness._draw`), and nothing is committed back: the object dies with the frame. A second
`manual_seed` starts a new state. Breaks (eager runs the call): an unseeded local generator
(eager seeds it from entropy), a seed that is not a constant int, a device other than the CPU,
any other method (`get_state`, `seed`, ...). Touches `eager.random`, `capture`.
"""

from __future__ import annotations

from eager import random as ER

from .variables import TensorVariable, VariableTracker


class LocalGeneratorVariable(VariableTracker):
    """`torch.Generator()` made by the code: `value` is the template (seeded or not). Not an
    `ObjectVariable`: it cannot be rebuilt after the graph (its state there is the graph's),
    so a generator that leaves the frame or lives across a break runs the frame eagerly."""

    def __init__(self):
        self.value = ER.Generator()
        self.source = None
        self.seed = None

    def describe(self) -> str:
        return "a torch.Generator made by the code"


def generator_rule(tx, cls, args, kwargs):
    """`torch.Generator(device="cpu")` in the frame."""
    from .vocabulary import _const, no_graph_form

    dev = args[0] if args else kwargs.get("device")
    dev = None if dev is None else _const(tx, cls, dev)
    if len(args) + len(kwargs) > 1 or dev is not None and str(dev) != "cpu":
        raise no_graph_form(tx, cls, f"device={dev!r}")
    return LocalGeneratorVariable()


def manual_seed_rule(tx, fn, args, kwargs):
    """`g.manual_seed(s)` on a generator the code made, with a constant int seed: its state
    from here on is the seeded one (module doc); returns `g`, as eagerly."""
    from .randomness import seeded_state
    from .vocabulary import _const, no_graph_form

    g = args[0] if args else None
    if not isinstance(g, LocalGeneratorVariable) or len(args) + len(kwargs) != 2:
        raise no_graph_form(tx, fn, "a generator that the code did not make")
    seed = _const(tx, fn, args[1] if len(args) > 1 else kwargs.get("seed"))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise no_graph_form(tx, fn, f"the seed {seed!r} is not an int")
    out = tx.out
    g.value = template = ER.Generator().manual_seed(seed)
    template._wick_local = True  # (its draws commit nothing: `randomness._draw`)
    g.seed = seed
    helper = out.guards.name_for(seeded_state, "___seeded_state")
    source = f"({helper}({seed}), {len(out.input_sources)})[0]"
    value = seeded_state(seed)
    node = out.graph.placeholder(f"local_seed_state_{len(out.input_sources)}", value.meta)
    out.input_sources.append(source)
    out.tensor_shapes[source] = tuple(value.meta.shape)
    state = TensorVariable(node, value.meta, False, source)
    out.by_source[source] = state
    out.__dict__.setdefault("rng_states", {})[id(template)] = (state, None)
    return g


def template(tx, fn, v):
    """The template generator of local generator tracker `v` for a draw (a break when it is
    unseeded), or None when `v` is not one."""
    from .vocabulary import no_graph_form

    if not isinstance(v, LocalGeneratorVariable):
        return None
    if v.seed is None:
        raise no_graph_form(tx, fn, "an unseeded torch.Generator() draws from fresh entropy")
    return v.value


def register(table: dict, keep: list) -> None:
    """The capture rules of `eager.Generator` and its `manual_seed` in `vocabulary`'s table."""
    for obj, name, rule in ((ER.Generator, "eager.Generator", generator_rule),
                            (ER.Generator.manual_seed, "eager.Generator.manual_seed",
                             manual_seed_rule)):
        keep.append(obj)
        table[id(obj)] = (name, rule)



def get_attr(tx, g: LocalGeneratorVariable, name: str):
    """`g.manual_seed` (its rule, bound to `g`); any other attribute breaks."""
    from .variables import FunctionVariable

    if name == "manual_seed":
        return FunctionVariable(ER.Generator.manual_seed, None, self_var=g)
    raise tx.unsupported(f"attribute {name!r} of a torch.Generator made by the code")

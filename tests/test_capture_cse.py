"""Compiled forward and backward graphs compute each value once: a training batch norm's
decomposition computes the batch statistics for its output and again for the running
statistics (and its backward recomputes them); common-subexpression elimination after
decomposition (`capture.aot`, `codegen.compiled`) leaves one of each. Checked on the graphs a
compiled training step runs, and against eager for values and running statistics.
"""

from __future__ import annotations

import numpy as np

import capture
import eager as torch
import eager.nn.functional as F
from eager import nn
from ir.passes.cse import freeze


def _graphs(cf) -> list:
    out = []
    for fn in cf.__wick_compiled__.all_functions():
        for e in fn.entries:
            aot = getattr(e.runner, "aot", None) if e.runner is not None else None
            if aot is None:
                continue
            for plan in aot.plans.values():
                out.append(plan.fwd.graph)
                out += [b.graph for b, _ in plan.bwds.values()]
    return out


def _repeats(graph) -> list:
    seen, dup = {}, []
    for n in graph.nodes:
        if n.op != "call_function" or n.is_impure():
            continue
        key = (id(n.target), freeze(n.args), freeze(n.kwargs))
        if key in seen:
            dup.append((seen[key], n))
        seen[key] = n
    return dup


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3, padding=1), lib.nn.BatchNorm2d(4),
                             lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(4 * 5 * 5, 3))


def test_batch_norm_training_step_graphs_compute_each_value_once():
    m, ref = _model(torch), _model(torch)
    ref.load_state_dict(m.state_dict())
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((6, 2, 5, 5)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 3, 6))

    def loss_fn(model, x, y):
        return F.cross_entropy(model(x), y)

    cf = capture.compile(loss_fn)
    for _ in range(3):
        got, want = cf(m, x, y), loss_fn(ref, x, y)
        got.backward()
        want.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
    graphs = _graphs(cf)
    assert len(graphs) >= 2  # a forward and a backward
    for g in graphs:
        assert _repeats(g) == [], g.name
    for (name, a), b in zip(m.state_dict().items(), ref.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)

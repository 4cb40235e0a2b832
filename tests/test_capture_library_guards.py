"""The library-guard policy (capture/library.py) and the guards that stay per call: after each
change below a compiled call recompiles or gives eager's result (compared with the same call
run eagerly), and the library's own terms cost one version check per hit."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

import capture
import eager
from capture import library
from eager.nn import losses

nn, F = eager.nn, eager.nn.functional


def _mlp():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _check(c, f, *args):
    _same(c(*args), f(*args))


@pytest.fixture()
def setup():
    model = _mlp()
    x, y = eager.randn(5, 6), eager.randint(0, 3, (5,))

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)

    c = capture.compile(loss_fn)
    _check(c, loss_fn, x, y)
    _check(c, loss_fn, x, y)
    return model, loss_fn, c, x, y


def test_library_terms_are_one_check(setup):
    c = setup[2]
    guards = c.__wick_compiled__.entries[0].guards
    condition = guards.condition
    lib, _ = library.split(list(guards.terms), guards.ns, guards._taken)
    assert lib, "the MLP's guards read eager's module globals"
    assert "___librevalidate" in condition
    assert "G_eager_nn_module" not in condition.replace("___librevalidate", "")
    assert "__defaults__[" not in condition  # (one identity term per function)


def test_monkeypatched_eager_function_used_inside_eager(setup):
    _, loss_fn, c, x, y = setup
    with mock.patch.object(eager.nn.functional, "gelu", lambda t, approximate="none": t * 2):
        _check(c, loss_fn, x, y)  # nn.GELU.forward reads F.gelu from eager's own globals
    _check(c, loss_fn, x, y)


def test_monkeypatched_private_eager_helper(setup):
    _, loss_fn, c, x, y = setup

    before = len(c.__wick_compiled__.entries)
    with mock.patch.object(losses, "_cross_entropy",  # (2-D logits' whole op)
                           lambda t, y, ignore, red: F.nll_loss(F.log_softmax(t, 1) * 0.5, y,
                                                                ignore_index=ignore,
                                                                reduction=red)):
        _check(c, loss_fn, x, y)
        assert len(c.__wick_compiled__.entries) == before + 1
    _check(c, loss_fn, x, y)


def test_unrelated_patch_revalidates_without_recompiling(setup):
    _, loss_fn, c, x, y = setup
    n = len(c.__wick_compiled__.entries)
    eager.nn.functional._w1_unrelated = 1  # a write to a watched module: the version moves
    del eager.nn.functional._w1_unrelated
    _check(c, loss_fn, x, y)
    _check(c, loss_fn, x, y)
    assert len(c.__wick_compiled__.entries) == n


def test_user_read_of_patched_function(setup):
    _, loss_fn, c, x, y = setup
    ce = F.cross_entropy
    with mock.patch.object(F, "cross_entropy", lambda a, b: ce(a, b) + 1.0):
        _check(c, loss_fn, x, y)
    _check(c, loss_fn, x, y)


def test_function_defaults_changed():
    x = eager.randn(4, 3)

    def f(x, scale=2.0, shift=None):
        return x * scale if shift is None else x * scale + shift

    c = capture.compile(f)
    _check(c, f, x)
    f.__defaults__ = (3.0, None)
    _check(c, f, x)
    f.__defaults__ = (3.0, 1.0)
    _check(c, f, x)


def test_module_tree_changes(setup):
    model, loss_fn, c, x, y = setup
    model[2] = nn.ReLU()  # a submodule replaced
    _check(c, loss_fn, x, y)
    model[1].eps = 0.5  # an attribute forward reads
    _check(c, loss_fn, x, y)
    with eager.no_grad():
        model[0].weight = nn.Parameter(eager.randn(8, 6))  # a parameter replaced
    _check(c, loss_fn, x, y)
    model[3].bias = None  # a parameter removed
    _check(c, loss_fn, x, y)
    model[3].register_parameter("bias", nn.Parameter(eager.randn(3)))  # and added back
    _check(c, loss_fn, x, y)


def test_train_eval_and_requires_grad():
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    ref = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    ref.load_state_dict(model.state_dict())
    x = eager.randn(5, 6)
    c = capture.compile(model)
    for mode in ("train", "eval", "train"):
        getattr(model, mode)()
        getattr(ref, mode)()
        _same(c(x), ref(x))
    model[0].weight.requires_grad_(False)
    ref[0].weight.requires_grad_(False)
    out = c(x)
    out.sum().backward()
    ref(x).sum().backward()
    assert model[0].weight.grad is None and ref[0].weight.grad is None
    _same(model[3].weight.grad, ref[3].weight.grad)


def test_input_metadata_changes(setup):
    model, loss_fn, c, x, y = setup
    _check(c, loss_fn, eager.randn(7, 6), eager.randint(0, 3, (7,)))  # shape
    xt = eager.randn(6, 5).t()  # strides (a transposed view)
    _check(c, loss_fn, xt, y)
    model.double()
    _check(c, loss_fn, x.double(), y)  # dtype of the input and of the parameters
    model.float()
    _check(c, loss_fn, x.requires_grad_(True), y)  # requires_grad of an input


def test_builtin_shadowed_in_user_globals():
    x = eager.randn(3)
    g = {"eager": eager}
    exec("def f(x):\n    return x * len([1, 2])\n", g)  # noqa: S102
    c = capture.compile(g["f"])
    _check(c, g["f"], x)
    g["len"] = lambda v: 5
    _check(c, g["f"], x)


def test_forward_overridden_on_instance_and_class(setup):
    model, loss_fn, c, x, y = setup
    with mock.patch.object(nn.GELU, "forward", lambda self, t: t * 3):  # a library class
        _check(c, loss_fn, x, y)
    _check(c, loss_fn, x, y)
    model[1].forward = lambda t: t * 0.5  # an instance attribute shadows the method
    _check(c, loss_fn, x, y)
    del model[1].forward
    _check(c, loss_fn, x, y)

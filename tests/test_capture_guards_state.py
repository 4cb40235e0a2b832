"""Guards on module state stay sound while their checks are made cheap (`capture.moduleguards`
reads module attributes from the instance dict; cache hits run a generated frame): every change
that could make a cached graph wrong - a parameter replaced, requires_grad flipped, a dtype or
shape change, train/eval, hooks added or removed, an attribute rebound, written behind
`__setattr__` or deleted - gives eager's results (outputs and gradients) on the next call."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from eager.nn.module_hooks import register_module_forward_hook
from eager.nn.utils.stateless import functional_call

nn, F = eager.nn, eager.nn.functional


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 5)
        self.norm = nn.LayerNorm(5)
        self.bn = nn.BatchNorm1d(5)
        self.drop = nn.Dropout(0.0)
        self.act = nn.ReLU()
        self.scale = 2.0

    def forward(self, x):
        return self.act(self.drop(self.bn(self.norm(self.lin(x))))) * self.scale


def _pair():
    """Two identical nets (one run eagerly, one compiled) and an input."""
    eager.manual_seed(0)
    a = Net()
    b = Net()
    b.load_state_dict(a.state_dict())
    return a, b, capture.compile(b), eager.randn(8, 6)


def _check(a, b, c, x, grads=True):
    """Compiled `b` and eager `a` agree: outputs, parameter grads, BatchNorm statistics."""
    for m in (a, b):
        m.zero_grad()
    ya, yb = a(x), c(x)
    np.testing.assert_allclose(yb.detach().numpy(), ya.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert yb.requires_grad == ya.requires_grad
    assert yb.dtype == ya.dtype
    if grads and ya.requires_grad:
        ya.sum().backward()
        yb.sum().backward()
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert (pa.grad is None) == (pb.grad is None), name
        if pa.grad is not None:
            np.testing.assert_allclose(pb.grad.numpy(), pa.grad.numpy(), rtol=1e-4,
                                       atol=1e-5, err_msg=name)
    for (name, ba), (_, bb) in zip(a.named_buffers(), b.named_buffers()):
        np.testing.assert_allclose(bb.numpy(), ba.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def _new_param(p, shape=None):
    eager.manual_seed(1)
    return nn.Parameter(eager.randn(*(shape or p.shape)))



CHANGES = {
    "parameter replaced": lambda m: setattr(m.lin, "weight", _new_param(m.lin.weight)),
    "parameter replaced, new shape": lambda m: (
        setattr(m.lin, "bias", _new_param(None, (1,)))),
    "bias removed": lambda m: setattr(m.lin, "bias", None),
    "requires_grad off": lambda m: m.lin.weight.requires_grad_(False),
    "requires_grad slot off": lambda m: setattr(m.norm.bias, "requires_grad", False),
    "dtype": lambda m: m.double(),
    "values through .data": lambda m: setattr(m.norm.weight, "data", eager.ones(5) * 3),
    "shape through .data": lambda m: setattr(m.lin.bias, "data", eager.ones(1) * 3),
    "buffer dtype through .data": lambda m: setattr(m.bn.running_var, "data",
                                                    eager.ones(5, dtype=eager.float64)),
    "upstream dtype through .data": lambda m: setattr(m.norm.weight, "data",
                                                      eager.ones(5, dtype=eager.float64)),
    "eval": lambda m: m.eval(),
    "training behind __setattr__": lambda m: object.__setattr__(m.bn, "training", False),
    "forward hook": lambda m: m.act.register_forward_hook(lambda mod, i, o: o * 3),
    "forward pre-hook": lambda m: m.lin.register_forward_pre_hook(lambda mod, i: (i[0] + 1,)),
    "child rebound": lambda m: setattr(m, "act", nn.Tanh()),
    "attribute rebound": lambda m: setattr(m, "scale", 0.5),
    "attribute written into __dict__": lambda m: m.__dict__.__setitem__("scale", -1.0),
    "eps rebound": lambda m: setattr(m.norm, "eps", 0.5),
    "dropout p": lambda m: setattr(m.drop, "p", 1.0),
    "instance forward": lambda m: setattr(m.act, "forward", lambda x: x - 1),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_state_change_after_hits_gives_eager_results(name):
    capture.reset()
    a, b, c, x = _pair()
    for _ in range(3):  # capture, then cache hits
        _check(a, b, c, x)
    for m in (a, b):
        CHANGES[name](m)
    if name.startswith("dtype"):
        x = x.double()
    for _ in range(2):
        _check(a, b, c, x)


def test_hook_removed_and_global_hook():
    capture.reset()
    a, b, c, x = _pair()
    _check(a, b, c, x)
    handles = [m.act.register_forward_hook(lambda mod, i, o: o + 1) for m in (a, b)]
    _check(a, b, c, x)
    for h in handles:
        h.remove()
    _check(a, b, c, x)
    _check(a, b, c, x)
    g = register_module_forward_hook(lambda mod, i, o: o * 2 if mod is b.act or
                                     mod is a.act else None)
    try:
        _check(a, b, c, x)
    finally:
        g.remove()
    _check(a, b, c, x)


def test_attribute_deleted_then_found_on_the_class():
    """A guard reading an instance attribute from the instance dict fails once the attribute
    lives on the class instead (the recapture reads it there)."""

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 2.0

        def forward(self, x):
            return x * self.k

    capture.reset()
    m = Scale()
    c = capture.compile(m)
    x = eager.randn(3)
    for _ in range(2):
        np.testing.assert_allclose(c(x).numpy(), (x * 2.0).numpy())
    del m.k
    Scale.k = 5.0
    for _ in range(2):
        np.testing.assert_allclose(c(x).numpy(), (x * 5.0).numpy())


def test_functional_call_swaps_parameters_behind_setattr():
    """`functional_call` writes the swapped tensors into the instance dicts directly."""
    capture.reset()
    a, b, c, x = _pair()
    _check(a, b, c, x)
    _check(a, b, c, x)
    eager.manual_seed(3)
    swap = {"lin.weight": eager.randn(5, 6), "norm.bias": eager.randn(5) + 1}
    for _ in range(2):
        want = functional_call(a, swap, (x,))
        got = functional_call(c, {"_orig_mod." + k: v for k, v in swap.items()}, (x,))
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    _check(a, b, c, x)


def _hit_loss(c, x):
    for _ in range(3):  # (the third call is a hit whose node the generated builder made)
        out = c(x).sum()
    return out


def test_saved_parameter_modified_in_place_after_a_hit_raises_as_eager():
    capture.reset()
    a, b, c, x = _pair()
    for m, f in ((a, a), (b, c)):
        loss = _hit_loss(f, x)
        with eager.no_grad():
            m.norm.weight.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_retain_graph_and_freed_saved_values_after_a_hit():
    capture.reset()
    a, b, c, x = _pair()
    la, lb = _hit_loss(a, x), _hit_loss(c, x)
    for loss in (la, lb):
        loss.backward(retain_graph=True)
        loss.backward()
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_allclose(pb.grad.numpy(), pa.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
    for loss in (la, lb):
        with pytest.raises(RuntimeError):
            loss.backward()
    lb = _hit_loss(c, x)
    node = lb.grad_fn
    while node is not None and not hasattr(node, "plan"):  # (the compiled graph's node)
        node = next((f for f, _ in node.next_functions if f is not None), None)
    assert node is not None
    saved = node.saved_tensors
    assert saved and all(t is None or isinstance(t, eager.Tensor) for t in saved)
    lb.backward()
    with pytest.raises(RuntimeError):
        node.saved_tensors  # noqa: B018


def test_parameter_dtype_through_data_after_hits():
    """A parameter's array replaced by a float64 one (`.data`): the array-identity guard
    falls back to its checks, which fail; the recapture computes in float64 as eager."""
    capture.reset()
    eager.manual_seed(0)
    a = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5))
    b = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5))
    b.load_state_dict(a.state_dict())
    c = capture.compile(b)
    x = eager.randn(4, 6)
    for i in range(5):
        if i == 2:
            for m in (a, b):
                m[1].weight.data = eager.ones(5, dtype=eager.float64) * 2
        ya, yb = a(x), c(x)
        assert ya.dtype == yb.dtype
        np.testing.assert_allclose(yb.detach().numpy(), ya.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_module_with_its_own_getattr_and_a_property():
    """A class with its own `__getattr__` or a property keeps the plain attribute reads
    (the instance dict is not where they resolve)."""

    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = {"k": 2.0}

        def __getattr__(self, name):
            table = self.__dict__.get("table", {})
            if name in table:
                return table[name]
            return super().__getattr__(name)

        @property
        def offset(self):
            return self.table.get("offset", 0.0)

        def forward(self, x):
            return x * self.k + self.offset

    capture.reset()
    m = Lookup()
    c = capture.compile(m)
    x = eager.randn(3)
    for k, off in ((2.0, 0.0), (2.0, 0.0), (3.0, 0.0), (3.0, 1.5), (3.0, 1.5)):
        m.table["k"] = k
        m.table["offset"] = off
        np.testing.assert_allclose(c(x).numpy(), (x * k + off).numpy(), rtol=1e-6)


def test_argument_aliasing_a_mutated_buffer_after_hits():
    """A BatchNorm graph writes its running statistics back; an argument that is (a view of)
    one of them must fail the entry's disjointness guard, remembered or not (checked on the
    guard itself: the miss that follows is capture's own business)."""
    from capture.hits import MISS

    capture.reset()
    eager.manual_seed(0)
    m = nn.BatchNorm1d(4)

    def f(x, e):
        return m(x) * 2 + e

    c = capture.compile(f)
    x = eager.randn(6, 4)
    for _ in range(3):
        c(x, eager.ones(4))
    (entry,) = c.__wick_compiled__.entries
    for e in (eager.ones(4), m.running_mean, m.running_var[:], m.running_var[1:3].reshape(2)
              .repeat(2), eager.zeros(4), x[0]):
        aliased = e._data.base is m.running_var._data or e is m.running_mean
        assert entry.guard(x, e) is not aliased
        if aliased:
            assert entry.hit(x, e) is MISS
    with eager.no_grad():  # (a buffer that is a view of an argument: the other direction)
        m.running_mean = x[1]
    assert not entry.guard(x, eager.ones(4))
    assert entry.hit(x, eager.ones(4)) is MISS

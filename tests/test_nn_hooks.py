"""Module hooks (forward, forward-pre, full backward (pre), global, state-dict) against torch:
the same program runs with `import eager as torch` and with torch, and the call logs, values
and grads must agree. The compiled-module and fast-path tests need wick only."""

import warnings

import numpy as np
import pytest

import eager
from eager.nn.modules import module as wick_module_mod



def _model(lib, seed=0):
    rng = np.random.default_rng(seed)
    m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Tanh(), lib.nn.Linear(3, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return m


def _x(lib, requires_grad=True):
    a = np.arange(8, dtype=np.float32).reshape(2, 4) / 7 - 0.5
    return lib.tensor(a, requires_grad=requires_grad)


def _np(t):
    if t is None:
        return None
    return (t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)).copy()


def _both(program):
    """Run `program(lib, modmod)` for wick and torch; return both results (skips without
    torch; the wick-only tests below run regardless)."""
    torch = pytest.importorskip("torch")
    return program(eager, wick_module_mod), program(torch, torch.nn.modules.module)


def _close(a, b):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _close(x, y)
    elif a is None or isinstance(a, (str, int, bool)):
        assert a == b, (a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_forward_hook_order_and_results():
    def prog(lib, mm):
        m = _model(lib)
        log = []
        g = mm.register_module_forward_pre_hook(
            lambda mod, a: log.append(("gpre", type(mod).__name__)))
        hs = [m[0].register_forward_pre_hook(lambda mod, a: log.append("pre1")),
              m[0].register_forward_pre_hook(lambda mod, a: log.append("pre0"), prepend=True),
              m[0].register_forward_hook(lambda mod, a, o: log.append("post1")),
              m[0].register_forward_hook(lambda mod, a, o: log.append("post0"), prepend=True),
              mm.register_module_forward_hook(
                  lambda mod, a, o: log.append(("gpost", type(mod).__name__)))]
        y = m(_x(lib))
        g.remove()
        for h in hs:
            h.remove()
        y2 = m(_x(lib))
        return log, _np(y), _np(y2)

    (lw, *vw), (lt, *vt) = _both(prog)
    assert lw == lt
    _close(vw, vt)


def test_modified_args_kwargs_and_output():
    def prog(lib, mm):
        m = _model(lib)
        out = []
        h1 = m[0].register_forward_pre_hook(lambda mod, a: a[0] * 2)  # non-tuple: wrapped
        h2 = m[2].register_forward_hook(lambda mod, a, o: o + 1)
        out.append(_np(m(_x(lib))))
        h1.remove()
        h2.remove()
        lin = m[0]
        seen = []

        def pre_kw(mod, a, kw):
            seen.append(sorted(kw))
            if a:
                return (a[0] - 1,), kw
            return (), {"input": kw["input"] + 1}

        def post_kw(mod, a, kw, o):
            seen.append(len(a))
            return o * 3

        with lin.register_forward_pre_hook(pre_kw, with_kwargs=True), \
                lin.register_forward_hook(post_kw, with_kwargs=True):
            out.append(_np(lin(input=_x(lib))))
            out.append(_np(lin(_x(lib))))
        out.append(_np(lin(_x(lib))))  # the context managers removed both
        return out, seen

    (ow, sw), (ot, st) = _both(prog)
    _close(ow, ot)
    assert sw == st


def test_removal_during_iteration_and_handle_ids():
    def prog(lib, mm):
        m = lib.nn.Linear(4, 3)
        log, handles = [], []

        def first(mod, a, o):
            log.append("first")
            handles[1].remove()  # removing a later hook mid-call: it still runs this time

        handles.append(m.register_forward_hook(first))
        handles.append(m.register_forward_hook(lambda mod, a, o: log.append("second")))
        m(_x(lib))
        m(_x(lib))
        handles[0].remove()
        handles[0].remove()
        m(_x(lib))
        return log, handles[1].id - handles[0].id, len(m._forward_hooks)

    assert _both(prog)[0] == _both(prog)[1]


def test_always_call_on_exception():
    class Boom:
        def __call__(self, lib):
            class B(lib.nn.Module):
                def forward(self, x):
                    raise ValueError("boom")
            return B()

    def prog(lib, mm):
        b = Boom()(lib)
        log = []
        b.register_forward_hook(lambda mod, a, o: log.append("never"))
        b.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
        h = mm.register_module_forward_hook(lambda mod, a, o: log.append("g"), always_call=True)
        with pytest.raises(ValueError, match="boom"):
            b(_x(lib))
        h.remove()
        return log

    assert _both(prog)[0] == _both(prog)[1] == ["g", ("always", None)]


def _grads(lib, m, x):
    y = m(x)
    (y * lib.tensor([[1.0, -2.0], [0.5, 3.0]])).sum().backward()
    return [_np(x.grad)] + [_np(p.grad) for p in m.parameters()]


@pytest.mark.parametrize("x_grad", [True, False])
def test_full_backward_hooks_values(x_grad):
    def prog(lib, mm):
        m = _model(lib)
        log = []

        def pre(mod, gout):
            log.append(("pre", type(mod).__name__, [_np(g) for g in gout]))

        def post(mod, gin, gout):
            log.append(("post", type(mod).__name__, [_np(g) for g in gin],
                        [_np(g) for g in gout]))

        for sub in (m[0], m[2], m):
            sub.register_full_backward_pre_hook(pre)
            sub.register_full_backward_hook(post)
        grads = _grads(lib, m, _x(lib, x_grad))
        return log, grads

    (lw, gw), (lt, gt) = _both(prog)
    assert [e[:2] for e in lw] == [e[:2] for e in lt]
    for a, b in zip(lw, lt):
        _close(list(a[2:]), list(b[2:]))
    _close(gw, gt)


def test_modified_grads_take_effect():
    def prog(lib, mm):
        m = _model(lib)
        h1 = m[2].register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 10,))
        h2 = m[0].register_full_backward_hook(lambda mod, gin, gout: (gin[0] - 1,))
        g = mm.register_module_full_backward_hook(lambda mod, gin, gout: None)
        a = _grads(lib, m, _x(lib))
        h1.remove()
        h2.remove()
        g.remove()
        for p in m.parameters():
            p.grad = None
        b = _grads(lib, m, _x(lib))
        return a, b

    (aw, bw), (at, bt) = _both(prog)
    _close(aw, at)
    _close(bw, bt)
    assert not np.allclose(aw[0], bw[0])


def test_backward_hook_tuple_output_and_non_tensor_input():
    def prog(lib, mm):
        class Two(lib.nn.Module):
            def forward(self, x, scale, y):
                return x * scale, (x * y).sum(1)

        m = Two()
        seen = []
        m.register_full_backward_hook(
            lambda mod, gin, gout: seen.append(([_np(g) for g in gin], [_np(g) for g in gout])))
        x, y = _x(lib), _x(lib, False)
        a, b = m(x, 3.0, y)
        (a.sum() + (b * 2).sum()).backward()
        a, b = m(x, 3.0, y)
        a.sum().backward()  # b unused: its grad_output is None
        return seen, _np(x.grad)

    (sw, gw), (st, gt) = _both(prog)
    assert len(sw) == len(st) == 2
    assert [g is None for g in sw[1][1]] == [g is None for g in st[1][1]] == [False, True]
    assert [g is None for g in sw[0][0]] == [g is None for g in st[0][0]] == [False, True, False]
    _close(sw, st)
    _close(gw, gt)


def test_state_dict_hooks():
    def prog(lib, mm):
        m = _model(lib)
        log = []
        m[0].register_state_dict_pre_hook(lambda mod, prefix, keep: log.append(("pre", prefix)))

        def post(mod, sd, prefix, meta):
            log.append(("post", prefix, sorted(k for k in sd if k.startswith(prefix))))
        m[2]._register_state_dict_hook(post)
        sd = m.state_dict()

        def lpost(mod, keys):
            log.append(("lpost", sorted(keys.missing_keys)))
            keys.missing_keys.clear()
        m.register_load_state_dict_post_hook(lpost)
        del sd["2.bias"]
        res = m.load_state_dict(sd)
        return log, sorted(sd), list(res.missing_keys)

    assert _both(prog)[0] == _both(prog)[1]


def test_compiled_module_with_forward_hook_matches_eager():
    import capture

    m = _model(eager)
    h = m.register_forward_hook(lambda mod, a, o: o * 2 + a[0].sum())
    m[0].register_forward_pre_hook(lambda mod, a: (a[0] + 1,))
    want = _np(m(_x(eager)))
    cm = capture.compile(m)
    np.testing.assert_allclose(_np(cm(_x(eager))), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(cm(_x(eager))), want, rtol=1e-5, atol=1e-6)
    h.remove()  # the compiled call must see the removal
    want2 = _np(m(_x(eager)))
    assert not np.allclose(want, want2)
    np.testing.assert_allclose(_np(cm(_x(eager))), want2, rtol=1e-5, atol=1e-6)
    m[0].register_forward_hook(lambda mod, a, o: o.relu())  # and a hook added later
    want3 = _np(m(_x(eager)))
    np.testing.assert_allclose(_np(cm(_x(eager))), want3, rtol=1e-5, atol=1e-6)


def test_no_hooks_left_after_removal():
    m = eager.nn.Linear(2, 2)
    h = m.register_forward_hook(lambda *a: None)
    assert m._wick_has_hooks
    h.remove()
    m(eager.randn(1, 2))
    assert not m._wick_has_hooks and "_wick_has_hooks" not in m.__dict__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(eager.randn(1, 2))

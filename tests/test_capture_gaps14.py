"""Library-style code that capture broke on (issue 14's bar, held-out set S: code written as
HuggingFace transformers, timm, torchvision, Lightning, fairseq, torchmetrics, detectron, RL
libraries and their users write it). Each case is built by `case(lib)` for `lib` = wick's
`eager` or the real torch; it runs eagerly and compiled from the same seed (capture, then the
cache hit), comparing outputs (values and dtypes) and the state it names; its graph and break
counts from `capture.explain` are checked, and when torch is installed torch._dynamo.explain's
counts on the same code are too (capture_cases.case_tests).
"""

from __future__ import annotations

from capture_cases import case_tests, same
from capture_cases import rand as _rand

import eager


def _flat(v):
    if isinstance(v, (list, tuple)):
        return [type(v).__name__] + [x for item in v for x in _flat(item)]
    if isinstance(v, dict):
        return [type(v).__name__] + [x for k in v for x in [k] + _flat(v[k])]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    same(a, b, _flat)


# ---------------------------------------------------------------- Lightning's AttributeDict


class AttributeDict(dict):
    """Lightning's hparams container: a dict whose keys read as attributes."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as exp:
            raise AttributeError(f'Missing attribute "{key}"') from exp

    def __setattr__(self, key, val):
        self[key] = val


def attribute_dict_hparams(torch):
    """`self.hparams.learning_rate` in a training step: the class's `__getattr__` inlined (was
    a break: 'attribute computed by user code'), `self[key]` read from the dict's items."""
    lin = torch.nn.Linear(4, 3)
    hp = AttributeDict(scale=0.5, temperature=2.0, name="run")

    def training_step(x, y):
        logits = lin(x) * hp.scale / hp.temperature
        loss = torch.nn.functional.cross_entropy(logits, y)
        return {"loss": loss, "progress_bar": {"name": hp.name, "t": hp["temperature"]}}

    y = torch.tensor([0, 2, 1, 1, 0])
    return training_step, (_rand(torch, 5, 4), y), lambda: []


# ---------------------------------------------------------------- as_tensor of a tensor


def as_tensor_of_mask(torch):
    """RL libraries' `torch.as_tensor(clipped, dtype=torch.float32).mean()` of a bool tensor
    (was a break: 'as_tensor has no graph form'), and as_tensor/asarray of a tensor of its own
    dtype (the same tensor)."""
    def clip_stats(ratio, adv):
        clipped = ratio.gt(1.2) | ratio.lt(0.8)
        frac = torch.as_tensor(clipped, dtype=torch.float32).mean()
        same_dtype = torch.as_tensor(adv) * 2
        as64 = torch.asarray(adv, dtype=torch.float64).sum()
        return frac, same_dtype, as64

    return clip_stats, (_rand(torch, 8).exp(), _rand(torch, 8, seed=2)), lambda: []


# ---------------------------------------------------------------- memory_format constants


def zeros_like_preserve_format(torch):
    """An optimizer's lazy state `zeros_like(p, memory_format=torch.preserve_format)` and
    `x.contiguous(memory_format=torch.contiguous_format)` (was: 'an argument is
    memory_format, not a constant', 0 graphs for the whole step)."""
    state = {}

    def init_state(p):
        if len(state) == 0:
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.ones_like(p, memory_format=torch.preserve_format)
        state["exp_avg"].mul_(0.9).add_(p, alpha=0.1)
        return p.contiguous(memory_format=torch.contiguous_format) * 2

    return init_state, (_rand(torch, 3, 2),), lambda: dict(state)


CASES = [
    (attribute_dict_hparams, 1, 0, 1, 0),
    (as_tensor_of_mask, 1, 0, 1, 0),
    (zeros_like_preserve_format, 1, 0, 1, 0),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_as_tensor_keeps_the_gradient_as_eager():
    """as_tensor(t, dtype=float64) of a tensor requiring grad is a differentiable cast."""
    import capture

    w = eager.ones(3, requires_grad=True)

    def f(x):
        return eager.as_tensor(x * w, dtype=eager.float64).sum()

    capture.reset()
    ex = capture.explain(f)(eager.arange(3.0))
    assert (ex.graph_count, ex.graph_break_count, ex.unique_break_reasons) == (1, 0, [])
    capture.reset()
    out = capture.compile(f)(eager.arange(3.0))
    out.backward()
    assert out.dtype is eager.float64
    assert w.grad.tolist() == [0.0, 1.0, 2.0]


def test_attribute_dict_value_changed_between_calls():
    """A value of the AttributeDict changed between compiled calls is guarded: the new value
    is used (one more entry), an added key does not disturb the cached read."""
    import capture

    hp = AttributeDict(scale=0.5)

    def f(x):
        return x * hp.scale

    capture.reset()
    x = eager.arange(3.0)
    ex = capture.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count, ex.unique_break_reasons) == (1, 0, [])
    capture.reset()
    cf = capture.compile(f)
    assert cf(x).tolist() == [0.0, 0.5, 1.0]
    hp.scale = 2.0
    assert cf(x).tolist() == [0.0, 2.0, 4.0]
    hp.other = 1
    assert cf(x).tolist() == [0.0, 2.0, 4.0]

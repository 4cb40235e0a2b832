"""Library-style model code that capture broke on (issue 14's bar, held-out set O: code written
as users copy it from timm, torchvision, HuggingFace transformers, diffusers, lightning). Each
case is built by `build(lib)` for `lib` = wick's `eager` or the real torch; it runs eagerly and
compiled (twice: capture, then the cache hit) from the same seed, comparing outputs (values and
dtypes) and the state it names; its graph and break counts from `capture.explain` are checked,
and when torch is installed torch._dynamo.explain's counts on the same code are too.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Optional

import numpy as np
import pytest
from capture_cases import case_tests, same
from capture_cases import rand as _rand

import capture
import eager


def _ints(lib, hi, *shape, seed=2):
    return lib.tensor(np.random.default_rng(seed).integers(0, hi, shape).astype(np.int64))


def _flat(v):
    if isinstance(v, dict):
        attrs = _flat(vars(v)) if type(v) not in (dict, OrderedDict) else []
        return [type(v).__qualname__] + [x for k in v for x in [k] + _flat(v[k])] + attrs
    if isinstance(v, (list, tuple)):
        return [type(v).__qualname__] + [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    if hasattr(v, "__dict__") and not isinstance(v, type):  # an object the case made
        return [type(v).__qualname__] + _flat(vars(v))
    return [v]


def _same(a, b):
    same(a, b, _flat)


def llama_cache_tuple(torch):
    """`next_cache = () if use_cache else None` then `next_cache += (present,)` per layer, as
    HF's decoder stacks build their cache (the tuple `+=` on a constant `()` was a break)."""
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = nn.Linear(8, 8, bias=False)
            self.v = nn.Linear(8, 8, bias=False)

        def forward(self, h):
            return h + self.k(h).tanh(), (self.k(h), self.v(h))

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(3)])

        def forward(self, h, use_cache=True):
            next_cache = () if use_cache else None
            for layer in self.layers:
                h, present = layer(h)
                if use_cache:
                    next_cache += (present,)
            return h, next_cache

    m = Stack()
    return m, (_rand(torch, 2, 4, 8),), lambda: []


def loss_module_in_forward(torch):
    """HF's sequence-classification heads: `loss_fct = CrossEntropyLoss()` (or MSELoss /
    BCEWithLogitsLoss by `config.problem_type`, set on the first call) made inside forward and
    called at once (a module made in the frame was a break at its call)."""
    nn = torch.nn

    class Config:
        def __init__(self):
            self.problem_type = None
            self.num_labels = 3

    class Head(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.classifier = nn.Linear(6, config.num_labels)

        def forward(self, x, labels):
            logits = self.classifier(torch.relu(x))
            if self.config.problem_type is None:
                if labels.dtype == torch.long or labels.dtype == torch.int:
                    self.config.problem_type = "single_label_classification"
                else:
                    self.config.problem_type = "multi_label_classification"
            if self.config.problem_type == "single_label_classification":
                loss_fct = nn.CrossEntropyLoss(label_smoothing=0.1)
                loss = loss_fct(logits.view(-1, self.config.num_labels), labels.view(-1))
            else:
                loss = nn.BCEWithLogitsLoss(reduction="sum")(logits, labels)
            return loss, nn.Softmax(dim=-1)(logits)

    m = Head(Config())
    return m, (_rand(torch, 4, 6), _ints(torch, 3, 4)), lambda: [m.config.problem_type]


class _ModelOutput(OrderedDict):
    """HF's ModelOutput pattern: a dataclass that is also an OrderedDict of its non-None
    fields; a field set later becomes an item only if it already is one."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):  # (transformers': the item and the attribute)
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class _Output(_ModelOutput):
    loss: Optional[object] = None
    logits: Optional[object] = None
    hidden_states: Optional[tuple] = None


def model_output_dataclass_dict(torch):
    """A HF-style model returning `_Output(logits=..., hidden_states=(...))`: its dataclass
    `__init__` stores through the class's `__setattr__`, `__post_init__` fills the dict by
    `dataclasses.fields(self)`; the caller reads `out.logits`, `out["hidden_states"]`, `out[0]`
    and the object itself leaves the graph (rebuilt with its items and attributes); `len(out)`,
    `for k in out`, `.items()`, `"logits" in out` see its items. Making it was a break (the object was not modelled)."""
    nn = torch.nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x, return_dict=True):
            h = torch.tanh(self.fc1(x))
            logits = self.fc2(h)
            if not return_dict:
                return (logits, (x, h))
            out = _Output(logits=logits, hidden_states=(x, h))
            out.logits = logits * 2.0  # an existing key: item and attribute change
            return out

    m = Model()

    def run(x):
        out = m(x)
        keys = [k for k in out] + [k for k, _ in out.items()] + list(out.keys())
        has = ("logits" in out, "loss" in out, out.get("loss"))
        return out, out.logits + out["hidden_states"][1].sum(), out[0], len(out), keys, has

    return run, (_rand(torch, 4, 6),), lambda: []


def timm_patch_embed_format(torch):
    """timm's PatchEmbed: `_assert(H == self.img_size[0], msg)` (torch._assert; a missing
    name in eager) and an output format `class Format(str, Enum)` compared by `==`/`!=` (a
    str-mixin enum's `__eq__` is str's, not identity: was a break per comparison)."""
    import enum

    nn = torch.nn

    class Format(str, enum.Enum):
        NCHW = "NCHW"
        NHWC = "NHWC"

    class PatchEmbed(nn.Module):
        def __init__(self, img_size=8, patch=4, output_fmt=None):
            super().__init__()
            self.img_size = (img_size, img_size)
            self.output_fmt = Format(output_fmt) if output_fmt is not None else Format.NCHW
            self.proj = nn.Conv2d(3, 6, patch, patch)

        def forward(self, x):
            B, C, H, W = x.shape
            torch._assert(H == self.img_size[0], f"Input height ({H}) doesn't match model.")
            x = self.proj(x)
            if self.output_fmt == Format.NHWC:
                x = x.permute(0, 2, 3, 1)
            elif self.output_fmt != "NCHW":
                x = x * 0.0
            return x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = PatchEmbed(), PatchEmbed(output_fmt="NHWC")

        def forward(self, x):
            return self.a(x).sum((2, 3)) + self.b(x).sum((1, 2))

    m = Net()
    return m, (_rand(torch, 2, 3, 8, 8),), lambda: []


def logits_processor_list(torch):
    """HF's `LogitsProcessorList(list)` whose `__call__` loops `for processor in self:` over
    callable warpers (temperature, top-k by `topk(...)[0][..., -1, None]`, repetition penalty
    by gather/where/scatter): iterating a list subclass was a break."""
    class Temperature:
        def __init__(self, t):
            self.temperature = t

        def __call__(self, input_ids, scores):
            return scores / self.temperature

    class TopK:
        def __init__(self, k):
            self.top_k = k

        def __call__(self, input_ids, scores):
            remove = scores < torch.topk(scores, self.top_k)[0][..., -1, None]
            return scores.masked_fill(remove, -float("inf"))

    class Repetition:
        def __call__(self, input_ids, scores):
            score = torch.gather(scores, 1, input_ids)
            score = torch.where(score < 0, score * 1.3, score / 1.3)
            return scores.scatter(1, input_ids, score)

    class LogitsProcessorList(list):
        def __call__(self, input_ids, scores, **kwargs):
            for processor in self:
                scores = processor(input_ids, scores)
            return scores

    procs = LogitsProcessorList([Repetition(), Temperature(0.7)])
    procs.append(TopK(3))

    def step(input_ids, logits):
        return torch.softmax(procs(input_ids, logits), dim=-1)

    return step, (_ints(torch, 8, 2, 3), _rand(torch, 2, 8)), lambda: []


def inplace_act_on_flattened_pool(torch):
    """timm's ClassifierHead: `x = flatten(pool(x))` then `act(x)` with `inplace=True`
    (Hardswish): an in-place op on a view of an intermediate nothing else holds (was a
    break: "may alias a graph input or a view")."""
    nn = torch.nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flatten = nn.Flatten(1)
            self.act = nn.Hardswish(inplace=True)
            self.fc = nn.Linear(6, 2)

        def forward(self, x):
            x = self.flatten(self.pool(self.conv(x)))
            x = self.act(x)
            return self.fc(x)

    m = Head()
    return m, (_rand(torch, 2, 3, 5, 5),), lambda: []


def inplace_on_view_with_live_base(torch):
    """The base of the written view is still held (`p` returned): it must see the write
    (functionalized as torch.compile: `capture/viewwrites.py`); values as eagerly."""
    nn = torch.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)

        def forward(self, x):
            p = self.conv(x)
            y = p.flatten(1)
            y.mul_(2.0)
            return p, y.sum(1)

    m = M()
    return m, (_rand(torch, 2, 3, 2, 2),), lambda: []


def bart_learned_positions(torch):
    """HF BART's `BartLearnedPositionalEmbedding(nn.Embedding)`: `self.offset = 2` set before
    `super().__init__` (eager raised AttributeError there; torch allows plain values), its
    forward calling `super().forward(positions + self.offset)`, with `shift_tokens_right`
    (setitem on new_zeros, masked_fill_) and RoBERTa's position ids from a cumsum."""
    nn = torch.nn

    class LearnedPositions(nn.Embedding):
        def __init__(self, num, dim):
            self.offset = 2
            super().__init__(num + self.offset, dim)

        def forward(self, input_ids, past_key_values_length: int = 0):
            bsz, seq_len = input_ids.shape[:2]
            positions = torch.arange(past_key_values_length, past_key_values_length + seq_len,
                                     dtype=torch.long).expand(bsz, -1)
            return super().forward(positions + self.offset)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(12, 8, padding_idx=1)
            self.pos = LearnedPositions(16, 8)

        def forward(self, input_ids, labels):
            mask = input_ids.ne(1).int()
            roberta_pos = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
            shifted = labels.new_zeros(labels.shape)
            shifted[:, 1:] = labels[:, :-1].clone()
            shifted[:, 0] = 2
            shifted.masked_fill_(shifted == -100, 1)
            return self.tok(input_ids) + self.pos(input_ids), roberta_pos, shifted

    m = Model()
    labels = _ints(torch, 12, 2, 5, seed=7)
    labels[0, 3:] = -100
    return m, (_ints(torch, 12, 2, 6), labels), lambda: []


def diagonal_gaussian_posterior(torch):
    """diffusers' `DiagonalGaussianDistribution` made in the VAE's forward: chunk/clamp/exp
    in `__init__`, `mode()`, `kl()` / `kl(other)`, and `nll` adding `np.log(2.0 * np.pi)` (a
    numpy scalar) to a tensor: the numpy call was a break, and `np.float64 + Tensor` was an
    ndarray in wick eager (numpy did not defer to the Tensor; torch's has
    `__array_priority__`)."""
    nn = torch.nn

    class DiagonalGaussian:
        def __init__(self, parameters):
            self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)
            self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
            self.var = torch.exp(self.logvar)

        def kl(self, other=None):
            if other is None:
                return 0.5 * torch.sum(self.mean ** 2 + self.var - 1.0 - self.logvar,
                                       dim=[1, 2, 3])
            return 0.5 * torch.sum((self.mean - other.mean) ** 2 / other.var +
                                   self.var / other.var - 1.0 - self.logvar + other.logvar,
                                   dim=[1, 2, 3])

        def nll(self, sample, dims=(1, 2, 3)):
            logtwopi = np.log(2.0 * np.pi)
            return 0.5 * torch.sum(logtwopi + self.logvar +
                                   torch.pow(sample - self.mean, 2) / self.var, dim=dims)

        def mode(self):
            return self.mean

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            posterior = DiagonalGaussian(self.conv(x))
            z = posterior.mode()
            prior = DiagonalGaussian(torch.zeros(x.shape[0], 8, x.shape[2], x.shape[3]))
            return z, posterior.kl(), posterior.kl(prior), posterior.nll(z)

    m = Encoder()
    return m, (_rand(torch, 2, 3, 4, 4),), lambda: []


CASES = [
    (llama_cache_tuple, 1, 0, 1, 0),
    (loss_module_in_forward, 1, 0, 1, 0),
    (model_output_dataclass_dict, 1, 0, 1, 0),
    (timm_patch_embed_format, 1, 0, 1, 0),
    (logits_processor_list, 1, 0, 1, 0),
    (inplace_act_on_flattened_pool, 1, 0, 1, 0),
    (bart_learned_positions, 1, 0, 1, 0),
    (diagonal_gaussian_posterior, 1, 0, 1, 0),
    (inplace_on_view_with_live_base, 1, 0, 1, 0),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_assert_checked_at_capture_and_on_a_new_shape():
    """`torch._assert` on a size: true passes, false raises AssertionError with the message,
    compiled as eagerly (the new shape misses the guards and is captured again)."""
    def f(x):
        eager._assert(x.shape[0] == 3, "need 3 rows")
        return x * 2

    c = capture.compile(f)
    np.testing.assert_allclose(c(eager.ones(3, 2)).numpy(), np.full((3, 2), 2.0))
    with pytest.raises(AssertionError, match="need 3 rows"):
        f(eager.ones(2, 2))
    with pytest.raises(AssertionError, match="need 3 rows"):
        c(eager.ones(2, 2))


def test_inplace_on_private_view_gradients_as_eager():
    """Gradients through an in-place activation on a view of an intermediate equal eager's."""
    def f(x, w):
        y = (x * w).flatten(1)
        eager.nn.functional.relu(y, inplace=True)
        return (y * y).sum()

    grads = []
    for fn in (f, capture.compile(f)):
        x = _rand(eager, 3, 2, 2).requires_grad_()
        w = _rand(eager, 2, 2, seed=5).requires_grad_()
        fn(x, w).backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("lib", ["eager", "torch"])
def test_module_plain_attribute_before_init(lib):
    """As torch: a plain value may be set before `Module.__init__`; a parameter or a module
    there is an AttributeError naming what cannot be assigned."""
    mod = eager if lib == "eager" else pytest.importorskip("torch")
    nn = mod.nn

    class A(nn.Module):
        def __init__(self, early):
            self.offset = 2
            if early is not None:
                setattr(self, "early", early)
            super().__init__()

    assert A(None).offset == 2 and A(None).training
    with pytest.raises(AttributeError, match="cannot assign parameters before"):
        A(nn.Parameter(mod.ones(1)))
    with pytest.raises(AttributeError, match="cannot assign module before"):
        A(nn.Linear(1, 1))


def test_numpy_scalar_on_the_left_gives_a_tensor():
    """`np.float64(c) <op> t` is a Tensor of t's dtype (numpy defers to the Tensor's
    reflected operator), as torch's `__array_priority__` makes it there."""
    try:
        import torch
    except ImportError:
        torch = None
    for lib in (eager, torch) if torch is not None else (eager,):
        t = lib.ones(2)
        for r in (np.float64(1.5) + t, np.float32(2) * t, np.float64(3) - t, np.float64(1) / t):
            assert isinstance(r, lib.Tensor) and r.dtype == lib.float32
    np.testing.assert_allclose((np.float64(3) - eager.ones(2)).numpy(), [2.0, 2.0])


class _Cache(dict):
    """A plain dict subclass with dict's own __init__ and a __getitem__ override."""

    def __getitem__(self, k):
        return dict.get(self, k, 0)


def test_dict_subclass_objects_made_in_the_frame():
    """`dict(out)` of a ModelOutput (through its keys() and __getitem__, as CPython merges an
    OrderedDict subclass) and a `dict` subclass made empty, filled, read through its own
    __getitem__, returned: one graph, no break, the same objects as eagerly."""
    def f(x):
        o = _Output(logits=x * 2, hidden_states=(x,))
        c = _Cache()
        c["a"] = x + 1
        return dict(o), c, c["a"], c["missing"], len(c), "a" in c

    capture.reset()
    ex = capture.explain(f)(_rand(eager, 2))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0) and not ex.unique_break_reasons
    compiled = capture.compile(f)
    for _ in range(2):
        want, got = f(_rand(eager, 2)), compiled(_rand(eager, 2))
        assert type(got[1]) is _Cache and type(got[0]) is dict
        _same(want, got)

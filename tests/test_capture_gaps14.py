"""Library-style code that capture broke on (issue 14's bar, held-out set S: code written as
HuggingFace transformers, timm, torchvision, Lightning, fairseq, torchmetrics, detectron, RL
libraries and their users write it). Each case is built by `case(lib)` for `lib` = wick's
`eager` or the real torch; it runs eagerly and compiled from the same seed (capture, then the
cache hit), comparing outputs (values and dtypes) and the state it names; its graph and break
counts from `capture.explain` are checked, and when torch is installed torch._dynamo.explain's
counts on the same code are too (capture_cases.case_tests).
"""

from __future__ import annotations

import contextlib
import types
from typing import NamedTuple

from capture_cases import case_tests
from capture_cases import rand as _rand
from capture_cases import same_structure as _same

import eager

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


# ---------------------------------------------------------------- batch S4


def onnx_export_check(torch):
    """A YOLO-style head's `if torch.onnx.is_in_onnx_export() or self.export: return y`
    (eager had no torch.onnx: AttributeError; now a folded False, as jit.is_tracing)."""
    conv = torch.nn.Conv2d(2, 3, 1)

    def head(x):
        y = conv(x)
        if torch.onnx.is_in_onnx_export() or torch.jit.is_tracing():
            return y
        return y.flatten(2).permute(0, 2, 1).sigmoid()

    return head, (_rand(torch, 1, 2, 3, 3),), lambda: []


def math_prod_of_generator(torch):
    """einops-style size arithmetic: `math.prod(sizes[a] for a in group)` over a generator of
    constants and of tensor sizes (was 'call to builtin prod')."""
    import math

    def merge(x, groups=(("b",), ("h", "w"), ("c",))):
        sizes = dict(zip(("b", "c", "h", "w"), x.shape))
        flat = x.permute(0, 2, 3, 1)
        return flat.reshape([math.prod(sizes[a] for a in g) for g in groups]) * 2, \
            math.prod(x.shape[1:], start=2)

    return merge, (_rand(torch, 2, 3, 4, 5),), lambda: []


class ImageList:
    """detectron2's ImageList: `len(il)` runs its Python `__len__`."""

    def __init__(self, tensor, image_sizes):
        self.tensor, self.image_sizes = tensor, image_sizes

    def __len__(self):
        return len(self.image_sizes)


def len_of_user_object(torch):
    """`len(obj)` of an object made by the code or read from the frame, whose class defines
    `__len__` in Python (was 'call to builtin len')."""
    held = ImageList(None, [(2, 3), (4, 5), (1, 1)])

    def batch(images):
        il = ImageList(torch.stack(images), [tuple(im.shape) for im in images])
        return il.tensor * len(il) + len(held)

    return batch, ([_rand(torch, 2, 3), _rand(torch, 2, 3, seed=2)],), lambda: []


def user_dict_batch_encoding(torch):
    """HF's BatchEncoding(UserDict): `model(**enc)`, `enc["input_ids"]`, `"k" in enc`,
    `enc.attention_mask` (its __getattr__), `len(enc)` (was 'dict update with
    BatchEncoding')."""
    from collections import UserDict

    class BatchEncoding(UserDict):
        def __getattr__(self, item):
            try:
                return self.data[item]
            except KeyError:
                raise AttributeError(item) from None

    emb = torch.nn.Embedding(7, 4)

    def model(input_ids=None, attention_mask=None):
        return (emb(input_ids) * attention_mask[..., None]).sum(1)

    enc = BatchEncoding({"input_ids": torch.tensor([[1, 2, 3], [4, 5, 6]]),
                         "attention_mask": torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])})

    def run(enc):
        out = model(**enc)
        extra = enc["input_ids"].sum() if "input_ids" in enc else 0
        return out, extra, enc.attention_mask.sum(), len(enc), "labels" in enc

    return run, (enc,), lambda: []


def sdpa_kernel_context(torch):
    """`with sdpa_kernel(SDPBackend.MATH):` (a list too) around attention: eager's checks at
    capture, then a null context (was `with` on _GeneratorContextManager: 2 graphs)."""
    from_attention = torch.nn.attention

    def attend(q, k, v):
        with from_attention.sdpa_kernel(from_attention.SDPBackend.MATH):
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        with from_attention.sdpa_kernel([from_attention.SDPBackend.MATH,
                                         from_attention.SDPBackend.EFFICIENT_ATTENTION]):
            b = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return a + b

    q = _rand(torch, 1, 2, 4, 3)
    return attend, (q, _rand(torch, 1, 2, 4, 3, seed=2), _rand(torch, 1, 2, 4, 3, seed=3)), \
        lambda: []


def mixup_float_method_ops(torch):
    """timm's Mixup with a float lambda that changes every call: `x.flip(0).mul_(1. - lam)`,
    `x.mul(lam).add_(...)`: the method ops take the dynamic number as its 0-d input (one
    automatic-dynamic entry; before, one entry per lambda, as the binary operators already
    did)."""
    def mix(x, lam: float):
        flipped = x.flip(0).mul_(1. - lam)
        return x.mul(lam).add_(flipped), x.div(lam).sub(lam)

    x = _rand(torch, 4, 3)
    return mix, (x, 0.7), lambda: [], [(x, 0.7), (x, 0.35), (x, 0.9)]


# ---------------------------------------------------------------- batch S5


class Wrapper:
    """A DDP-like wrapper whose `no_sync` is a user @contextmanager (flag set, then restored
    in `finally`)."""

    def __init__(self, module):
        self.module, self.require_backward_grad_sync = module, True

    @contextlib.contextmanager
    def no_sync(self, scale=1.0):
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield scale * 2
        finally:
            self.require_backward_grad_sync = old


def user_contextmanager_no_sync(torch):
    """`with ddp.no_sync():` and `with helper(obj) as s:` of user @contextmanager functions:
    the generator runs to its yield at `with`, the block reads the state it set, the rest
    (its `finally`) at the block's end (was `with` on _GeneratorContextManager: 2 graphs)."""
    lin = torch.nn.Linear(3, 2)
    ddp = Wrapper(lin)
    log = []

    @contextlib.contextmanager
    def scaled(obj, factor):
        log.append("enter")
        obj.factor = factor
        yield factor + 1
        obj.factor = 1.0
        log.append("exit")

    class Holder:
        factor = 1.0

    h = Holder()

    def step(x):
        with ddp.no_sync(0.5) as s:
            inside = ddp.require_backward_grad_sync
            out = lin(x) * s
        with scaled(h, 3.0) as t:
            out = out * h.factor + t
        return out, inside, ddp.require_backward_grad_sync, h.factor

    return step, (_rand(torch, 2, 3),), lambda: [list(log), h.factor]


# ---------------------------------------------------------------- batch S6


class EncoderOutput(NamedTuple):
    """A typing.NamedTuple model output."""

    last_hidden_state: object
    pooler_output: object = None


def namedtuple_replace_asdict(torch):
    """`out._replace(pooler_output=p)`, `out._asdict()["pooler_output"]`, `out._fields` of a
    NamedTuple output made in the frame (was 'attribute _replace of tuple of 2': 3 graphs)."""
    lin = torch.nn.Linear(4, 4)

    def encode(x):
        out = EncoderOutput(last_hidden_state=torch.tanh(lin(x)))
        out = out._replace(pooler_output=out.last_hidden_state[:, 0])
        return out, out._asdict()["pooler_output"].sum(), out._fields

    return encode, (_rand(torch, 2, 3, 4),), lambda: []


def simple_namespace_trainer(torch):
    """Lightning's `self.trainer.global_step` where the trainer is a types.SimpleNamespace
    (its C __getattribute__ is not user code; was 'computed by user code', 2 graphs)."""
    lin = torch.nn.Linear(3, 2)
    trainer = types.SimpleNamespace(global_step=4, accumulate_grad_batches=2, logged={})

    def training_step(x):
        loss = lin(x).pow(2).mean()
        if trainer.global_step % trainer.accumulate_grad_batches == 0:
            loss = loss * 0.5
        trainer.logged["loss"] = loss
        return loss

    return training_step, (_rand(torch, 2, 3),), lambda: dict(trainer.logged)


def type_of_read_dict(torch):
    """accelerate's recursive `send_to_device`: `type(batch)({k: ...})` of a dict argument
    and `type(t)(... for t in tensors)` of its lists (was 'call to builtin type')."""
    from collections.abc import Mapping

    def send_to_device(obj, device):
        if isinstance(obj, (tuple, list)):
            return type(obj)(send_to_device(t, device) for t in obj)
        if isinstance(obj, Mapping):
            return type(obj)({k: send_to_device(v, device) for k, v in obj.items()})
        if hasattr(obj, "to"):
            return obj.to(device)
        return obj

    def step(batch):
        batch = send_to_device(batch, "cpu")
        return torch.cat(batch["xs"]) * batch["scale"], type(batch["xs"]).__name__

    batch = {"xs": [_rand(torch, 1, 2), _rand(torch, 2, 2, seed=3)], "scale": 2.0}
    return step, (batch,), lambda: []


# ---------------------------------------------------------------- batch S8


class SlotScale:
    """A library class with `__slots__` (no instance dict), as dataclasses.Field."""

    __slots__ = ("scale", "shift")

    def __init__(self, scale, shift):
        self.scale, self.shift = scale, shift


def slotted_object_attributes(torch):
    """`cfg.scale` of a `__slots__` object read from the frame: a member descriptor, no user
    code (was 'attribute scale of SlotScale': 2 graphs); a changed value is guarded."""
    cfg = SlotScale(0.5, 2)

    def f(x):
        return x * cfg.scale + cfg.shift

    def g(x):
        out = f(x)
        return out, cfg.shift

    return g, (_rand(torch, 3),), lambda: []


def yield_from_generator_method(torch):
    """A module's generator method with `yield from self.stage1.named_children()` (and from a
    generator expression) iterated in forward (was: 'instruction GET_YIELD_FROM_ITER is not
    supported', 0 graphs)."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stage1 = nn.Sequential(nn.Linear(3, 3), nn.GELU())
            self.stage2 = nn.Sequential(nn.Linear(3, 2))

        def iter_blocks(self):
            yield from self.stage1.named_children()
            done = yield from (("s2." + n, m) for n, m in self.stage2.named_children())
            yield "end", done

        def forward(self, x):
            names = []
            for name, blk in self.iter_blocks():
                x = blk(x) if blk is not None else x
                names.append(name)
            return x, names

    return Net(), (_rand(torch, 2, 3),), lambda: []


CASES = [
    (attribute_dict_hparams, 1, 0, 1, 0),
    (as_tensor_of_mask, 1, 0, 1, 0),
    (zeros_like_preserve_format, 1, 0, 1, 0),
    (onnx_export_check, 1, 0, 1, 0),
    (math_prod_of_generator, 1, 0, 2, 1),  # (torch: a generator argument to prod breaks)
    (len_of_user_object, 1, 0, 1, 0),
    (user_dict_batch_encoding, 1, 0, 1, 0),
    (sdpa_kernel_context, 1, 0, 1, 0),
    (mixup_float_method_ops, 1, 0, 1, 0),
    (user_contextmanager_no_sync, 1, 0, 1, 0),
    (namedtuple_replace_asdict, 1, 0, 1, 0),
    (simple_namespace_trainer, 1, 0, 1, 0),
    (type_of_read_dict, 1, 0, 1, 0),
    (slotted_object_attributes, 1, 0, 1, 0),
    (yield_from_generator_method, 1, 0, 1, 0),
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


def test_mixup_float_lambda_is_one_dynamic_entry():
    """Three lambdas through the method ops: 2 cache entries (static, then automatic dynamic),
    as the operators `x * lam` and torch.compile (2 graphs)."""
    import capture

    fn, _, _, calls = mixup_float_method_ops(eager)
    capture.reset()
    cf = capture.compile(fn)
    for args in calls:
        want = fn(*args)
        got = cf(*args)
        _same(want, got)
    assert len(cf.__wick_compiled__.entries) == 2


def test_onnx_namespace_as_torch():
    """eager.onnx: is_in_onnx_export() is False (no exporter ever runs wick code); export
    raises RuntimeError naming the missing exporter."""
    import pytest

    assert eager.onnx.is_in_onnx_export() is False
    with pytest.raises(RuntimeError, match="ONNX"):
        eager.onnx.export(eager.nn.Linear(2, 2), (eager.ones(1, 2),), "m.onnx")


def test_user_contextmanager_with_a_break_inside_runs_like_eager():
    """A graph break inside the block (the exit cannot be rebuilt in a resume function): the
    frame runs eagerly from there, with eager's results and state."""
    import capture

    state = {"on": False}

    @contextlib.contextmanager
    def switch():
        state["on"] = True
        try:
            yield
        finally:
            state["on"] = False

    def f(x):
        with switch():
            y = x * 2
            capture.graph_break()
            on = state["on"]
        return y + 1, on, state["on"]

    capture.reset()
    cf = capture.compile(f)
    for _ in range(2):
        _same(f(eager.ones(2)), cf(eager.ones(2)))

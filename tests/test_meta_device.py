"""The meta device (tensors with a shape, a dtype and strides, no data) against PyTorch's:
factories, views' strides and storage offsets, elementwise layouts, printing, the errors of data
access, `.to("meta")`, modules built on meta (`with device("meta")`, `set_default_device`),
`Module.to_empty`, autograd on meta; every registry op's meta result against its CPU result
(eager as the reference); and the factory keywords (`device`, `dtype`) of every `torch.nn`
module that has them, against the module PyTorch builds.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from opinfo import dtypes_of, samples

import eager
import eager.nn as wnn
import ir
from eager.dispatch import _default_attrs, apply
from eager.tensor import Tensor
from ir import dtypes as D

torch = pytest.importorskip("torch")


def _same_meta(w, t):
    """A wick meta tensor shows what the PyTorch meta tensor shows (strides of size-1 dims
    aside: wick's CPU views, numpy's, give `x[None]` a 0 stride there, PyTorch a product)."""
    assert w.is_meta and t.is_meta
    assert tuple(w.shape) == tuple(t.shape)
    assert w.dtype.name == str(t.dtype).removeprefix("torch.")
    assert [s for s, n in zip(w.stride(), w.shape) if n != 1] == [
        s for s, n in zip(t.stride(), t.shape) if n != 1
    ]
    assert w.storage_offset() == t.storage_offset()
    assert w.is_contiguous() == t.is_contiguous()
    if w.grad_fn is None:  # (node names: wick's linear records AddBackward0, not Addmm)
        assert repr(w).replace("eager.", "torch.") == repr(t)


FACTORIES = [
    ("zeros", (3, 4), {}),
    ("ones", ((2, 5),), {"dtype": "float64"}),
    ("empty", (0, 3), {}),
    ("full", ((2, 3), 7), {}),
    ("full", ((2,), True), {}),
    ("rand", (4, 2), {}),
    ("randn", (3,), {"dtype": "float16"}),
    ("randint", (10, (6,)), {}),
    ("arange", (5,), {}),
    ("arange", (0.0, 1.0, 0.25), {}),
    ("tensor", ([[1, 2], [3, 4]],), {}),
    ("tensor", (2.5,), {}),
    ("eye", (3,), {}),
    ("linspace", (0, 1, 5), {}),
    ("empty_strided", ((2, 3), (1, 2)), {}),
    ("empty_strided", ((2, 3, 4), (12, 1, 3)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", FACTORIES, ids=lambda x: str(x))
def test_factories_on_meta(name, args, kwargs):
    def call(lib):
        kw = {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}
        return getattr(lib, name)(*args, device="meta", **kw)

    _same_meta(call(eager), call(torch))


def test_like_factories_and_requires_grad():
    for lib in (eager, torch):
        m = lib.ones(3, 4, device="meta", requires_grad=True)
        assert m.requires_grad and m.is_leaf
    w, t = eager.empty(2, 3, device="meta"), torch.empty(2, 3, device="meta")
    for fn in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
        _same_meta(getattr(eager, fn)(w), getattr(torch, fn)(t))
    z = eager.zeros_like(w, device="cpu")
    assert z.device.type == "cpu" and np.array_equal(z.numpy(), np.zeros((2, 3), np.float32))


VIEWS = [
    lambda x: x.t(),
    lambda x: x.transpose(0, 1)[1:],
    lambda x: x[1:, ::2],
    lambda x: x[2],
    lambda x: x[:, 1],
    lambda x: x.unsqueeze(1),
    lambda x: x[None, ..., None],
    lambda x: x.view(2, 6),
    lambda x: x.reshape(12),
    lambda x: x.t().reshape(12),
    lambda x: x.t().contiguous(),
    lambda x: x.expand(2, 3, 4),
    lambda x: x.permute(1, 0),
    lambda x: x.diagonal(),
    lambda x: x.diagonal(1),
    lambda x: x.unfold(1, 2, 1),
    lambda x: x.as_strided((2, 2), (1, 2), 3),
    lambda x: x[1:].as_strided((2,), (2,)),
    lambda x: x.squeeze(),
    lambda x: x.narrow(1, 1, 2),
    lambda x: x.select(1, 3),
    lambda x: x.flatten(),
    lambda x: x.t().flatten(),
    lambda x: x.unbind(0)[1],
    lambda x: x.chunk(2, 1)[1],
    lambda x: x.split([1, 3], 1)[1],
    lambda x: x.to(eager.complex64 if isinstance(x, Tensor) else torch.complex64).real,
    lambda x: (
        x.to(eager.complex64 if isinstance(x, Tensor) else torch.complex64).view(3, 2, 2).imag
    ),
]


@pytest.mark.parametrize("i", range(len(VIEWS)))
def test_views_strides_and_offsets(i):
    w, t = eager.empty(3, 4, device="meta"), torch.empty(3, 4, device="meta")
    _same_meta(VIEWS[i](w), VIEWS[i](t))


def test_view_shares_base_and_view_as_real():
    w = eager.empty(3, 4, device="meta")
    v = w[1:].t()
    assert v._base is w and v._version == w._version
    c = eager.empty(2, 3, dtype=eager.complex64, device="meta")
    t = torch.empty(2, 3, dtype=torch.complex64, device="meta")
    _same_meta(eager.view_as_real(c)[:, 1:], torch.view_as_real(t)[:, 1:])
    r = eager.empty(2, 3, 2, device="meta")
    _same_meta(eager.view_as_complex(r), torch.view_as_complex(torch.empty(2, 3, 2, device="meta")))


LAYOUTS = [
    lambda x: x.t() + 1,
    lambda x: (x.t() * x.t()).exp(),
    lambda x: x + x,
    lambda x: x.t() @ x,
    lambda x: x.sum(0),
    lambda x: x.t().sum(1),
    lambda x: x.t().int(),
    lambda x: x.t() > 0,
    lambda x: x.mean(),
    lambda x: x[:, :2] * 2,
]


@pytest.mark.parametrize("i", range(len(LAYOUTS)))
def test_results_layouts(i):
    w, t = eager.empty(3, 4, device="meta"), torch.empty(3, 4, device="meta")
    _same_meta(LAYOUTS[i](w), LAYOUTS[i](t))


def _raises_like(fw, ft):
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value)) as ew:
        fw()
    return str(ew.value), str(et.value)


@pytest.mark.parametrize(
    "what",
    [
        "item",
        "item1",
        "bool",
        "float",
        "tolist",
        "cpu",
        "numpy",
        "copy_to_cpu",
        "nonzero",
        "masked_select",
        "unique",
    ],
)
def test_data_access_errors(what):
    calls = {
        "item": lambda x: x.item(),
        "item1": lambda x: x[0, 0].item(),
        "bool": lambda x: bool(x[0, 0]),
        "float": lambda x: float(x[0, 0]),
        "tolist": lambda x: x.tolist(),
        "cpu": lambda x: x.cpu(),
        "numpy": lambda x: x.numpy(),
        "nonzero": lambda x: x.nonzero(),
        "masked_select": lambda x: x.masked_select(x > 0),
        "unique": lambda x: x.unique(),
    }
    if what == "copy_to_cpu":
        w, t = eager.ones(3, 4), torch.ones(3, 4)
        wm, tm = eager.ones(3, 4, device="meta"), torch.ones(3, 4, device="meta")
        mw, mt = _raises_like(lambda: w.copy_(wm), lambda: t.copy_(tm))
    else:
        w, t = eager.ones(3, 4, device="meta"), torch.ones(3, 4, device="meta")
        mw, mt = _raises_like(lambda: calls[what](w), lambda: calls[what](t))
    if what not in ("nonzero", "masked_select", "unique"):
        assert mw.replace("eager", "torch") == mt
    else:
        assert "attempted to run this operator with Meta tensors" in mw


def test_to_meta_writes_and_storage():
    c = eager.arange(12.0).reshape(3, 4)
    m = c.to("meta")
    assert m.is_meta and not c.is_meta and m.device == eager.device("meta")
    assert m.to("meta") is m and m.to(device="meta:0") is m
    assert str(m.device) == "meta" and repr(m.device) == "device(type='meta')"
    assert eager.device("meta", 0) == torch.device("meta", 0).__str__()
    t = torch.arange(12.0).reshape(3, 4).to("meta")
    _same_meta(m, t)
    for fn in (
        lambda x: x.zero_(),
        lambda x: x.fill_(2.0),
        lambda x: x.mul_(3),
        lambda x: x.copy_(c if isinstance(x, Tensor) else torch.ones(3, 4)),
        lambda x: x.uniform_(),
        lambda x: x.normal_(),
        lambda x: x[1:].add_(1),
    ):
        assert fn(m).is_meta
        fn(t)
    assert m.untyped_storage().nbytes() == t.untyped_storage().nbytes() == 48
    assert np.array_equal(c.numpy(), np.arange(12.0, dtype=np.float32).reshape(3, 4))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        m + c
    _same_meta(m + eager.tensor(2.0), t + torch.tensor(2.0))  # a 0-d CPU tensor joins in


def test_meta_draws_no_random_numbers():
    eager.manual_seed(0)
    a = eager.randn(5)
    eager.manual_seed(0)
    eager.randn(100, device="meta")
    eager.rand(7, device="meta").uniform_().normal_()
    with eager.device("meta"):
        wnn.Linear(20, 30)
        wnn.Conv2d(3, 4, 3)
    b = eager.randn(5)
    assert np.array_equal(a.numpy(), b.numpy())


def _module_state(m, shapes=True):
    """(name, shape, dtype, device, requires_grad) of each parameter and buffer (no shape for
    the uninitialised parameters of a lazy module)."""
    return [
        (
            n,
            tuple(p.shape) if shapes else None,
            str(p.dtype).split(".")[-1],
            p.device.type,
            p.requires_grad,
        )
        for n, p in list(m.named_parameters()) + list(m.named_buffers())
    ]


def test_modules_on_meta_by_context_and_default_device():
    with eager.device("meta"):
        w = wnn.Sequential(wnn.Linear(4, 8), wnn.ReLU(), wnn.LayerNorm(8), wnn.Linear(8, 2))
        x = eager.randn(5, 4)
    with torch.device("meta"):
        t = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2)
        )
        tx = torch.randn(5, 4)
    assert _module_state(w) == _module_state(t)
    _same_meta(w(x), t(tx))
    assert eager.zeros(2).device.type == "cpu"
    eager.set_default_device("meta")
    try:
        assert eager.get_default_device() == eager.device("meta")
        _same_meta(eager.zeros(2, 3), torch.zeros(2, 3, device="meta"))
        assert wnn.Linear(2, 3).weight.is_meta
    finally:
        eager.set_default_device(None)
    assert eager.zeros(2).device.type == "cpu"


def test_module_to_meta_and_to_empty():
    w = wnn.Linear(3, 4).to("meta")
    assert w.weight.is_meta and isinstance(w.weight, wnn.Parameter)
    r = w.to_empty(device="cpu")
    assert r is w and w.weight.device.type == "cpu" and w.weight.requires_grad
    t = torch.nn.Linear(3, 4, device="meta").to_empty(device="cpu")
    assert _module_state(w) == _module_state(t)
    w.reset_parameters()
    assert float(w.weight.abs().max()) <= 1 / 3**0.5
    b = wnn.BatchNorm1d(3, device="meta").to_empty(device="cpu")
    tb = torch.nn.BatchNorm1d(3, device="meta").to_empty(device="cpu")
    assert _module_state(b) == _module_state(tb)


def test_autograd_on_meta():
    def run(lib, nn):
        with lib.device("meta"):
            m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
            x = lib.randn(6, 4, requires_grad=True)
        y = m(x).t().exp()[1:].sum()
        y.backward()
        g = lib.autograd.grad((x**2).mean(), x, create_graph=True)[0]
        return [x.grad, g] + [p.grad for p in m.parameters()]

    for gw, gt in zip(run(eager, wnn), run(torch, torch.nn)):
        assert (
            gw.is_meta
            and tuple(gw.shape) == tuple(gt.shape)
            and gw.dtype.name == str(gt.dtype).removeprefix("torch.")
        )


# ---------------------------------------------------------------- every registry op


def _leaves(r):
    if isinstance(r, Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [x for y in r for x in _leaves(y)]
    return []


def _ops():
    return [op for op in ir.REGISTRY.values() if op.name != "_to_copy"]


@pytest.mark.parametrize("op", _ops(), ids=lambda op: op.name)
def test_registry_op_on_meta_matches_cpu(op):
    """The op's meta result has its CPU result's shape and dtype (a view also its strides);
    an op whose result's shape depends on the data raises NotImplementedError, as PyTorch's."""
    dts = dtypes_of(op)
    dt = D.float32 if D.float32 in dts else dts[0]
    checked = 0
    for ins, attrs in samples(op, dt):
        attrs = {**_default_attrs(op), **attrs}
        cpu = tuple(eager.tensor(x) if isinstance(x, np.ndarray) else x for x in ins)
        try:
            ref = apply(op, cpu, dict(attrs))
        except (RuntimeError, ValueError, TypeError, IndexError):
            continue  # (a sample the op rejects on the CPU too)
        meta = tuple(x.to("meta") if isinstance(x, Tensor) else x for x in cpu)
        if op.dynamic_shape or op.name in ("nonzero", "unique"):
            with pytest.raises(NotImplementedError, match="Meta tensors"):
                apply(op, meta, dict(attrs))
            return
        got = apply(op, meta, dict(attrs))
        for a, b in zip(_leaves(ref), _leaves(got), strict=True):
            assert b.is_meta and tuple(a.shape) == tuple(b.shape) and a.dtype is b.dtype
            if op.kind == "view":
                assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
        checked += 1
    if op.kind not in ("random",):
        assert checked or not list(samples(op, dt))


# ---------------------------------------------------------------- module factory keywords

_ARGS = {
    "AdaptiveLogSoftmaxWithLoss": (8, 10, [4]),
    "Bilinear": (3, 4, 5),
    "Embedding": (10, 3),
    "EmbeddingBag": (10, 3),
    "GRUCell": (3, 4),
    "LSTMCell": (3, 4),
    "RNNCell": (3, 4),
    "GroupNorm": (2, 4),
    "LayerNorm": (4,),
    "RMSNorm": (4,),
    "Linear": (3, 4),
    "LinearCrossEntropyLoss": (4, 5),
    "MultiheadAttention": (8, 2),
    "PReLU": (),
    "Transformer": (8, 2, 1, 1, 16),
    "TransformerDecoderLayer": (8, 2, 16),
    "TransformerEncoderLayer": (8, 2, 16),
    "GRU": (3, 4),
    "LSTM": (3, 4),
    "RNN": (3, 4),
}


def _factory_modules():
    names = []
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if (
            not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module))
            or name in ("RNNBase", "RNNCellBase", "SyncBatchNorm")
            or name.startswith("_")
        ):
            continue
        try:
            params = inspect.signature(cls.__init__).parameters
        except (TypeError, ValueError):
            continue
        if "device" in params or name in ("GRU", "LSTM", "RNN"):
            names.append(name)
    return names


def _args(name):
    if name in _ARGS:
        return _ARGS[name]
    if "Conv" in name:
        return (2, 4, 3) if not name.startswith("Lazy") else (4, 3)
    if "Norm" in name:
        return (4,) if not name.startswith("Lazy") else ()
    return (3, 4) if name == "Lazy" + "Linear" or not name.startswith("Lazy") else (4,)


@pytest.mark.parametrize("name", _factory_modules())
def test_module_factory_kwargs(name):
    """`Module(..., device="meta", dtype=float64)`, `Module(..., dtype=float64)` and
    `Module(...)` under `with device("meta")`: every parameter and buffer where PyTorch puts
    it, of PyTorch's shapes and dtypes (integer buffers keep theirs)."""
    args = (4,) if name == "LazyLinear" else _args(name)
    shapes = not name.startswith("Lazy")
    t = getattr(torch.nn, name)(*args, device="meta", dtype=torch.float64)
    w = getattr(wnn, name)(*args, device="meta", dtype=eager.float64)
    assert _module_state(w, shapes) == _module_state(t, shapes)
    w = getattr(wnn, name)(*args, dtype=eager.float64)
    t = getattr(torch.nn, name)(*args, dtype=torch.float64)
    assert _module_state(w, shapes) == _module_state(t, shapes)
    with eager.device("meta"):  # the default device: every tensor the module makes
        w = getattr(wnn, name)(*args)
    with torch.device("meta"):
        t = getattr(torch.nn, name)(*args)
    assert _module_state(w, shapes) == _module_state(t, shapes)


def test_advanced_indexing_and_embedding_on_meta():
    w, t = eager.empty(5, 4, device="meta"), torch.empty(5, 4, device="meta")
    for key in (
        lambda lib: lib.tensor([0, 2]),
        lambda lib: lib.tensor([1, 3], device="meta"),
        lambda lib: [0, 4],
    ):
        _same_meta(w[key(eager)], t[key(torch)])
        _same_meta(w[key(eager), 1:], t[key(torch), 1:])
    ew, et = wnn.Embedding(10, 3, device="meta"), torch.nn.Embedding(10, 3, device="meta")
    _same_meta(
        ew(eager.tensor([[1, 2, 9]], device="meta")).detach(),
        et(torch.tensor([[1, 2, 9]], device="meta")).detach(),
    )


def test_init_functions_draw_nothing_on_meta():
    init = wnn.init
    fills = (
        init.uniform_,
        init.normal_,
        init.trunc_normal_,
        init.xavier_uniform_,
        init.xavier_normal_,
        init.kaiming_uniform_,
        init.kaiming_normal_,
        init.orthogonal_,
        lambda t: init.sparse_(t, 0.5),
        init.zeros_,
        init.ones_,
        init.eye_,
    )
    eager.manual_seed(3)
    a = eager.rand(4)
    eager.manual_seed(3)
    for fill in fills:
        m = eager.empty(4, 5, device="meta")
        assert fill(m) is m and m.is_meta
    assert init.dirac_(eager.empty(4, 4, 3, device="meta")).is_meta
    assert np.array_equal(eager.rand(4).numpy(), a.numpy())


def test_skip_init_builds_on_meta():
    eager.manual_seed(5)
    a = eager.rand(3)
    eager.manual_seed(5)
    for name in ("Linear", "Conv2d", "LayerNorm"):
        args = {"Linear": (3, 4), "Conv2d": (2, 4, 3), "LayerNorm": (4,)}[name]
        w = wnn.utils.skip_init(getattr(wnn, name), *args)
        t = torch.nn.utils.skip_init(getattr(torch.nn, name), *args)
        assert _module_state(w) == _module_state(t)
    assert np.array_equal(eager.rand(3).numpy(), a.numpy())  # nothing drawn
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        wnn.utils.skip_init(wnn.ReLU)


def test_save_load_pickle_deepcopy_meta():
    import copy
    import io
    import pickle

    w = eager.empty(3, 4, device="meta")[1:].t()
    t = torch.empty(3, 4, device="meta")[1:].t()
    bw, bt = io.BytesIO(), io.BytesIO()
    eager.save({"v": w, "sd": wnn.Linear(2, 3, device="meta").state_dict()}, bw)
    torch.save({"v": t, "sd": torch.nn.Linear(2, 3, device="meta").state_dict()}, bt)
    bw.seek(0)
    bt.seek(0)
    lw, lt = eager.load(bw), torch.load(bt)
    v = lw["v"]  # (PyTorch's loaded meta view forgets its storage offset; wick's keeps it)
    assert v.is_meta and v.stride() == lt["v"].stride() == w.stride() and v.shape == w.shape
    assert v.storage_offset() == w.storage_offset() == 4
    for k in lt["sd"]:
        _same_meta(lw["sd"][k], lt["sd"][k])
    p = pickle.loads(pickle.dumps(w))
    assert p.is_meta and p.stride() == w.stride() and p.shape == w.shape
    assert copy.deepcopy(w).is_meta and tuple(copy.deepcopy(w).shape) == (4, 2)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizer_steps_on_meta(name):
    """A training step of a model built on meta: meta gradients, and optimizer state where
    PyTorch keeps it (meta moments, a CPU step count)."""

    def run(lib):
        with lib.device("meta"):
            m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
            x = lib.randn(3, 4)
        kw = {"lr": 0.1, **({"momentum": 0.9} if name == "SGD" else {})}
        opt = getattr(lib.optim, name)(m.parameters(), **kw)
        for _ in range(2):
            m(x).sum().backward()
            opt.step()
            opt.zero_grad()
        return m, {
            k: (v.device.type, tuple(v.shape))
            for k, v in opt.state[m[0].weight].items()
            if isinstance(v, (Tensor, torch.Tensor))
        }

    (mw, sw), (mt, st) = run(eager), run(torch)
    assert _module_state(mw) == _module_state(mt) and sw == st


# ---------------------------------------------------------------- module forwards on meta

_FORWARD_CASES = [
    ("Conv1d", (2, 4, 3), (2, 2, 9)),
    ("Conv2d", (2, 4, 3), (2, 2, 7, 7)),
    ("Conv3d", (2, 4, 3), (1, 2, 5, 5, 5)),
    ("ConvTranspose1d", (2, 4, 3), (2, 2, 9)),
    ("ConvTranspose2d", (2, 4, 3, 2), (2, 2, 5, 5)),
    ("BatchNorm2d", (3,), (2, 3, 4, 4)),
    ("GroupNorm", (2, 4), (2, 4, 3)),
    ("LayerNorm", (5,), (2, 3, 5)),
    ("InstanceNorm1d", (3,), (2, 3, 6)),
    ("RMSNorm", (5,), (2, 5)),
    ("LSTM", (3, 5, 2), (4, 2, 3)),
    ("GRU", (3, 5), (4, 2, 3)),
    ("RNN", (3, 5), (4, 2, 3)),
    ("LSTMCell", (3, 5), (2, 3)),
    ("GRUCell", (3, 5), (2, 3)),
    ("MaxPool2d", (2,), (2, 3, 6, 6)),
    ("AvgPool1d", (2,), (2, 3, 6)),
    ("AdaptiveAvgPool2d", ((2, 3),), (2, 3, 7, 7)),
    ("Upsample", (None, 2), (1, 2, 3, 3)),
    ("PixelShuffle", (2,), (1, 8, 3, 3)),
    ("Flatten", (), (2, 3, 4)),
    ("Dropout", (0.3,), (4, 5)),
    ("GELU", (), (3, 4)),
    ("Softmax", (1,), (3, 4)),
    ("PReLU", (), (3, 4)),
    ("Bilinear", (3, 4, 5), None),
    ("Embedding", (10, 3), None),
    ("TransformerEncoderLayer", (8, 2, 16), (5, 2, 8)),
    ("MultiheadAttention", (8, 2), None),
]


def _forward(lib, nn, name, args, shape):
    """A module built under `with device("meta")` called on meta inputs: its outputs' metadata."""
    with lib.device("meta"):
        m = getattr(nn, name)(*args)
        if name == "Bilinear":
            out = m(lib.randn(2, 3), lib.randn(2, 4))
        elif name == "Embedding":
            out = m(lib.tensor([[1, 2]]))
        elif name == "MultiheadAttention":
            out = m(*[lib.randn(3, 2, 8)] * 3)
        else:
            out = m(lib.randn(*shape))
    outs = out if isinstance(out, tuple) else (out,)
    flat = []
    for o in outs:
        flat += list(o) if isinstance(o, tuple) else [o]
    return [
        (tuple(o.shape), str(o.dtype).split(".")[-1], o.device.type) for o in flat if o is not None
    ]


@pytest.mark.parametrize("name,args,shape", _FORWARD_CASES, ids=lambda x: str(x))
def test_module_forward_on_meta(name, args, shape):
    assert _forward(eager, wnn, name, args, shape) == _forward(torch, torch.nn, name, args, shape)


def test_stft_istft_and_index_writes_on_meta():
    w = eager.ones(2, 40, device="meta")
    t = torch.ones(2, 40, device="meta")
    _same_meta(
        eager.stft(w, 16, hop_length=4, return_complex=True),
        torch.stft(t, 16, hop_length=4, window=torch.ones(16, device="meta"), return_complex=True),
    )
    a = w[0].stft(8, win_length=6, center=False, onesided=False, return_complex=False)
    b = t[0].stft(
        8,
        win_length=6,
        center=False,
        onesided=False,
        return_complex=False,
        window=torch.ones(6, device="meta"),
    )  # (its strides: a transposed result)
    assert a.is_meta and tuple(a.shape) == tuple(b.shape) and a.dtype.name == "float32"
    s = eager.stft(eager.ones(2, 40), 16, hop_length=4, return_complex=True)
    y = eager.istft(s.to("meta"), 16, hop_length=4, length=38)  # (PyTorch's: aten::equal)
    ref = eager.istft(s, 16, hop_length=4, length=38)
    assert y.is_meta and y.shape == ref.shape and y.dtype == ref.dtype
    for lib in (eager, torch):  # CPU indices and list values into a meta tensor
        m = lib.zeros(3, 4, device="meta")
        m[lib.tensor([0, 2]), 1] = 5.0
        m.index_put_((lib.tensor([1]),), lib.ones(4, device="meta"))
        assert m.is_meta and m.fill_diagonal_(1.0).is_meta


# ---------------------------------------------------------------- the nn sweeps' cases on meta


def _nn_sweep_cases():
    import test_nn_layers_sweep as S  # (the nn.functional and module sweeps' tables)
    import test_nn_layers_sweep_modules as SM

    cases = []
    for table in ("CONV", "POOL", "LP", "NORM", "ACT", "INTERP", "GRID"):
        for case in getattr(S, table):
            if callable(case[1]):
                cases.append(("F", case[0], case[1], case[2]))
    for name, args, kw, shapes in SM.CASES:
        cases.append(("M", name, (args, kw), shapes))
    return S, cases


_S, _NN_CASES = _nn_sweep_cases()


def _outputs_meta(out):
    return [
        (tuple(o.shape), str(o.dtype).split(".")[-1], o.device.type)
        for o in _leaves_any(out)
        if hasattr(o, "shape")
    ]


def _leaves_any(r):
    return [x for y in r for x in _leaves_any(y)] if isinstance(r, (tuple, list)) else [r]


def _run_nn_case(kind, fn, shapes, ns, lib):
    if kind == "F":
        return fn(ns, *[lib.empty(*s, device="meta", dtype=lib.float64) for s in shapes])
    (args, kw), name = fn
    with lib.device("meta"):
        return getattr(lib.nn, name)(*args, **kw)(*[lib.empty(*s) for s in shapes])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", _NN_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_nn_sweep_cases_on_meta(case):
    """Every case of the nn sweeps (functional: conv, pooling, norms, activations,
    interpolation, grid_sample; modules) on meta inputs: PyTorch's output metadata, or an
    error where PyTorch has one."""
    kind, name, fn, shapes = case
    fn = (fn, name) if kind == "M" else fn
    try:
        ref = _outputs_meta(_run_nn_case(kind, fn, shapes, _S.T, torch))
    except Exception:  # noqa: BLE001 (PyTorch has no meta kernel: any error will do)
        with pytest.raises(Exception):  # noqa: B017
            _run_nn_case(kind, fn, shapes, _S.E, eager)
        return
    assert _outputs_meta(_run_nn_case(kind, fn, shapes, _S.E, eager)) == ref


# ---------------------------------------------------------------- losses on meta


def _loss_cases(L, F):
    """Loss calls on meta inputs (PyTorch has no meta kernel for ctc_loss and
    gaussian_nll_loss calls .item(): there wick's give a meta result)."""
    e = lambda *s, dt=None: L.empty(*s, device="meta", **({"dtype": dt} if dt else {}))
    i = lambda hi, *s: L.zeros(*s, dtype=L.int64, device="meta")
    return {
        "mse": lambda: F.mse_loss(e(3, 4), e(3, 4)),
        "l1": lambda: F.l1_loss(e(3, 4), e(3, 4), reduction="none"),
        "ce": lambda: F.cross_entropy(e(3, 5), i(5, 3)),
        "ce_probs": lambda: F.cross_entropy(e(3, 5), e(3, 5), label_smoothing=0.1),
        "ce_2d": lambda: F.cross_entropy(e(2, 5, 4, 4), i(5, 2, 4, 4), reduction="none"),
        "nll": lambda: F.nll_loss(e(3, 5), i(5, 3)),
        "bce": lambda: F.binary_cross_entropy(e(3, 4), e(3, 4)),
        "bcel": lambda: F.binary_cross_entropy_with_logits(e(3, 4), e(3, 4), pos_weight=e(4)),
        "kl": lambda: F.kl_div(e(3, 4), e(3, 4), reduction="batchmean"),
        "smooth": lambda: F.smooth_l1_loss(e(3), e(3)),
        "huber": lambda: F.huber_loss(e(3, 2), e(3, 2), reduction="sum"),
        "cos": lambda: F.cosine_embedding_loss(e(3, 4), e(3, 4), e(3)),
        "margin": lambda: F.margin_ranking_loss(e(3), e(3), e(3)),
        "triplet": lambda: F.triplet_margin_loss(e(3, 4), e(3, 4), e(3, 4)),
        "poisson": lambda: F.poisson_nll_loss(e(3), e(3)),
        "gauss": lambda: F.gaussian_nll_loss(e(3, 2), e(3, 2), e(3, 2)),
        "hinge": lambda: F.hinge_embedding_loss(e(3), e(3)),
        "multimargin": lambda: F.multi_margin_loss(e(3, 5), i(5, 3)),
        "soft": lambda: F.soft_margin_loss(e(3), e(3)),
        "mlsm": lambda: F.multilabel_soft_margin_loss(e(3, 4), e(3, 4)),
        "ctc": lambda: F.ctc_loss(
            e(6, 2, 5).log_softmax(2),
            L.ones(2, 3, dtype=L.int64, device="meta"),
            L.tensor([6, 6], device="meta"),
            L.tensor([3, 3], device="meta"),
        ),
        "mlm": lambda: F.multilabel_margin_loss(e(3, 4), i(4, 3, 4)),
    }


@pytest.mark.parametrize("name", list(_loss_cases(torch, torch.nn.functional)))
def test_losses_on_meta(name):
    """Value checks (class indices in range, probabilities in [0, 1]) read no data on meta."""
    w = _loss_cases(eager, eager.nn.functional)[name]()
    try:
        t = _loss_cases(torch, torch.nn.functional)[name]()
    except (NotImplementedError, RuntimeError):
        assert w.is_meta and w.dtype is eager.float32
        return
    assert (tuple(w.shape), w.dtype.name, w.device.type) == (
        tuple(t.shape),
        str(t.dtype).removeprefix("torch."),
        t.device.type,
    )


def test_assert_close_compares_metadata_on_meta():
    for lib in (eager, torch):
        lib.testing.assert_close(lib.empty(3, 4, device="meta"), lib.ones(3, 4, device="meta"))
        with pytest.raises(AssertionError, match="shape"):
            lib.testing.assert_close(lib.empty(3, 4, device="meta"), lib.empty(4, device="meta"))
        with pytest.raises(AssertionError, match="dtype"):
            lib.testing.assert_close(
                lib.empty(3, device="meta"), lib.empty(3, device="meta", dtype=lib.float64)
            )

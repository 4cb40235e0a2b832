"""Model code that capture (or eager under it) got wrong or broke on (issue 14's bar, held-out
set R: ordinary model code as ML engineers write it today, /work/notes/capture_bar/REPORT_R.md).
Each case is built by `case(lib)` for `lib` = wick's `eager` or the real torch; it runs eagerly
and compiled from the same seed (capture, then the cache hit), comparing outputs (values and
dtypes) and the state it names; its graph and break counts from `capture.explain` are checked,
and when torch is installed torch._dynamo.explain's counts on the same code are too.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from capture_cases import case_tests, same
from capture_cases import rand as _rand

import capture
import eager


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in [k] + _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [type(v).__qualname__] + [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    same(a, b, _flat)


# ---------------------------------------------------------------- torch._foreach_*


def ema_foreach(torch):
    """An EMA of a model's weights by `torch._foreach_mul_` / `_foreach_add_(alpha=)` under
    no_grad, buffers copied in a loop (eager had no `_foreach_*`: AttributeError)."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    ema = copy.deepcopy(model).eval()
    count = [0]

    @torch.no_grad()
    def update(decay=0.9):
        count[0] += 1
        d = decay * (1 - math.exp(-count[0] / 20))
        ema_p = list(ema.parameters())
        torch._foreach_mul_(ema_p, d)
        torch._foreach_add_(ema_p, [p.detach() for p in model.parameters()], alpha=1 - d)
        for b_ema, b in zip(ema.buffers(), model.buffers()):
            b_ema.copy_(b)

    def step(x):
        out = model(x)
        update()
        return out

    return step, (_rand(torch, 5, 4),), lambda: list(ema.state_dict().values()) + count


def foreach_optimizer_step(torch):
    """A hand-written Adam-like step on parameter lists: `_foreach_lerp_`, `_foreach_addcmul_`,
    `_foreach_sqrt`, `_foreach_add_` of a number, `_foreach_addcdiv_` with a list of numbers,
    `_foreach_norm`, `_foreach_maximum`."""
    params = [torch.zeros(3, requires_grad=True), torch.ones(2, 2, requires_grad=True)]
    exp_avg = [torch.zeros_like(p) for p in params]
    exp_sq = [torch.zeros_like(p) for p in params]

    def step(g1, g2):
        grads = [g1, g2]
        with torch.no_grad():
            torch._foreach_lerp_(exp_avg, grads, 0.1)
            torch._foreach_mul_(exp_sq, 0.99)
            torch._foreach_addcmul_(exp_sq, grads, grads, value=0.01)
            denom = torch._foreach_sqrt(exp_sq)
            torch._foreach_add_(denom, 1e-8)
            torch._foreach_addcdiv_(params, exp_avg, denom, [-0.1, -0.2])
            norms = torch._foreach_norm(grads)
            clipped = torch._foreach_maximum(grads, 0.0)
        return torch.stack(list(norms)), clipped

    return step, (_rand(torch, 3), _rand(torch, 2, 2, seed=2)), \
        lambda: params + exp_avg + exp_sq


# ---------------------------------------------------------------- legacy constructor, numpy


def nerf_legacy_tensor_constant(torch):
    """NeRF's raw2outputs: `torch.Tensor([1e10]).expand(...)` in the frame (was a break: "call to
    Tensor"), `torch.Tensor(2, 3).fill_(...)` of sizes."""
    def render(z_vals, raw):
        dists = z_vals[..., 1:] - z_vals[..., :-1]
        dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
        alpha = 1.0 - torch.exp(-torch.relu(raw) * dists)
        return alpha, torch.Tensor(2, 3).fill_(0.5) + alpha.sum()

    return render, (_rand(torch, 4, 5), _rand(torch, 4, 5, seed=3)), lambda: []


def dino_numpy_schedule(torch):
    """DINO's teacher temperature `self.teacher_temp_schedule[epoch]` (a numpy array attribute
    at a constant index: was a break, and dividing by the numpy float64 after it another), a
    numpy float32 constant and a global numpy array's item as operands."""
    F = torch.nn.functional

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("center", torch.zeros(1, 5))
            self.teacher_temp_schedule = np.concatenate((np.linspace(0.04, 0.07, 2),
                                                         np.ones(3) * 0.07))

        def forward(self, student, teacher, epoch):
            temp = self.teacher_temp_schedule[epoch]
            q = F.softmax((teacher - self.center) / temp, dim=-1)
            loss = torch.sum(-q * F.log_softmax(student / np.float32(0.1), dim=-1), dim=-1)
            self.center = self.center * 0.9 + teacher.mean(0, keepdim=True) * 0.1
            return loss.mean() * _SCALE[1], temp

    m = Loss()
    s, t = _rand(torch, 4, 5), _rand(torch, 4, 5, seed=4)
    return m, (s, t, 1), lambda: [m.center], [(s, t, 1), (s, t, 1), (s, t, 3)]


_SCALE = np.array([0.5, 2.0], np.float32)


# ---------------------------------------------------------------- list slice stores


def pointnet_index_points(torch):
    """PointNet++'s index_points: `view_shape[1:] = [1] * (len(view_shape) - 1)` on a list made
    from a shape (a slice store into a list was a break), then batch-index gathering; and a
    slice store into a list argument is replayed on the caller's list."""
    def index_points(points, idx, log):
        B = points.shape[0]
        view_shape = list(idx.shape)
        view_shape[1:] = [1] * (len(view_shape) - 1)
        repeat_shape = list(idx.shape)
        repeat_shape[0] = 1
        log[:2] = (view_shape, repeat_shape)
        batch_indices = torch.arange(B, dtype=torch.long).view(view_shape).repeat(repeat_shape)
        return points[batch_indices, idx, :]

    log = ["a", "b", "c"]
    idx = torch.tensor([[0, 3, 1], [2, 2, 0]])
    return index_points, (_rand(torch, 2, 4, 3), idx, log), lambda: list(log)

# ---------------------------------------------------------------- in-place on a diagonal view


def barlow_twins_diagonal(torch):
    """Barlow Twins: `c.div_(n)`, `torch.diagonal(c).add_(-1).pow_(2).sum()` (in place on the
    diagonal view of an intermediate: was a break, then two more in the resumed frames), then
    off_diagonal(c) (flatten/view/slice) reads the written matrix; c is returned too."""
    def off_diagonal(x):
        n, m = x.shape
        return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()

    def loss(z1, z2):
        c = z1.T @ z2
        c.div_(z1.shape[0])
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        return on_diag + 0.005 * off_diag, c

    return loss, (_rand(torch, 6, 4), _rand(torch, 6, 4, seed=3)), lambda: []


def reshape_copy_then_write(torch):
    """`c.flatten()[:-1].view(3, 5)[:, 1:].flatten()` copies eagerly (no view has those strides):
    an in-place write on it must not reach `c` (the compiled graph wrote it back through the
    chain: a wrong `c`); a reshape that is a view still does."""
    def f(a):
        c = a * 2
        v = c.flatten()[:-1].view(3, 5)[:, 1:].flatten()
        v.pow_(2)
        w = c.view(-1)[2:6].reshape(2, 2)
        w.mul_(-1)
        return c, v, w

    return f, (_rand(torch, 4, 4),), lambda: []


def clip_attention_pool(torch):
    """CLIP's AttentionPool2d: F.multi_head_attention_forward with separate q/k/v weights and an
    out_proj to another width (eager reshaped the output to embed_dim: RuntimeError; compiled,
    the function's attribute-holder object was a break)."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    q, k, v, c = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 5)

    def pool(x):
        x = x.flatten(start_dim=2).permute(2, 0, 1)
        x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)
        out, _ = F.multi_head_attention_forward(
            query=x[:1], key=x, value=x, embed_dim_to_check=8, num_heads=2,
            q_proj_weight=q.weight, k_proj_weight=k.weight, v_proj_weight=v.weight,
            in_proj_weight=None, in_proj_bias=torch.cat([q.bias, k.bias, v.bias]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
            out_proj_weight=c.weight, out_proj_bias=c.bias, use_separate_proj_weight=True,
            training=False, need_weights=False)
        return out.squeeze(0)

    return pool, (_rand(torch, 2, 8, 3, 3),), lambda: []


def swav_prototype_normalize(torch):
    """SwAV's prototype normalization: `w = prototypes.weight.data.clone(); w = F.normalize(w);
    prototypes.weight.copy_(w)` under no_grad, then the layer is used (the `.data` alias that
    capture keeps made the write look aliased: a break)."""
    F = torch.nn.functional
    torch.manual_seed(0)
    proto = torch.nn.Linear(6, 5, bias=False)

    def step(z):
        with torch.no_grad():
            w = proto.weight.data.clone()
            w = F.normalize(w, dim=1, p=2)
            proto.weight.copy_(w)
        return proto(F.normalize(z, dim=1))

    return step, (_rand(torch, 4, 6),), lambda: [proto.weight]


CASES = [
    (ema_foreach, 1, 0, 1, 0),
    (foreach_optimizer_step, 1, 0, 1, 0),
    (nerf_legacy_tensor_constant, 1, 0, 1, 0),
    (dino_numpy_schedule, 1, 0, 1, 0),
    (pointnet_index_points, 1, 0, 1, 0),
    (barlow_twins_diagonal, 1, 0, 1, 0),
    (reshape_copy_then_write, 1, 0, 1, 0),
    (clip_attention_pool, 1, 0, 1, 0),
    (swav_prototype_normalize, 1, 0, 1, 0),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_foreach_like_torch():
    """`_foreach_*` results (out-of-place tuples, in-place lists) equal torch's."""
    torch = pytest.importorskip("torch")
    out = {}
    for lib in (eager, torch):
        a = [lib.tensor([1.0, 2.0]), lib.tensor([[0.5], [3.0]])]
        r = [lib._foreach_exp(a), lib._foreach_sub(a, [1.0, 2.0]), lib._foreach_pow(2.0, a),
             lib._foreach_div(a, lib.tensor(4.0)), lib._foreach_clamp_max(a, 1.5),
             lib._foreach_minimum(a, a), lib._foreach_max(a)]
        assert lib._foreach_neg_(a) is a
        out[lib.__name__] = [x.numpy() for t in r + [a] for x in t]
    for w, t in zip(out["eager"], out["torch"]):
        np.testing.assert_allclose(w, t, rtol=1e-6)
    with pytest.raises(RuntimeError, match="same number"):
        eager._foreach_add([eager.ones(1)], [eager.ones(1), eager.ones(1)])


# ---------------------------------------------------------------- legacy Tensor(*sizes)


@pytest.mark.parametrize("args", [(3,), (2, 3), ("size",), ([3],), ([[1, 2], [3, 4]],),
                                  ((2, 3),), ([True, False],)])
def test_legacy_tensor_constructor_as_torch(args):
    """`torch.Tensor(2, 3)` / `torch.Tensor(torch.Size(...))` make a float tensor of that shape
    (VQ-VAE's `nn.Parameter(torch.Tensor(n, d))`; eager raised TypeError, and `Tensor(3)` was
    the 0-d int 3); `torch.Tensor(data)` takes the default float dtype."""
    w = eager.Tensor(*[eager.Size([2, 3]) if a == "size" else a for a in args])
    assert w.dtype is eager.float32
    if any(isinstance(a, (list, tuple)) for a in args):
        np.testing.assert_array_equal(w.numpy(), np.array(args[0], np.float32))
    torch = pytest.importorskip("torch")
    t = torch.Tensor(*[torch.Size([2, 3]) if a == "size" else a for a in args])
    assert tuple(w.shape) == tuple(t.shape) and str(t.dtype) == "torch.float32"


def test_legacy_tensor_constructor_keeps_data_forms():
    """Arrays, tensors and `copy_` of a number keep working (eager's own uses)."""
    assert eager.Tensor(np.array([1, 2])).dtype is eager.int64
    assert eager.Tensor(eager.tensor([True])).dtype is eager.bool
    np.testing.assert_array_equal(eager.zeros(2).copy_(3).numpy(), [3.0, 3.0])
    with pytest.raises(TypeError):
        eager.Tensor(2, "a")


def test_numpy_array_item_guarded_on_value():
    """A numpy array's item read at capture is guarded on its value: writing the array between
    calls recompiles (the result follows eager's), and an unchanged array hits the cache."""
    sched = np.array([0.5, 0.25, 0.125])

    def f(x, i):
        return x / sched[i]

    compiled = capture.compile(f)
    x = eager.ones(3)
    np.testing.assert_array_equal(compiled(x, 1).numpy(), [4.0, 4.0, 4.0])
    sched[1] = 0.5
    np.testing.assert_array_equal(compiled(x, 1).numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(compiled(x, 1).numpy(), [2.0, 2.0, 2.0])
    assert len(compiled.__wick_compiled__.entries) == 2


def test_diagonal_write_gradients_as_eager():
    """The gradients through an in-place write on a diagonal view of an intermediate (the
    written value's and the untouched part's) equal eager's."""
    fn, (a, b), _ = barlow_twins_diagonal(eager)
    grads = []
    for f in (fn, capture.compile(fn)):
        x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
        loss, c = f(x, y)
        (loss + c.sum()).backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    for w, g in zip(*grads):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_mha_forward_out_proj_width_as_torch():
    """F.multi_head_attention_forward's output takes out_proj_weight's rows as its width."""
    torch = pytest.importorskip("torch")
    outs = []
    for lib in (eager, torch):
        fn, args, _ = clip_attention_pool(lib)
        outs.append(fn(*args))
    assert tuple(outs[0].shape) == tuple(outs[1].shape) == (2, 5)


# ---------------------------------------------------------------- a compiled optimizer step


@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", {"amsgrad": True}),
                                     ("RMSprop", {"momentum": 0.9}), ("Adagrad", {}),
                                     ("NAdam", {}), ("Adamax", {})])
def test_compiled_step_one_entry_like_eager(name, kw):
    """`torch.compile(step)` around `opt.step()` (the compiled-optimizer tutorial): the first
    step's state is made before the graph (as Dynamo's `_init_group` while tracing), so the
    steps after it hit the same entry (was 2 entries: torch.compile makes 1 graph); parameters
    and state equal eager's step after step."""
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        lin = eager.nn.Linear(3, 2)
        opt = getattr(eager.optim, name)(lin.parameters(), lr=0.05, **kw)
        def step_fn():
            opt.step()

        step = capture.compile(step_fn) if compiled else step_fn
        for i in range(3):
            lin(eager.ones(4, 3) * (i + 1)).pow(2).sum().backward()
            step()
            opt.zero_grad()
        state = [v for p in lin.parameters() for v in opt.state[p].values()]
        runs.append([p.detach() for p in lin.parameters()] + state)
        if compiled:
            assert len(step.__wick_compiled__.entries) == 1
    _same(runs[0], runs[1])


@pytest.mark.parametrize("name", ["Adam", "SGD"])
def test_compiled_bound_step_one_entry(name):
    """`compile(opt.step)` (the bound method): the hook wrapper's `_in_step` flag exists from
    the optimizer's construction, so the first step setting it does not recompile (was 2
    entries: "'_in_step' not in self.__dict__")."""
    lin = eager.nn.Linear(3, 2)
    opt = getattr(eager.optim, name)(lin.parameters(), lr=0.05)
    step = capture.compile(opt.step)
    for _ in range(3):
        lin(eager.ones(4, 3)).pow(2).sum().backward()
        step()
        opt.zero_grad()
    assert len(step.__wick_compiled__.entries) == 1
    assert opt._opt_called and not opt._in_step

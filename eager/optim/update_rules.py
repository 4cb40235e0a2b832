"""The optimizers' update rules, each written once: SGD, Adam/AdamW, RMSprop, Adagrad,
Adadelta, Adamax, NAdam and RAdam (PyTorch's `_single_tensor_<name>` algorithms, in their order
of operations, so float32 results agree with PyTorch's to rounding).

Each rule runs one parameter's step on an `ops` namespace, and three namespaces run it:
- `TensorOps` here: eager Tensors, the in-place ops as Tensor methods (version counters,
  autograd's checks and dispatch hooks see every op, as PyTorch's step);
- `arrays.ArrayOps`: the numpy arrays of plain CPU tensors, in-place ops as `out=` writes
  with the owners' version counters bumped per in-place op (the fast path of a small model's
  training step: no Tensor per intermediate);
- `capture.optim_forms.GraphOps`: registry ops recorded into a captured graph, in-place ops
  as functional ones whose results the capture writes back after the graph.

Conventions that make one text serve all three: an op ending in `_` updates its first operand
in place and returns it, and a rule always rebinds its result (`m = ops.lerp_(m, g, w)`), so
the functional namespace's new value flows on; numbers eager computes in Python from
`step.item()` go through `ops.item` and the arithmetic ops, which fold Python numbers to
Python numbers (and, in a graph, make 0-d float64 values); `ops.like(x, p)` is where such a
number meets parameter `p` (a graph casts it to p's dtype: the rounding eager's weak Python
scalars get). A rule returns (new p, {state key: new value}) in eager's state key order.

`Form` describes a state-carrying optimizer for the drivers: the group hyperparameters the
rule reads, the state keys with how a first step creates each, the rule. `run_form` is eager's
step over a form; capture's `optim_forms.step_rule` is the graph's. Touches `eager.optim`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..creation import zeros_like
from ..dispatch import FUNCTIONS
from . import arrays
from .optimizer import _new_step, _to_scalar

__all__ = ["FORMS", "Form", "TensorOps", "adam_update", "run_form", "sgd_update"]


def _number(x) -> bool:
    return type(x) in (int, float)


# ---------------------------------------------------------------- the shared pieces


def _grad(ops, p, g, hp):
    """`-p.grad if maximize`, then `grad.add(p, alpha=weight_decay)` (coupled decay)."""
    if hp["maximize"]:
        g = ops.neg(g)
    if hp["weight_decay"] != 0 and not hp.get("decoupled_weight_decay"):
        g = ops.add(g, ops.mul(p, hp["weight_decay"]))
    return g


def _decay(ops, p, hp):
    """Decoupled weight decay, `param.mul_(1 - lr * weight_decay)`."""
    if hp["weight_decay"] != 0 and hp.get("decoupled_weight_decay"):
        p = ops.mul_(p, ops.like(ops.sub(1, ops.mul(hp["lr"], hp["weight_decay"])), p))
    return p


def _moments(ops, m, v, g, beta1, beta2):
    """Adam's moments: lerp_(exp_avg, g, 1 - beta1); addcmul_(exp_avg_sq.mul_(beta2), g, g,
    value=1 - beta2)."""
    m = ops.lerp_(m, g, 1 - beta1)
    v = ops.addcmul_(ops.mul_(v, beta2), g, g, 1 - beta2)
    return m, v


# ---------------------------------------------------------------- the rules


def sgd_update(ops, p, g, buf, lr, momentum, dampening, wd, nesterov, maximize):
    """One SGD step of parameter `p` with gradient `g`: returns (new p, the momentum buffer,
    None with momentum 0). `buf` None with momentum != 0 is the first step (the buffer starts
    as a copy of the gradient). `lr` a number (a 0-d value in a graph)."""
    if maximize:
        g = ops.neg(g)
    if wd != 0:
        g = ops.add(g, ops.mul(p, wd))  # grad.add(p, alpha=wd)
    if momentum != 0:
        if buf is None:
            buf = ops.clone(g)
        else:
            buf = ops.mul_(buf, momentum)
            a = 1 - dampening  # buf.add_(grad, alpha=1 - dampening)
            buf = ops.add_(buf, g if a == 1 else ops.mul(g, a))
        g = ops.add(g, ops.mul(buf, momentum)) if nesterov else buf
    p = ops.add_(p, ops.mul(g, ops.like(ops.neg(lr), p)))  # p.add_(grad.mul(-lr))
    return p, (buf if momentum != 0 else None)


def adam_update(ops, p, g, m, v, vmax, step, lr, beta1, beta2, eps, wd, decoupled, maximize,
                amsgrad):
    """One Adam/AdamW step: returns (new p, exp_avg, exp_avg_sq, max_exp_avg_sq or None,
    step). `step` is the 0-d step counter before the step."""
    step = ops.add_(step, 1)
    if maximize:
        g = ops.neg(g)
    if wd != 0:
        if decoupled:
            p = ops.mul_(p, ops.like(ops.sub(1, ops.mul(lr, wd)), p))
        else:
            g = ops.add(g, ops.mul(p, wd))
    m, v = _moments(ops, m, v, g, beta1, beta2)
    s = ops.item(step)
    step_size = ops.div(lr, ops.sub(1, ops.pow(beta1, s)))
    bc2_sqrt = ops.pow(ops.sub(1, ops.pow(beta2, s)), 0.5)
    if amsgrad:
        vmax = ops.copy_(vmax, ops.maximum(vmax, v))
    denom = ops.add_(ops.div(ops.sqrt(vmax if amsgrad else v), ops.like(bc2_sqrt, p)), eps)
    p = ops.addcdiv_(p, m, denom, ops.neg(step_size))
    return p, m, v, (vmax if amsgrad else None), step


def adam_form(ops, p, g, st, hp):
    """Adam/AdamW as a form's rule, through `adam_update`."""
    b1, b2 = hp["betas"]
    new_p, m, v, vmax, step = adam_update(
        ops, p, g, st["exp_avg"], st["exp_avg_sq"], st.get("max_exp_avg_sq"), st["step"],
        hp["lr"], b1, b2, hp["eps"], hp["weight_decay"], hp["decoupled_weight_decay"],
        hp["maximize"], hp["amsgrad"])
    new = {"step": step, "exp_avg": m, "exp_avg_sq": v}
    if hp["amsgrad"]:
        new["max_exp_avg_sq"] = vmax
    return new_p, new


def rmsprop_update(ops, p, g, st, hp):
    alpha, eps, lr, momentum = hp["alpha"], hp["eps"], hp["lr"], hp["momentum"]
    g = _grad(ops, p, g, hp)
    new = {"step": ops.add_(st["step"], 1)}
    sq = new["square_avg"] = ops.addcmul_(ops.mul_(st["square_avg"], alpha), g, g, 1 - alpha)
    if hp["centered"]:
        ga = new["grad_avg"] = ops.lerp_(st["grad_avg"], g, 1 - alpha)
        avg = ops.sqrt_(ops.addcmul(sq, ga, ga, -1))
    else:
        avg = ops.sqrt(sq)
    avg = ops.add_(avg, eps)
    if momentum > 0:
        buf = ops.addcdiv_(ops.mul_(st["momentum_buffer"], momentum), g, avg)
        new["momentum_buffer"] = buf
        return ops.add_(p, ops.mul(buf, ops.like(ops.neg(lr), p))), new
    return ops.addcdiv_(p, g, avg, ops.neg(lr)), new


def adagrad_update(ops, p, g, st, hp):
    step = ops.add_(st["step"], 1)
    s = ops.item(step)
    g = _grad(ops, p, g, hp)
    clr = ops.div(hp["lr"], ops.add(1, ops.mul(ops.sub(s, 1), hp["lr_decay"])))
    total = ops.addcmul_(st["sum"], g, g)
    std = ops.add_(ops.sqrt(total), hp["eps"])
    return ops.addcdiv_(p, g, std, ops.neg(clr)), {"step": step, "sum": total}


def adadelta_update(ops, p, g, st, hp):
    rho, eps = hp["rho"], hp["eps"]
    step = ops.add_(st["step"], 1)
    g = _grad(ops, p, g, hp)
    sq = ops.addcmul_(ops.mul_(st["square_avg"], rho), g, g, 1 - rho)
    std = ops.sqrt_(ops.add(sq, eps))
    delta = ops.sqrt_(ops.add(st["acc_delta"], eps))
    delta = ops.mul_(ops.div_(delta, std), g)
    acc = ops.addcmul_(ops.mul_(st["acc_delta"], rho), delta, delta, 1 - rho)
    new_p = ops.add_(p, ops.mul(delta, ops.like(ops.neg(hp["lr"]), p)))
    return new_p, {"step": step, "square_avg": sq, "acc_delta": acc}


def adamax_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    g = _grad(ops, p, g, hp)
    step = ops.add_(st["step"], 1)
    m = ops.lerp_(st["exp_avg"], g, 1 - beta1)
    u = ops.copy_(st["exp_inf"], ops.maximum(ops.mul_(st["exp_inf"], beta2),
                                             ops.add_(ops.abs(g), hp["eps"])))
    clr = ops.div(hp["lr"], ops.sub(1, ops.pow(beta1, ops.item(step))))
    return ops.addcdiv_(p, m, u, ops.neg(clr)), {"step": step, "exp_avg": m, "exp_inf": u}


def nadam_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    lr, psi = hp["lr"], hp["momentum_decay"]
    g = _grad(ops, p, g, hp)
    step = ops.add_(st["step"], 1)
    s = ops.item(step)
    bc2 = ops.sub(1, ops.pow(beta2, s))
    p = _decay(ops, p, hp)
    mu = ops.mul(beta1, ops.sub(1.0, ops.mul(0.5, ops.pow(0.96, ops.mul(s, psi)))))
    mu_next = ops.mul(beta1, ops.sub(1.0, ops.mul(0.5, ops.pow(0.96, ops.mul(ops.add(s, 1),
                                                                             psi)))))
    prod = ops.mul_(st["mu_product"], ops.like(mu, st["mu_product"]))
    prod64 = ops.item(prod)
    m, v = _moments(ops, st["exp_avg"], st["exp_avg_sq"], g, beta1, beta2)
    denom = ops.add_(ops.sqrt(ops.div(v, ops.like(bc2, p))), hp["eps"])
    p = ops.addcdiv_(p, g, denom, ops.div(ops.mul(ops.neg(lr), ops.sub(1.0, mu)),
                                          ops.sub(1.0, prod64)))
    p = ops.addcdiv_(p, m, denom, ops.div(ops.mul(ops.neg(lr), mu_next),
                                          ops.sub(1.0, ops.mul(prod64, mu_next))))
    return p, {"step": step, "mu_product": prod, "exp_avg": m, "exp_avg_sq": v}


def radam_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    lr = hp["lr"]
    g = _grad(ops, p, g, hp)
    step = ops.add_(st["step"], 1)
    s = ops.item(step)
    p = _decay(ops, p, hp)
    m, v = _moments(ops, st["exp_avg"], st["exp_avg_sq"], g, beta1, beta2)
    bc1, bc2 = ops.sub(1, ops.pow(beta1, s)), ops.sub(1, ops.pow(beta2, s))
    m_hat = ops.div(m, ops.like(bc1, p))
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = ops.sub(rho_inf, ops.div(ops.mul(ops.mul(2, s), ops.pow(beta2, s)), bc2))
    plain = ops.mul(m_hat, ops.like(lr, p))

    def rectified():
        r = ops.maximum(rho_t, 5.0)  # (= rho_t where this branch is taken)
        rect = ops.pow(ops.div(ops.mul(ops.mul(ops.sub(r, 4), ops.sub(r, 2)), rho_inf),
                               ops.mul((rho_inf - 4) * (rho_inf - 2), r)), 0.5)
        adaptive = ops.div(ops.like(ops.pow(bc2, 0.5), p),
                           ops.add_(ops.sqrt(v), hp["eps"]))
        return ops.mul(ops.mul(plain, adaptive), ops.like(rect, p))

    upd = ops.select(ops.gt(rho_t, 5.0), rectified, lambda: plain)
    return ops.add_(p, ops.mul(upd, -1.0)), {"step": step, "exp_avg": m, "exp_avg_sq": v}


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Form:
    """One state-carrying optimizer: `hyper` the group keys its rule reads (besides `lr`);
    `state(hp)` the state keys in eager's insertion order with how a first step creates each
    ("step": a 0-d counter of `_new_step`'s dtype, "one": the same holding 1, "zeros": zeros
    like the parameter, None: made by the optimizer's constructor); `update(ops, p, g, state,
    hp)` the rule; `arrays` whether `arrays.ArrayOps` implements every op the rule uses."""

    hyper: tuple
    state: Callable
    update: Callable
    arrays: bool = False


_ADAM = ("step", "step"), ("exp_avg", "zeros"), ("exp_avg_sq", "zeros")

# "module.Class" of eager.optim -> its form (the class's own `step`; AdamW shares Adam's)
FORMS = {
    "adam.Adam": Form(
        ("betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"),
        lambda hp: _ADAM + ((("max_exp_avg_sq", "zeros"),) if hp["amsgrad"] else ()),
        adam_form, arrays=True),
    "rmsprop.RMSprop": Form(
        ("alpha", "eps", "weight_decay", "momentum", "centered", "maximize"),
        lambda hp: (("step", "step"), ("square_avg", "zeros"))
        + ((("momentum_buffer", "zeros"),) if hp["momentum"] > 0 else ())
        + ((("grad_avg", "zeros"),) if hp["centered"] else ()),
        rmsprop_update),
    "adagrad.Adagrad": Form(("lr_decay", "weight_decay", "eps", "maximize"),
                            lambda hp: (("step", None), ("sum", None)), adagrad_update),
    "adadelta.Adadelta": Form(
        ("rho", "eps", "weight_decay", "maximize"),
        lambda hp: (("step", "step"), ("square_avg", "zeros"), ("acc_delta", "zeros")),
        adadelta_update),
    "adam_family.Adamax": Form(
        ("betas", "eps", "weight_decay", "maximize"),
        lambda hp: (("step", "step"), ("exp_avg", "zeros"), ("exp_inf", "zeros")),
        adamax_update),
    "adam_family.NAdam": Form(
        ("betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay",
         "maximize"),
        lambda hp: (("step", "step"), ("mu_product", "one"), ("exp_avg", "zeros"),
                    ("exp_avg_sq", "zeros")),
        nadam_update),
    "adam_family.RAdam": Form(
        ("betas", "eps", "weight_decay", "decoupled_weight_decay", "maximize"),
        lambda hp: _ADAM, radam_update),
}


# ---------------------------------------------------------------- eager's namespace


class TensorOps:
    """The rules on eager Tensors; numbers (lr, bias corrections) as Python floats, as
    PyTorch's step computes them from `step.item()`."""

    neg = staticmethod(lambda x: -x)
    add = staticmethod(lambda a, b: a + b)
    sub = staticmethod(lambda a, b: a - b)
    mul = staticmethod(lambda a, b: a * b)
    div = staticmethod(lambda a, b: a / b)
    pow = staticmethod(lambda a, b: a ** b)
    sqrt = staticmethod(lambda x: x.sqrt())
    abs = staticmethod(lambda x: x.abs())
    gt = staticmethod(lambda a, b: a > b)
    clone = staticmethod(lambda x: x.detach().clone())
    item = staticmethod(lambda t: t.item())
    addcmul = staticmethod(lambda x, t1, t2, value: x.addcmul(t1, t2, value=value))
    select = staticmethod(lambda cond, a, b: a() if cond else b())  # (a Python bool)
    like = staticmethod(lambda x, p: x)  # (a Python number meets a tensor as a weak scalar)
    add_ = staticmethod(lambda x, y: x.add_(y))
    mul_ = staticmethod(lambda x, y: x.mul_(y))
    div_ = staticmethod(lambda x, y: x.div_(y))
    sqrt_ = staticmethod(lambda x: x.sqrt_())
    copy_ = staticmethod(lambda x, y: x.copy_(y))

    @staticmethod
    def maximum(a, b):
        return max(a, b) if _number(a) and _number(b) else FUNCTIONS["maximum"](a, b)

    @staticmethod
    def lerp_(x, end, weight):
        """`x.lerp_(end, weight)` for a number weight: x + weight * (end - x) when |weight| <
        0.5 (the registry's formula, unfused)."""
        if abs(weight) >= 0.5:
            return x.lerp_(end, weight)
        d = end - x
        d.mul_(weight)
        return x.add_(d)

    @staticmethod
    def addcmul_(x, t1, t2, value=1):
        """`x.addcmul_(t1, t2, value=value)`: x + (t1 * t2) * value, unfused."""
        t = t1 * t2
        if value != 1:  # (x * 1 is x: the registry's multiply changes nothing there)
            t.mul_(value)
        return x.add_(t)

    @staticmethod
    def addcdiv_(x, t1, t2, value=1):
        """`x.addcdiv_(t1, t2, value=value)`: x + (t1 / t2) * value, unfused."""
        t = t1 / t2
        if value != 1:
            t.mul_(value)
        return x.add_(t)


# ---------------------------------------------------------------- eager's driver


def _hyper(form: Form, group: dict) -> dict:
    hp = {k: group[k] for k in form.hyper}
    hp["lr"] = _to_scalar(group["lr"])
    return hp


def _init_state(opt, p, group, spec) -> None:
    """A first step's state, in the form's key order (`_init_state` of an optimizer whose
    constructor makes it)."""
    state = opt.state[p]
    if any(init is None for _, init in spec):
        opt._init_state(p, group)
        return
    for key, init in spec:
        if init == "zeros":
            state[key] = zeros_like(p)
        else:
            state[key] = _new_step() if init == "step" else _new_step().add_(1)


def run_form(opt, form: Form, closure=None):
    """Eager's `step` of a state-carrying optimizer over every parameter with a `.grad`:
    `form.update` on numpy arrays when `arrays.ArrayOps` takes the parameter and the form,
    else on Tensors (complex parameters through `view_as_real`, as PyTorch's). Returns the
    closure's loss."""
    loss = opt._eval_closure(closure)
    for group in opt.param_groups:
        hp = _hyper(form, group)
        spec = form.state(hp)
        for p in opt._params_with_grad(group):
            state = opt.state[p]
            if len(state) == 0:
                _init_state(opt, p, group, spec)
            st = {key: state[key] for key, _ in spec}
            if form.arrays:
                ops = arrays.ArrayOps.take(p, st)
                if ops is not None:
                    form.update(ops, ops.param, ops.grad, ops.state, hp)
                    continue
            g = p.grad
            if p.is_complex():
                view_as_real = FUNCTIONS["view_as_real"]
                p, g = view_as_real(p), view_as_real(g)
                st = {k: (t if k in ("step", "mu_product") else view_as_real(t))
                      for k, t in st.items()}
            form.update(TensorOps, p, g, st, hp)
    return loss

"""Graph forms of `opt.step()` beyond SGD/Adam: RMSprop, Adagrad, Adadelta, Adamax, NAdam and
RAdam, and the table (`FORMS`) that `optim_forms.step_rule` drives every state-carrying
optimizer (Adam/AdamW too) from.

Each optimizer is one `Form`: the group hyperparameters guarded by value, the state keys in
eager's insertion order with how a first step creates each ("step": a 0-d counter of
`_new_step`'s dtype, "one": the same holding 1, "zeros": zeros like the parameter, None: made
by the constructor, a missing one is a named break), and one functional update written on an
`ops` namespace (`optim_forms.GraphOps` records registry ops, `EagerOps` runs eager tensors and
Python numbers). `update(ops, p, g, state, hp)` returns (new p, {key: new value}); each follows
its eager `step` (`eager/optim/rmsprop.py`, `adagrad.py`, `adadelta.py`, `adam_family.py`) op
for op: the same ops in the same order on the same dtypes, numbers eager computes from
`step.item()` as 0-d float64 values cast to the parameter's dtype where they meet it (eager's
weak Python scalars), so compiled steps equal eager's bit for bit. RAdam's `if rho_t > 5` on
the step counter is a `where` of both branches (its rectification computed from
max(rho_t, 5), equal where it is selected). Touches `capture` only (no imports of eager).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FORMS", "Form"]


@dataclass(frozen=True)
class Form:
    """One optimizer's graph form (see the module docstring)."""

    hyper: tuple
    state: Callable  # hp -> ((key, init), ...) in eager's insertion order
    update: Callable  # (ops, p, g, state, hp) -> (new p, {key: new value})


def _number(x) -> bool:
    return type(x) in (int, float)


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
        p = ops.mul(p, ops.like(ops.sub(1, ops.mul(hp["lr"], hp["weight_decay"])), p))
    return p


def _scaled(ops, t, value, like):
    """`t.mul_(value)` unless value is the number 1 (optimizer.addcmul_/addcdiv_)."""
    return t if _number(value) and value == 1 else ops.mul(t, ops.like(value, like))


def _addcmul(ops, x, t1, t2, value=1):
    return ops.add(x, _scaled(ops, ops.mul(t1, t2), value, x))


def _addcdiv(ops, x, t1, t2, value=1):
    return ops.add(x, _scaled(ops, ops.div(t1, t2), value, x))


def _lerp(ops, x, end, w):
    """optimizer.lerp_ for a number weight."""
    if abs(w) >= 0.5:
        return ops.lerp(x, end, w)
    return ops.add(x, ops.mul(ops.sub(end, x), w))


def _moments(ops, st, g, beta1, beta2):
    """Adam's moments: lerp_(exp_avg, g, 1 - beta1); addcmul_(exp_avg_sq * beta2, g, g)."""
    m = _lerp(ops, st["exp_avg"], g, 1 - beta1)
    v = _addcmul(ops, ops.mul(st["exp_avg_sq"], beta2), g, g, 1 - beta2)
    return m, v


def rmsprop_update(ops, p, g, st, hp):
    alpha, eps, lr, momentum = hp["alpha"], hp["eps"], hp["lr"], hp["momentum"]
    new = {"step": ops.add(st["step"], 1)}
    g = _grad(ops, p, g, hp)
    sq = new["square_avg"] = _addcmul(ops, ops.mul(st["square_avg"], alpha), g, g, 1 - alpha)
    if hp["centered"]:
        ga = new["grad_avg"] = _lerp(ops, st["grad_avg"], g, 1 - alpha)
        avg = ops.sqrt(ops.addcmul(sq, ga, ga, -1))
    else:
        avg = ops.sqrt(sq)
    avg = ops.add(avg, eps)
    if momentum > 0:
        buf = new["momentum_buffer"] = _addcdiv(ops, ops.mul(st["momentum_buffer"], momentum),
                                                g, avg)
        return ops.add(p, ops.mul(buf, ops.like(ops.neg(lr), p))), new
    return _addcdiv(ops, p, g, avg, ops.neg(lr)), new


def adagrad_update(ops, p, g, st, hp):
    step = ops.add(st["step"], 1)
    g = _grad(ops, p, g, hp)
    clr = ops.div(hp["lr"], ops.add(1, ops.mul(ops.sub(ops.f64(step), 1), hp["lr_decay"])))
    total = _addcmul(ops, st["sum"], g, g)
    std = ops.add(ops.sqrt(total), hp["eps"])
    return _addcdiv(ops, p, g, std, ops.neg(clr)), {"step": step, "sum": total}


def adadelta_update(ops, p, g, st, hp):
    rho, eps = hp["rho"], hp["eps"]
    step = ops.add(st["step"], 1)
    g = _grad(ops, p, g, hp)
    sq = _addcmul(ops, ops.mul(st["square_avg"], rho), g, g, 1 - rho)
    std = ops.sqrt(ops.add(sq, eps))
    delta = ops.mul(ops.div(ops.sqrt(ops.add(st["acc_delta"], eps)), std), g)
    acc = _addcmul(ops, ops.mul(st["acc_delta"], rho), delta, delta, 1 - rho)
    new_p = ops.add(p, ops.mul(delta, ops.like(ops.neg(hp["lr"]), p)))
    return new_p, {"step": step, "square_avg": sq, "acc_delta": acc}


def adamax_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    step = ops.add(st["step"], 1)
    g = _grad(ops, p, g, hp)
    m = _lerp(ops, st["exp_avg"], g, 1 - beta1)
    u = ops.maximum(ops.mul(st["exp_inf"], beta2), ops.add(ops.abs(g), hp["eps"]))
    clr = ops.div(hp["lr"], ops.sub(1, ops.pow(beta1, ops.f64(step))))
    return _addcdiv(ops, p, m, u, ops.neg(clr)), {"step": step, "exp_avg": m, "exp_inf": u}


def nadam_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    lr, psi = hp["lr"], hp["momentum_decay"]
    step = ops.add(st["step"], 1)
    s = ops.f64(step)
    bc2 = ops.sub(1, ops.pow(beta2, s))
    g = _grad(ops, p, g, hp)
    p = _decay(ops, p, hp)
    mu = ops.mul(beta1, ops.sub(1.0, ops.mul(0.5, ops.pow(0.96, ops.mul(s, psi)))))
    mu_next = ops.mul(beta1, ops.sub(1.0, ops.mul(0.5, ops.pow(0.96, ops.mul(ops.add(s, 1),
                                                                             psi)))))
    prod = ops.mul(st["mu_product"], ops.like(mu, st["mu_product"]))
    prod64 = ops.f64(prod)
    m, v = _moments(ops, st, g, beta1, beta2)
    denom = ops.add(ops.sqrt(ops.div(v, ops.like(bc2, p))), hp["eps"])
    p = _addcdiv(ops, p, g, denom, ops.div(ops.mul(ops.neg(lr), ops.sub(1.0, mu)),
                                           ops.sub(1.0, prod64)))
    p = _addcdiv(ops, p, m, denom, ops.div(ops.mul(ops.neg(lr), mu_next),
                                           ops.sub(1.0, ops.mul(prod64, mu_next))))
    return p, {"step": step, "mu_product": prod, "exp_avg": m, "exp_avg_sq": v}


def radam_update(ops, p, g, st, hp):
    beta1, beta2 = hp["betas"]
    lr = hp["lr"]
    step = ops.add(st["step"], 1)
    s = ops.f64(step)
    g = _grad(ops, p, g, hp)
    p = _decay(ops, p, hp)
    m, v = _moments(ops, st, g, beta1, beta2)
    bc1, bc2 = ops.sub(1, ops.pow(beta1, s)), ops.sub(1, ops.pow(beta2, s))
    m_hat = ops.div(m, ops.like(bc1, p))
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = ops.sub(rho_inf, ops.div(ops.mul(ops.mul(2, s), ops.pow(beta2, s)), bc2))
    plain = ops.mul(m_hat, ops.like(lr, p))

    def rectified():
        r = ops.maximum(rho_t, 5.0)  # (= rho_t where this branch is taken)
        rect = ops.pow(ops.div(ops.mul(ops.mul(ops.sub(r, 4), ops.sub(r, 2)), rho_inf),
                               ops.mul((rho_inf - 4) * (rho_inf - 2), r)), 0.5)
        adaptive = ops.div(ops.like(ops.pow(bc2, 0.5), p), ops.add(ops.sqrt(v), hp["eps"]))
        return ops.mul(ops.mul(plain, adaptive), ops.like(rect, p))

    upd = ops.select(ops.gt(rho_t, 5.0), rectified, lambda: plain)
    return ops.add(p, ops.mul(upd, -1.0)), {"step": step, "exp_avg": m, "exp_avg_sq": v}


def adam_form(ops, p, g, st, hp):
    """Adam/AdamW through `optim_forms.adam_update`."""
    from .optim_forms import adam_update

    b1, b2 = hp["betas"]
    new_p, m, v, vmax, step = adam_update(
        ops, p, g, st["exp_avg"], st["exp_avg_sq"], st.get("max_exp_avg_sq"), st["step"],
        hp["lr"], b1, b2, hp["eps"], hp["weight_decay"], hp["decoupled_weight_decay"],
        hp["maximize"], hp["amsgrad"])
    new = {"step": step, "exp_avg": m, "exp_avg_sq": v}
    if hp["amsgrad"]:
        new["max_exp_avg_sq"] = vmax
    return new_p, new


_ADAM = ("step", "step"), ("exp_avg", "zeros"), ("exp_avg_sq", "zeros")

# "module.Class" -> its form (the class's own `step`; AdamW shares Adam's)
FORMS = {
    "adam.Adam": Form(
        ("betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"),
        lambda hp: _ADAM + ((("max_exp_avg_sq", "zeros"),) if hp["amsgrad"] else ()),
        adam_form),
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


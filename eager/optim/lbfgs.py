"""`LBFGS`, as `torch.optim.LBFGS`: limited-memory BFGS (Nocedal & Wright, Numerical
Optimization, algorithms 7.4 and 7.5) over all parameters flattened into one vector, with an
optional strong-Wolfe line search (algorithms 3.5 and 3.6, cubic interpolation), a port of
PyTorch's `torch/optim/lbfgs.py` (itself after minFunc).

`step(closure)` re-evaluates the model through `closure` (which must clear the gradients,
compute the loss, call `backward()` and return the loss) as many times as the iteration and
evaluation budgets allow. Scalars of the recursion (curvature pairs' 1 / y.s, the diagonal
scaling, step lengths) are kept as Python floats (PyTorch keeps 0-d tensors; a loaded torch
state is converted). Touches `eager` only.
"""

from __future__ import annotations

import math

from ..dispatch import FUNCTIONS
from ..grad_mode import enable_grad
from .optimizer import Optimizer, _no_grad_step, _to_scalar

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
    `bounds` (default: the interval between x1 and x2); the midpoint when it has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _zoom(obj_func, x, d, f, gtd, t, bracket, c1, c2, tolerance_change, ls_iter, max_ls):
    """The zoom phase of the strong-Wolfe search (bracket: lists of steps, losses, grads,
    directional derivatives); returns (loss, grad, step, evaluations)."""
    steps, fs, gs, gtds = bracket
    d_norm = d.abs().max().item()
    evals = 0
    insuf_progress = False
    low, high = (0, 1) if fs[0] <= fs[-1] else (1, 0)
    done = len(steps) == 1
    while not done and ls_iter < max_ls:
        if abs(steps[1] - steps[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(steps[0], fs[0], gtds[0], steps[1], fs[1], gtds[1])
        eps = 0.1 * (max(steps) - min(steps))
        if min(max(steps) - t, t - min(steps)) < eps:
            if insuf_progress or t >= max(steps) or t <= min(steps):
                t = max(steps) - eps if abs(t - max(steps)) < abs(t - min(steps)) \
                    else min(steps) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= fs[low]:
            steps[high], fs[high], gs[high], gtds[high] = t, f_new, g_new.clone(), gtd_new
            low, high = (0, 1) if fs[0] <= fs[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (steps[high] - steps[low]) >= 0:
                steps[high], fs[high], gs[high] = steps[low], fs[low], gs[low]
                gtds[high] = gtds[low]
            steps[low], fs[low], gs[low], gtds[low] = t, f_new, g_new.clone(), gtd_new
    return fs[low], gs[low], steps[low], evals


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step length t along d satisfying the strong Wolfe conditions (sufficient decrease
    c1, curvature c2): bracketing by cubic extrapolation, then zoom. Returns (loss, flat
    grad, t, number of evaluations)."""
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d).item()
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    ls_iter = 0
    bracket = None
    while ls_iter < max_ls:
        sufficient = not (f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev))
        if sufficient and abs(gtd_new) <= -c2 * gtd:
            bracket = ([t], [f_new], [g_new], [gtd_new])
            break
        if not sufficient or gtd_new >= 0:
            bracket = ([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()],
                       [gtd_prev, gtd_new])
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d).item()
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = ([0, t], [f, f_new], [g, g_new], [gtd, gtd_new])
    f_new, g_new, t, more = _zoom(obj_func, x, d, f, gtd, t, bracket, c1, c2,
                                  tolerance_change, ls_iter, max_ls)
    return f_new, g_new, t, evals + more


class LBFGS(Optimizer):
    """L-BFGS (`torch.optim.LBFGS`).

    Args: params (one group only), lr=1, max_iter=20 (iterations per `step`), max_eval=None
    (function evaluations per `step`; max_iter * 5 // 4), tolerance_grad=1e-7 (stop when
    max |grad| is below), tolerance_change=1e-9 (stop when the loss or the step changes less),
    history_size=100, line_search_fn=None or "strong_wolfe".

    State (on the first parameter, PyTorch's layout): `func_evals`, `n_iter`, `d`, `t`,
    `old_dirs`, `old_stps`, `ro`, `H_diag`, `prev_flat_grad`, `prev_loss`, `al`.

    Raises:
        ValueError: a negative lr, or more than one parameter group.
        RuntimeError: a line_search_fn other than "strong_wolfe".
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel()
                                    for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        view_as_real = FUNCTIONS["view_as_real"]
        views = []
        for p in self._params:
            view = p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1)
            if view.is_complex():
                view = view_as_real(view).reshape(-1)
            views.append(view)
        return FUNCTIONS["cat"](views, 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            if p.is_complex():
                p = FUNCTIONS["view_as_real"](p)
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, pdata in zip(self._params, x):
            p.copy_(pdata)
        return loss, flat_grad

    @_no_grad_step
    def step(self, closure):
        """Up to `max_iter` L-BFGS iterations; `closure` (required) re-evaluates the loss
        and gradients. Returns the loss of the first evaluation."""
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= group["tolerance_grad"]:
            return orig_loss
        self._iterate(closure, group, state, lr, loss, flat_grad)
        return orig_loss

    def _iterate(self, closure, group, state, lr, loss, flat_grad) -> None:
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        d, t = state.get("d"), state.get("t")
        t = None if t is None else float(t)
        old_dirs, old_stps = state.get("old_dirs"), state.get("old_stps")
        ro = None if state.get("ro") is None else [float(r) for r in state["ro"]]
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        current_evals, n_iter = 1, 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                d, h_diag = self._direction(state, flat_grad, prev_flat_grad, d, t,
                                            old_dirs, old_stps, ro, float(h_diag))
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum().item()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d).item()
            if gtd > -tolerance_change:
                break
            ls_func_evals = 0
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max().item() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max().item() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break
        state.update({"d": d, "t": t, "old_dirs": old_dirs, "old_stps": old_stps, "ro": ro,
                      "H_diag": h_diag, "prev_flat_grad": prev_flat_grad,
                      "prev_loss": prev_loss})

    def _direction(self, state, flat_grad, prev_flat_grad, d, t, old_dirs, old_stps, ro,
                   h_diag):
        """Update the curvature pairs with (y, s) when y.s > 1e-10 and return the two-loop
        recursion's direction -H g and the new diagonal scaling."""
        y = flat_grad.sub(prev_flat_grad)
        s = d.mul(t)
        ys = y.dot(s).item()
        if ys > 1e-10:
            if len(old_dirs) == self.param_groups[0]["history_size"]:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            h_diag = ys / y.dot(y).item()
        num_old = len(old_dirs)
        if "al" not in state:
            state["al"] = [None] * self.param_groups[0]["history_size"]
        al = state["al"]
        q = flat_grad.neg()
        for i in range(num_old - 1, -1, -1):
            al[i] = old_stps[i].dot(q).item() * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q.mul(h_diag)
        for i in range(num_old):
            be_i = old_dirs[i].dot(r).item() * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r, h_diag

"""`torch.func` (functorch's function transforms) over eager's define-by-run autograd:
`vmap` as a loop over the mapped dim (slices through registry ops, results stacked, so gradients
flow; PyTorch batches the ops instead, with the same values), `grad`, `grad_and_value`, `vjp`,
`jacrev`, `jacfwd`, `hessian` (through `eager.autograd.functional` and `eager.autograd.grad`) and
`functional_call` (`nn.utils.stateless`). Semantics: the torch.func documentation; `vmap`'s
`randomness` is not modelled (each slice draws on its own, PyTorch's "different").
"""

from __future__ import annotations

from . import autograd
from .autograd import functional as AF
from .dispatch import FUNCTIONS
from .grad_mode import enable_grad
from .nn.utils import stateless
from .tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]


def _flatten(tree):
    if isinstance(tree, Tensor):
        return [tree], None
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for t in tree:
            lv, sp = _flatten(t)
            leaves += lv
            specs.append((len(lv), sp))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = _flatten(list(tree.values()))
        return leaves, (dict, list(tree.keys()), specs)
    return [], ("const", tree)


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    if spec[0] == "const":
        return spec[1]
    if spec[0] is dict:
        return dict(zip(spec[1], _unflatten(leaves, spec[2])))
    out, i = [], 0
    for n, sp in spec[1]:
        out.append(_unflatten(leaves[i:i + n], sp))
        i += n
    return spec[0](out) if spec[0] is not list else out


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`torch.func.vmap`: `func` mapped over dim `in_dims` of its tensor arguments (an int, or
    one entry per positional argument, None: not mapped); outputs stacked at `out_dims`.
    ValueError when mapped sizes differ or nothing is mapped."""
    def mapped(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(in_dims={in_dims}): in_dims is not compatible with the "
                             f"structure of inputs ({len(args)} positional arguments)")
        sizes = set()
        for a, d in zip(args, dims):
            if d is not None:
                for leaf in _flatten(a)[0]:
                    sizes.add(leaf.shape[d])
        if not sizes:
            raise ValueError("vmap: at least one input must be mapped over (got in_dims with "
                             "no mapped tensor)")
        if len(sizes) > 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
        n = sizes.pop()
        results = []
        for i in range(n):
            sl = []
            for a, d in zip(args, dims):
                if d is None:
                    sl.append(a)
                    continue
                leaves, spec = _flatten(a)
                sl.append(_unflatten([leaf.select(d, i) for leaf in leaves], spec))
            results.append(func(*sl, **kwargs))
        first_leaves, spec = _flatten(results[0])
        per = [_flatten(r)[0] for r in results]
        od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first_leaves)
        stacked = [FUNCTIONS["stack"]([p[k] for p in per], od[k])
                   for k in range(len(first_leaves))]
        return _unflatten(stacked, spec)
    return mapped


def grad_and_value(func, argnums=0, has_aux=False):
    """`torch.func.grad_and_value`: (d func / d args[argnums], func(*args)) for a scalar
    output (with `has_aux`: func returns (output, aux), and the value is that pair)."""
    def wrapped(*args, **kwargs):
        nums = argnums if isinstance(argnums, tuple) else (argnums,)
        args = list(args)
        # each differentiated argument is a pytree (a tensor, or tuples/lists/dicts of them)
        trees = [_flatten(args[k]) for k in nums]
        # under an outer transform (an argument already requires grad: jvp(grad(f)), hessian)
        # the gradient stays differentiable, connected to the outer graph
        nested = any(t.requires_grad for leaves, _ in trees for t in leaves)
        xs = []
        for k, (leaves, spec) in zip(nums, trees):
            mine = [t.view_as(t) if t.requires_grad else t.detach().requires_grad_(True)
                    for t in leaves]
            xs.append(mine)
            args[k] = _unflatten(mine, spec)
        with enable_grad():
            out = func(*args, **kwargs)
            value, aux = (out if has_aux else (out, None))
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor")
            flat = [t for mine in xs for t in mine]
            got = autograd.grad(value, flat, allow_unused=True, create_graph=nested)
        got = [g if g is not None else t.new_zeros(t.shape) for g, t in zip(got, flat)]
        gs, i = [], 0
        for mine, (_, spec) in zip(xs, trees):
            gs.append(_unflatten(got[i:i + len(mine)], spec))
            i += len(mine)
        g = tuple(gs) if isinstance(argnums, tuple) else gs[0]
        return g, ((value.detach(), aux) if has_aux else value.detach())
    return wrapped


def grad(func, argnums=0, has_aux=False):
    """`torch.func.grad`: the gradient of a scalar function (with `has_aux`: (grad, aux))."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapped(*args, **kwargs):
        g, v = gv(*args, **kwargs)
        return (g, v[1]) if has_aux else g
    return wrapped


def vjp(func, *primals, has_aux=False):
    """`torch.func.vjp`: (func(*primals), vjp_fn) with vjp_fn(cotangents) -> a tuple of
    gradients, one per primal."""
    out = func(*primals)
    value, aux = (out if has_aux else (out, None))

    def vjp_fn(*cotangents):
        v = cotangents[0] if len(cotangents) == 1 else cotangents
        return tuple(AF.vjp(lambda *p: func(*p)[0] if has_aux else func(*p), primals, v)[1]) \
            if len(primals) > 1 else (AF.vjp(lambda p: func(p)[0] if has_aux else func(p),
                                             primals[0], v)[1],)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _select(func, args, argnums):
    """func as a function of args[argnums] (an int or a tuple of ints), the rest fixed."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)

    def f(*xs):
        a = list(args)
        for k, x in zip(nums, xs):
            a[k] = x
        return func(*a)
    picked = tuple(args[k] for k in nums)
    return f, (picked if isinstance(argnums, tuple) else picked[0])


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """`torch.func.jacrev`: the Jacobian of func with respect to args[argnums] (a tuple of
    Jacobians for a tuple of argnums; with `has_aux`, func returns (output, aux) and the
    result is (jacobian, aux))."""
    def wrapped(*args):
        aux = []

        def plain(*a):
            out = func(*a)
            if has_aux:
                aux[:] = [out[1]]
                return out[0]
            return out
        f, x = _select(plain, args, argnums)
        jac = AF.jacobian(f, x, create_graph=_any_requires_grad(args))
        return (jac, aux[0]) if has_aux else jac
    return wrapped


jacfwd = jacrev  # (the same Jacobian; PyTorch computes it in forward mode)


def _any_requires_grad(args) -> bool:
    return any(isinstance(a, Tensor) and a.requires_grad for a in args)


def hessian(func, argnums=0):
    """`torch.func.hessian`: the Hessian of a scalar function of args[argnums] (nested tuples
    for a tuple of argnums)."""
    def wrapped(*args):
        f, x = _select(func, args, argnums)
        return AF.hessian(f, x)
    return wrapped


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`torch.func.jvp`: (func(*primals), J(primals) . tangents), primals and tangents tuples
    of tensors of equal shapes (with `has_aux`: func returns (output, aux), and aux is the
    third result). Computed by the double-vjp trick of `autograd.functional.jvp`."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be "
                           "tuples")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same length")
    for p, t in zip(primals, tangents):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape, got {tuple(p.shape)} and "
                               f"{tuple(t.shape)}")
    aux = []

    def plain(*a):
        out = func(*a)
        if has_aux:
            aux[:] = [out[1]]
            return out[0]
        return out
    x = primals if len(primals) > 1 else primals[0]
    v = tangents if len(tangents) > 1 else tangents[0]
    out, jv = AF.jvp(plain, x, v, create_graph=_any_requires_grad(primals), strict=strict)
    return (out, jv, aux[0]) if has_aux else (out, jv)


def linearize(func, *primals):
    """`torch.func.linearize`: (func(*primals), jvp_fn) with jvp_fn(*tangents) the
    Jacobian-vector product at primals."""
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def stack_module_state(models):
    """`torch.func.stack_module_state`: (params, buffers), dicts of each name's tensors of the
    models stacked on a new leading dim (parameters as new leaves that require grad); models
    must share structure. RuntimeError for an empty list, models of different classes or
    training modes, mixed requires_grad."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    stack = FUNCTIONS["stack"]

    def stacked(named):
        names = [n for n, _ in named(models[0])]
        out = {}
        for n in names:
            ts = [dict(named(m))[n] for m in models]
            req = [t.requires_grad for t in ts]
            if any(req) and not all(req):
                raise RuntimeError(f"Expected {n} from each model to have the same "
                                   ".requires_grad")
            r = stack([t.detach() for t in ts])
            out[n] = r.requires_grad_() if all(req) else r
        return out
    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))


def functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, *,
                    tie_weights=True, strict=False):
    """`torch.func.functional_call`: call `module` with its parameters and buffers replaced by
    the given dict(s)."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (tuple, list)):
        merged = {}
        for d in dicts:
            merged.update(d)
        dicts = merged
    return stateless._functional_call(module, dicts, args, kwargs or {},
                                      tie_weights=tie_weights, strict=strict)

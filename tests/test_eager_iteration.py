"""Iterating tensors yields 0-d / (n-1)-d Tensors (issue 16: 1-D tensors without grad yielded
numpy scalars), and grad_fn objects are instances of per-op classes named as PyTorch's."""

import numpy as np
import pytest

import eager


def test_iterate_1d_yields_0d_tensors():
    t = eager.tensor([1, 2])
    out = [i * 2 for i in t]
    assert all(type(v) is eager.Tensor and v.ndim == 0 for v in out)
    assert [v.item() for v in out] == [2, 4]


def test_iteration_idioms_match_python_numbers():
    t = eager.tensor([1.5, 2.5, 3.0])
    assert [float(v) for v in t] == [1.5, 2.5, 3.0]
    assert list(t)[0].item() == 1.5
    s = sum(t)
    assert isinstance(s, eager.Tensor) and s.item() == 7.0
    a, b, c = t
    assert (a.item(), b.item(), c.item()) == (1.5, 2.5, 3.0)
    assert [int(v) for v in eager.tensor([3, 4])] == [3, 4]


def test_rows_are_views():
    t = eager.tensor([1.0, 2.0])
    first = list(t)[0]
    first.add_(10)
    assert t.tolist() == [11.0, 2.0]
    m = eager.tensor([[1, 2], [3, 4]])
    rows = list(m)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    rows[1][0] = 9
    assert m.tolist() == [[1, 2], [9, 4]]


def test_iterate_requires_grad_and_no_grad_agree():
    x = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    vals = [v * 2 for v in x]
    sum(vals).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with eager.no_grad():
        assert [v.ndim for v in x] == [0, 0, 0]


def test_iterate_0d_raises():
    with pytest.raises(TypeError):
        iter(eager.tensor(1.0))


def test_matches_torch_iteration():
    torch = pytest.importorskip("torch")
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    for arr in (data, data[:, 0]):
        ours = [v.numpy() for v in eager.tensor(arr)]
        ref = [v.numpy() for v in torch.tensor(arr)]
        assert [o.shape for o in ours] == [r.shape for r in ref]
        for o, r in zip(ours, ref):
            np.testing.assert_array_equal(o, r)


def test_grad_fn_classes_named_per_op():
    x = eager.randn(3, requires_grad=True)
    y = x * 2
    z = (y + 1).sum()
    assert type(y.grad_fn).__name__ == "MulBackward0" == y.grad_fn.name()
    assert type(z.grad_fn).__name__ == "SumBackward0"
    assert type(y.grad_fn) is type((x * 3).grad_fn)  # one class per op
    assert isinstance(y.grad_fn, eager.autograd.BackwardNode)
    (nxt, nr), = z.grad_fn.next_functions
    assert type(nxt).__name__ == "AddBackward0" and nr == 0
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    z.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_grad_fn_names_match_torch():
    # (ops torch decomposes differently are named after wick's registry op: matmul is
    # MatmulBackward0, torch MmBackward0 / BmmBackward0 by rank)
    torch = pytest.importorskip("torch")
    data = np.ones((2, 2), np.float32)
    cases = [lambda t: t * 2, lambda t: t + t, lambda t: t.sum(), lambda t: t.exp(),
             lambda t: t.relu(), lambda t: t.mean(), lambda t: t.sigmoid()]
    for f in cases:
        ours = f(eager.tensor(data, requires_grad=True)).grad_fn
        ref = f(torch.tensor(data, requires_grad=True)).grad_fn
        assert type(ours).__name__ == type(ref).__name__ == ours.name()

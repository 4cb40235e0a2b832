"""eager.autograd's legacy names against torch.autograd's: `Variable` (a leaf alias of its
tensor; isinstance true of every tensor), `set_multithreading_enabled` and
`enforce_grad_layout_policy` (context managers / decorators restoring their flag), and the
`variable` / `grad_mode` modules."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("requires_grad", [False, True])
def test_variable_is_a_leaf_alias(requires_grad):
    for lib in (eager, torch):
        base = lib.tensor([1.0, 2.0, 3.0])
        v = lib.autograd.Variable(base, requires_grad=requires_grad)
        assert type(v) is lib.Tensor and v is not base
        assert v.requires_grad is requires_grad and v.is_leaf
        assert isinstance(base, lib.autograd.Variable)
        assert isinstance(v, lib.autograd.variable.Variable)
        with lib.no_grad():
            v.mul_(2)  # shares memory with base
        np.testing.assert_array_equal(base.numpy(), [2.0, 4.0, 6.0])
        nonleaf = lib.tensor([1.0], requires_grad=True) * 3
        alias = lib.autograd.Variable(nonleaf)
        assert alias.grad_fn is None and alias.is_leaf and not alias.requires_grad
        assert tuple(lib.autograd.Variable().shape) == (0,)
        if requires_grad:
            (v * v).sum().backward()
            np.testing.assert_array_equal(v.grad.numpy(), [4.0, 8.0, 12.0])


def test_variable_refuses_non_tensors():
    with pytest.raises(TypeError):
        torch.autograd.Variable([1.0])
    with pytest.raises(TypeError):
        eager.autograd.Variable([1.0])


def test_flag_context_managers():
    flag = eager.autograd.variable.is_multithreading_enabled
    assert flag()
    with eager.autograd.set_multithreading_enabled(False):
        assert not flag()
    assert flag()
    eager.autograd.set_multithreading_enabled(False)  # as a call: stays set
    assert not flag()
    eager.autograd.set_multithreading_enabled(True)

    @eager.autograd.set_multithreading_enabled(False)
    def inside():
        return flag()

    assert flag() and inside() is False and flag()
    for lib in (eager, torch):
        with lib.autograd.enforce_grad_layout_policy(False):
            x = lib.ones(2, 3, requires_grad=True)
            (x * 2).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
        assert lib.autograd.grad_mode.no_grad is lib.no_grad

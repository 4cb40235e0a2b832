"""Activation modules against torch: values, input and parameter gradients, constructor
defaults and reprs (issue 16: modules for functions that exist)."""

import numpy as np
import pytest

import eager
import eager.nn as nn

torch = pytest.importorskip("torch")

# (class name, constructor args, input shape)
CASES = [
    ("LeakyReLU", (), (4, 5)), ("LeakyReLU", (0.2,), (4, 5)), ("SiLU", (), (4, 5)),
    ("ELU", (), (4, 5)), ("ELU", (0.5,), (4, 5)), ("CELU", (), (4, 5)), ("CELU", (2.0,), (4, 5)),
    ("SELU", (), (4, 5)), ("GELU", (), (4, 5)), ("GELU", ("tanh",), (4, 5)),
    ("Softplus", (), (4, 5)), ("Softplus", (2.0, 1.0), (4, 5)), ("Mish", (), (4, 5)),
    ("Hardswish", (), (4, 5)), ("Hardsigmoid", (), (4, 5)), ("Hardtanh", (), (4, 5)),
    ("Hardtanh", (-0.5, 2.0), (4, 5)), ("ReLU6", (), (4, 5)), ("LogSigmoid", (), (4, 5)),
    ("Softsign", (), (4, 5)), ("Tanhshrink", (), (4, 5)), ("Threshold", (0.1, 20.0), (4, 5)),
    ("PReLU", (), (2, 3, 4)), ("PReLU", (3, 0.1), (2, 3, 4)), ("GLU", (), (4, 6)),
    ("GLU", (0,), (4, 6)), ("Softmin", (1,), (4, 5)), ("Softmax2d", (), (2, 3, 4, 5)),
    ("ReLU", (), (4, 5)), ("Identity", (), (4, 5)), ("Flatten", (), (2, 3, 4)), ("Unflatten", (1, (2, 2)), (3, 4)),
]


@pytest.mark.parametrize("name,args,shape", CASES)
def test_activation_matches_torch(name, args, shape):
    data = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 4
    ours, ref = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(ref)
    x, tx = eager.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = ours(x), ref(tx)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(1).standard_normal(ty.shape).astype(np.float32)
    y.backward(eager.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    ps, tps = dict(ours.named_parameters()), dict(ref.named_parameters())
    assert list(ps) == list(tps)
    for k in ps:
        np.testing.assert_allclose(ps[k].grad.numpy(), tps[k].grad.numpy(), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.parametrize("name,args", [("LeakyReLU", (0.1, True)), ("ELU", (1.0, True)),
                                       ("SiLU", (True,)), ("Hardtanh", (-1.0, 1.0, True)),
                                       ("ReLU6", (True,)), ("ReLU", (True,)), ("Threshold", (0.0, -1.0, True))])
def test_inplace_forms(name, args):
    data = np.linspace(-3, 3, 12, dtype=np.float32)
    x, tx = eager.tensor(data), torch.tensor(data)
    ours, ref = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(ref)
    y, ty = ours(x), ref(tx)
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6)  # written into the input
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-6)


def test_prelu_state_dict_loads_both_ways():
    ours, ref = nn.PReLU(4, 0.3), torch.nn.PReLU(4, 0.3)
    assert list(ours.state_dict()) == list(ref.state_dict()) == ["weight"]
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    ours.load_state_dict({k: eager.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    np.testing.assert_array_equal(ours.weight.detach().numpy(), ref.weight.detach().numpy())


def test_errors_match_torch():
    with pytest.raises(RuntimeError):
        nn.GLU()(eager.ones(3, 5))
    with pytest.raises(RuntimeError):
        torch.nn.GLU()(torch.ones(3, 5))
    with pytest.raises(RuntimeError):
        nn.PReLU(3)(eager.ones(2, 4))
    with pytest.raises(RuntimeError):
        torch.nn.PReLU(3)(torch.ones(2, 4))

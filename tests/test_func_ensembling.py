"""PyTorch's torch.func tutorials run on wick: model ensembling (`stack_module_state`,
`functional_call` on a `copy.deepcopy(model).to('meta')` base under `vmap`, with
`in_dims=(0, 0, None)` for one shared minibatch) and per-sample gradients
(`vmap(grad(compute_loss), in_dims=(None, None, 0, 0))`). Predictions are compared with a
numpy forward of each model and gradients with a per-sample loop of `autograd.grad`; the same
programs run in PyTorch with wick's weights and data give the same numbers.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import eager
import eager.nn as wnn
import eager.nn.functional as WF


def _mlp(nn, F):
    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    return SimpleMLP


def _np_mlp(model, x):
    """The MLP's forward in numpy, from the model's weights."""
    h = x.reshape(x.shape[0], -1).astype(np.float64)
    for i, fc in enumerate((model.fc1, model.fc2, model.fc3)):
        h = h @ fc.weight.detach().numpy().T.astype(np.float64) + fc.bias.detach().numpy()
        if i < 2:
            h = np.maximum(h, 0)
    return h


def _ensemble(lib, nn, F, models, minibatches, minibatch):
    """The tutorial's steps: stacked state, a meta base model, vmap over models (each its own
    minibatch, then one shared minibatch)."""
    params, buffers = lib.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return lib.func.functional_call(base, (params, buffers), (x,))

    p1 = lib.vmap(fmodel)(params, buffers, minibatches)
    p2 = lib.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    return params, buffers, base, p1, p2


def _wick_setup(num_models=4):
    eager.manual_seed(0)
    data = eager.randn(num_models, 16, 1, 28, 28)
    mlp = _mlp(wnn, WF)
    models = [mlp() for _ in range(num_models)]
    return models, data, data[0]


def test_model_ensembling_against_numpy():
    models, minibatches, minibatch = _wick_setup()
    params, buffers, base, p1, p2 = _ensemble(eager, wnn, WF, models, minibatches, minibatch)
    assert [tuple(p.shape) for p in params.values()] == [
        (4,) + tuple(p.shape) for p in models[0].parameters()
    ]
    assert all(p.is_leaf and p.requires_grad for p in params.values()) and buffers == {}
    assert all(p.is_meta for p in base.parameters())  # the base keeps no data
    assert tuple(p1.shape) == (4, 16, 10) and tuple(p2.shape) == (4, 16, 10)
    for i, m in enumerate(models):
        np.testing.assert_allclose(
            p1[i].detach().numpy(), _np_mlp(m, minibatches[i].numpy()), rtol=1e-4, atol=1e-5
        )
        np.testing.assert_allclose(
            p2[i].detach().numpy(), _np_mlp(m, minibatch.numpy()), rtol=1e-4, atol=1e-5
        )


def test_stack_module_state_errors_as_torch():
    a, b = wnn.Linear(2, 3), wnn.Linear(2, 3)
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        eager.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        eager.func.stack_module_state([a, wnn.Sequential(wnn.Linear(2, 3))])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        eager.func.stack_module_state([a, b.eval()])
    b.train().bias.requires_grad_(False)
    with pytest.raises(RuntimeError, match="Expected bias from each model to have the same"):
        eager.func.stack_module_state([a, b])


def test_model_ensembling_gradients_flow_to_stacked_params():
    models, minibatches, _ = _wick_setup(3)
    params, _, _, p1, _ = _ensemble(eager, wnn, WF, models, minibatches, minibatches[0])
    p1.sum().backward()
    for i, m in enumerate(models):
        out = m(minibatches[i]).sum()
        out.backward()
        for name, p in m.named_parameters():
            np.testing.assert_allclose(
                params[name].grad[i].numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5
            )


def test_model_ensembling_against_torch():
    torch = pytest.importorskip("torch")
    models, minibatches, minibatch = _wick_setup()
    tmodels, mlp = [], _mlp(torch.nn, torch.nn.functional)
    for m in models:
        t = mlp()
        t.load_state_dict(
            {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in m.state_dict().items()}
        )
        tmodels.append(t)
    tb = torch.from_numpy(minibatches.numpy().copy())
    _, _, _, w1, w2 = _ensemble(eager, wnn, WF, models, minibatches, minibatch)
    _, _, _, t1, t2 = _ensemble(torch, torch.nn, torch.nn.functional, tmodels, tb, tb[0])
    np.testing.assert_allclose(w1.detach().numpy(), t1.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w2.detach().numpy(), t2.detach().numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- per-sample gradients


def _cnn(nn, F, flatten):
    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3, 1)
            self.conv2 = nn.Conv2d(8, 16, 3, 1)
            self.fc1 = nn.Linear(16 * 6 * 6, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = F.relu(self.fc1(flatten(x, 1)))
            return F.log_softmax(self.fc2(x), dim=1)

    return SimpleCNN


def _per_sample_grads(lib, model, data, targets):
    """The tutorial's two ways: a loop of autograd.grad, and vmap(grad(compute_loss))."""
    F = lib.nn.functional
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = lib.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))

    ft = lib.func.vmap(lib.func.grad(compute_loss), in_dims=(None, None, 0, 0))
    vm = ft(params, buffers, data, targets)
    loop = []
    for i in range(data.shape[0]):
        loss = F.nll_loss(model(data[i].unsqueeze(0)), targets[i].unsqueeze(0))
        loop.append(lib.autograd.grad(loss, list(model.parameters())))
    loop = [lib.stack(shards) for shards in zip(*loop)]
    return vm, loop


def _cnn_setup():
    eager.manual_seed(1)
    model = _cnn(wnn, WF, eager.flatten)()
    data = eager.randn(6, 1, 16, 16)
    targets = eager.randint(10, (6,))
    return model, data, targets


def test_per_sample_gradients_against_loop():
    model, data, targets = _cnn_setup()
    vm, loop = _per_sample_grads(eager, model, data, targets)
    assert list(vm) == [n for n, _ in model.named_parameters()]
    for g_vm, g_loop in zip(vm.values(), loop):
        assert tuple(g_vm.shape) == tuple(g_loop.shape) and g_vm.shape[0] == 6
        np.testing.assert_allclose(g_vm.numpy(), g_loop.numpy(), rtol=1e-4, atol=1e-6)


def test_per_sample_gradients_against_torch():
    torch = pytest.importorskip("torch")
    model, data, targets = _cnn_setup()
    tmodel = _cnn(torch.nn, torch.nn.functional, torch.flatten)()
    tmodel.load_state_dict(
        {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()}
    )
    vm, _ = _per_sample_grads(eager, model, data, targets)
    tvm, _ = _per_sample_grads(
        torch,
        tmodel,
        torch.from_numpy(data.numpy().copy()),
        torch.from_numpy(targets.numpy().copy()),
    )
    for name in vm:
        np.testing.assert_allclose(vm[name].numpy(), tvm[name].numpy(), rtol=1e-4, atol=1e-6)

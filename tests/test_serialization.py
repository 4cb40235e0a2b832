"""Tensor pickling and deepcopy, and eager.save / eager.load: round trips of tensors,
Parameters, views (memory shared within one pickle / one deepcopy), state dicts, whole models
and optimizer states; the weights-only allow-list; PyTorch's deepcopy semantics (checked
against torch when installed)."""

import copy
import io
import pickle

import numpy as np
import pytest

import eager
from eager import nn

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("dtype", [eager.float32, eager.float64, eager.int64, eager.bool,
                                   eager.complex64, eager.bfloat16, eager.float16])
def test_pickle_round_trip_dtypes(dtype):
    t = eager.arange(6).reshape(2, 3).to(dtype)
    u = pickle.loads(pickle.dumps(t))
    assert type(u) is eager.Tensor and u.dtype is dtype and u.shape == (2, 3)
    np.testing.assert_array_equal(u.float().numpy() if dtype is eager.bfloat16 else u.numpy(),
                                  t.float().numpy() if dtype is eager.bfloat16 else t.numpy())
    assert u.data_ptr() != t.data_ptr()


def test_pickle_leaf_requiring_grad_and_parameter():
    t = eager.ones(3, requires_grad=True)
    t.register_hook(lambda g: g)  # hooks hold a weakref: they are not pickled
    t.grad = eager.ones(3)
    u = pickle.loads(pickle.dumps(t))
    assert u.requires_grad and u.is_leaf and u.grad is None
    p = nn.Parameter(eager.zeros(2))
    q = pickle.loads(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(q) is nn.Parameter and q.requires_grad
    f = pickle.loads(pickle.dumps(nn.Parameter(eager.zeros(2), requires_grad=False)))
    assert type(f) is nn.Parameter and not f.requires_grad
    y = pickle.loads(pickle.dumps(t * 2))  # a non-leaf pickles as a leaf (as PyTorch)
    assert y.is_leaf and y.requires_grad and _np(y).tolist() == [2, 2, 2]


def test_views_share_memory_within_one_pickle():
    x = eager.arange(12.0)
    v = x[2:8].view(2, 3).t()
    x2, v2 = pickle.loads(pickle.dumps((x, v)))
    assert v2.shape == (3, 2) and v2.stride() == v.stride()
    np.testing.assert_array_equal(v2.numpy(), v.numpy())
    x2[3] = 100.0
    assert v2[1, 0].item() == 100.0 and x[3].item() == 3.0
    alone = pickle.loads(pickle.dumps(v))  # a view alone still loads with its values
    np.testing.assert_array_equal(alone.numpy(), v.numpy())


def test_deepcopy_tensor_semantics():
    t = eager.ones(2, requires_grad=True)
    t.grad = eager.full((2,), 3.0)
    c = copy.deepcopy(t)
    assert c.requires_grad and c.is_leaf and c.grad is not t.grad
    assert _np(c.grad).tolist() == [3, 3]
    c.detach().add_(1)
    assert _np(t).tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(t * 2)
    x = eager.arange(6.0)
    x2, v2 = copy.deepcopy((x, x[1:4]))
    x2[1] = -1.0
    assert v2[0].item() == -1.0 and x[1].item() == 1.0
    p = nn.Parameter(eager.ones(2))
    p.grad = eager.ones(2)
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q.grad is None  # as torch.nn.Parameter.__deepcopy__


@needs_torch
def test_deepcopy_semantics_match_torch():
    for lib in (eager, torch):
        t = lib.ones(2, requires_grad=True)
        t.grad = lib.ones(2)
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        assert copy.deepcopy(t).grad is not None and copy.deepcopy(p).grad is None
        with pytest.raises(RuntimeError) as info:
            copy.deepcopy(t * 2)
        assert str(info.value).startswith("Only Tensors created explicitly by the user")


def _model():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def test_deepcopy_model_is_independent():
    m = _model()
    m2 = copy.deepcopy(m)
    x = eager.randn(3, 4)
    np.testing.assert_array_equal(_np(m(x)), _np(m2(x)))
    assert all(type(p) is nn.Parameter and p.requires_grad for p in m2.parameters())
    assert m2[0]._parameters["weight"] is m2[0].weight
    assert not {id(p) for p in m.parameters()} & {id(p) for p in m2.parameters()}
    with eager.no_grad():
        m2[0].weight.add_(1.0)
    assert not np.allclose(_np(m(x)), _np(m2(x)))
    m2(x).sum().backward()
    assert m2[0].weight.grad is not None and m[0].weight.grad is None


def test_save_load_state_dict_path_and_file(tmp_path):
    m = _model()
    path = tmp_path / "ckpt.pt"
    eager.save(m.state_dict(), path)
    sd = eager.load(path)
    assert list(sd) == list(m.state_dict()) and type(sd).__name__ == "OrderedDict"
    m2 = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    m2.load_state_dict(sd)
    x = eager.randn(5, 4)
    np.testing.assert_array_equal(_np(m(x)), _np(m2(x)))
    buf = io.BytesIO()
    eager.save({"epoch": 3, "t": eager.arange(3), "nested": [eager.ones(1), (1.5, "s")]}, buf)
    buf.seek(0)
    got = eager.load(buf, map_location="cpu")
    assert got["epoch"] == 3 and got["nested"][1] == (1.5, "s")
    np.testing.assert_array_equal(got["t"].numpy(), [0, 1, 2])


def test_save_load_optimizer_state(tmp_path):
    m = _model()
    opt = eager.optim.Adam(m.parameters(), lr=0.1)
    m(eager.randn(2, 4)).sum().backward()
    opt.step()
    eager.save(opt.state_dict(), tmp_path / "opt.pt")
    sd = eager.load(tmp_path / "opt.pt")
    opt2 = eager.optim.Adam(m.parameters(), lr=0.1)
    opt2.load_state_dict(sd)
    np.testing.assert_array_equal(_np(opt2.state[m[0].weight]["exp_avg"]),
                                  _np(opt.state[m[0].weight]["exp_avg"]))


class _Custom:
    pass


def test_weights_only_refuses_other_globals(tmp_path):
    m = _model()
    eager.save(m, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL "
                       "eager.nn.containers.Sequential"):
        eager.load(tmp_path / "model.pt")
    m2 = eager.load(tmp_path / "model.pt", weights_only=False)
    x = eager.randn(2, 4)
    np.testing.assert_array_equal(_np(m(x)), _np(m2(x)))
    eager.save({"obj": _Custom()}, tmp_path / "c.pt")
    with pytest.raises(pickle.UnpicklingError, match="_Custom"):
        eager.load(tmp_path / "c.pt", weights_only=True)
    eager.serialization.add_safe_globals([_Custom])
    assert isinstance(eager.load(tmp_path / "c.pt")["obj"], _Custom)


@needs_torch
def test_state_dict_values_round_trip_like_torch(tmp_path):
    """Same keys, shapes and values after save/load as PyTorch's own round trip."""
    t = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    e = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    e.load_state_dict({k: eager.tensor(v.numpy()) for k, v in t.state_dict().items()})
    torch.save(t.state_dict(), tmp_path / "t.pt")
    eager.save(e.state_dict(), tmp_path / "e.pt")
    ts, es = torch.load(tmp_path / "t.pt"), eager.load(tmp_path / "e.pt")
    assert list(ts) == list(es)
    for k in ts:
        np.testing.assert_array_equal(ts[k].numpy(), es[k].numpy())

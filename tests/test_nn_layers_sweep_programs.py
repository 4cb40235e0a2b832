"""Small training programs built from the layer-sweep modules (issue 16), written once against
a `torch`-like namespace and run with torch and with eager: a convolutional autoencoder
(Conv2d / GroupNorm / ConvTranspose2d / Upsample / PixelShuffle / ReflectionPad2d), a 3-D
conv net with 3-D, LP and adaptive max pooling, and an EmbeddingBag text classifier; the
same initial state_dict and data, SGD steps, losses and final parameters compared."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def autoencoder(T):
    nn = T.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.InstanceNorm2d(16, affine=True),
        nn.LeakyReLU(0.1), nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1),
        nn.BatchNorm2d(8), nn.ReLU(), nn.Upsample(scale_factor=2, mode="bilinear"),
        nn.ReflectionPad2d(1), nn.Conv2d(8, 12, 3), nn.PixelShuffle(2),
        nn.AdaptiveAvgPool2d((16, 16)), nn.Hardshrink(0.01))


def volume_net(T):
    nn = T.nn
    return nn.Sequential(
        nn.Conv3d(2, 4, 3, padding=1), nn.BatchNorm3d(4), nn.Softshrink(0.05),
        nn.MaxPool3d(2), nn.ConvTranspose3d(4, 4, 2, stride=2), nn.GroupNorm(2, 4),
        nn.LPPool3d(2, 2), nn.AdaptiveMaxPool3d(1), nn.Flatten(), nn.Linear(4, 3))


def run(T, build, state, batches, steps=3, lr=0.05):
    T.manual_seed(0)
    model = build(T).double()
    model.load_state_dict({k: T.tensor(v) for k, v in state.items()})
    opt = T.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for x, y in batches[:steps]:
        model.train()
        loss = T.nn.functional.mse_loss(model(T.tensor(x)), T.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    model.eval()
    final = model(T.tensor(batches[0][0])).detach().numpy()
    return losses, final, {k: v.detach().numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("build,xshape,yshape", [
    (autoencoder, (4, 3, 16, 16), (4, 3, 16, 16)),
    (volume_net, (3, 2, 4, 4, 4), (3, 3)),
])
def test_training_matches_torch(build, xshape, yshape):
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal(xshape), rng.standard_normal(yshape)) for _ in range(3)]
    state = {k: v.detach().numpy().copy() for k, v in build(torch).double().state_dict().items()}
    a, b = run(torch, build, state, batches), run(eager, build, state, batches)
    np.testing.assert_allclose(b[0], a[0], rtol=1e-6)
    np.testing.assert_allclose(b[1], a[1], rtol=1e-5, atol=1e-8)
    for k in a[2]:
        np.testing.assert_allclose(b[2][k], a[2][k], rtol=1e-5, atol=1e-8, err_msg=k)


def test_embedding_bag_classifier_matches_torch():
    rng = np.random.default_rng(1)
    idx = rng.integers(0, 20, 30)
    offsets = np.array([0, 5, 9, 9, 17, 22])
    target = rng.integers(0, 3, 6)

    def make(T):
        T.manual_seed(0)
        return T.nn.EmbeddingBag(20, 6, mode="mean", padding_idx=0), T.nn.Bilinear(6, 6, 3)

    tbag, tbil = make(torch)
    ebag, ebil = make(eager)
    for em, tm in ((ebag, tbag), (ebil, tbil)):
        em.load_state_dict({k: eager.tensor(v.detach().numpy()) for k, v in
                            tm.state_dict().items()})
    results = []
    for T, bag, bil in ((torch, tbag, tbil), (eager, ebag, ebil)):
        params = list(bag.parameters()) + list(bil.parameters())
        opt = T.optim.Adam(params, lr=0.01)
        losses = []
        for _ in range(3):
            h = bag(T.tensor(idx), T.tensor(offsets))
            loss = T.nn.functional.cross_entropy(bil(h, h.flip(0)), T.tensor(target))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        results.append((losses, bag.weight.detach().numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-6)

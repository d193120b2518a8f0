"""The compiled training step (models.latent.engine) equals autograd through the torch modules:
the sparse pruning layer equals the dense fused kernel, one step's gradient equals autograd's in
float64, the evaluation pass equals the modules in eval mode, and whole fits follow the autograd
training loop."""

import copy

import numpy as np
import pytest
import torch

from models.latent import engine as E
from models.latent.engine_driver import Engine, batches, supported
from models.latent.fused import HAVE_NUMBA, _forward
from models.latent.layers import LatentTreeNet
from models.latent.train_loop import Problem, fit_net, frozen_pruning, predict_outputs

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


@pytest.mark.parametrize("mode", ["code", "paper"])
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_sparse_layer_equals_the_dense_kernel(mode, depth):
    rng = np.random.default_rng(depth)
    delta, upper = (0.0, 1.0) if mode == "code" else (0.5, np.inf)
    m = 2**depth - 1
    T = 2 * m + 1
    for n, lam in ((2, 0.3), (37, 1.0), (300, 20.0)):
        # scores near 0 keep every entry (more than the first buffer holds at depth 6)
        S = rng.standard_normal((n, m)) * (0.8 if n != 37 else 0.01)
        Qt, Zt, a, scale, thresh = (np.empty((T, n)), np.empty((T, n)), np.empty(T), np.empty(T), np.empty(T))
        _forward(S, lam, 0.5, delta, upper, Qt, Zt, a, scale, thresh)
        a2, scale2, thresh2 = np.empty(T), np.empty(T), np.empty(T)
        start, rows, q, z, _ = E._sparse_layer(np.ascontiguousarray(S.T), lam, 0.5, delta, upper, True, a2,
                                               scale2, thresh2, 0.5, np.zeros((n, 1)), np.zeros((m, 1)),
                                               np.zeros(m), False)
        np.testing.assert_array_equal(a2, a)
        np.testing.assert_array_equal(scale2, scale)
        Zs = np.zeros((T, n))
        for t in range(T):
            Zs[t, rows[start[t]:start[t + 1]]] = z[start[t]:start[t + 1]]
            np.testing.assert_array_equal(q[start[t]:start[t + 1]], Qt[t, rows[start[t]:start[t + 1]]])
        np.testing.assert_array_equal(Zs, Zt)
        # every entry left out has q <= -1/2, so z = 0 there and it is outside every support
        left_out = np.ones((T, n), dtype=bool)
        for t in range(T):
            left_out[t, rows[start[t]:start[t + 1]]] = False
        assert np.all(Qt[left_out] <= -0.5)


def _net(depth, d, k, split="linear", head_input="xz", readout="code", seed=0):
    torch.manual_seed(seed)
    net = LatentTreeNet(d, k, depth, prune_strength=1.0, split=split, readout=readout,
                        head_input=head_input).double()
    with torch.no_grad():  # move BatchNorm's affine parameters off their defaults
        net.splits.bn.weight.uniform_(0.5, 1.5)
        net.splits.bn.bias.uniform_(-0.3, 0.3)
        net.splits.beta.uniform_(-0.3, 0.3)
    return net


def _loss(kind, out, y, w):
    if kind == "bce":
        per = torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], y, reduction="none")
    elif kind == "ce":
        per = torch.nn.functional.cross_entropy(out, y, reduction="none")
    else:
        per = ((out - y) ** 2).mean(dim=1)
    return per.mean() if w is None else (per * w).sum() / w.sum()


def _data(kind, n, d, k, gen):
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    if kind == "bce":
        Y = (X[:, 0] + 0.3 * torch.randn(n, generator=gen, dtype=torch.float64) > 0).double()
    elif kind == "ce":
        Y = torch.randint(0, k, (n,), generator=gen)
    else:
        Y = torch.randn(n, k, generator=gen, dtype=torch.float64)
    return X, Y


@pytest.mark.parametrize("kind,k", [("bce", 1), ("ce", 4), ("mse", 2)])
@pytest.mark.parametrize("split,head_input,readout", [("linear", "xz", "code"), ("elu", "z", "paper"),
                                                    ("linear", "xz", "paper"), ("elu", "xz", "code")])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_step_gradient_equals_autograd(kind, k, split, head_input, readout, weighted):
    gen = torch.Generator().manual_seed(3)
    d, depth, n = 5, 3, 40
    X, Y = _data(kind, n, d, k, gen)
    W = torch.rand(n, generator=gen, dtype=torch.float64) + 0.1 if weighted else None
    net = _net(depth, d, k, split, head_input, readout)
    net.splits.init_bias(X)
    eng = Engine(net, "qhadam", 1e-2)
    data = batches(X, Y, W, kind)
    rows = np.arange(n, dtype=np.int64)
    grad = np.empty_like(eng.theta)
    rm, rv = eng.rm.copy(), eng.rv.copy()
    loss, weight, active = E._step_grad(data.X, data.yf, data.yi, data.w, data.has_w, data.kind, rows, eng.theta,
                                        eng.shape, 1.0, 0.5, eng.delta, eng.upper, eng.elu, eng.xz, rm, rv,
                                        eng.momentum, eng.eps_bn, grad, np.full(4 * eng.shape[0] * n, np.nan))
    net.train()
    out, state = net(X)
    ref = _loss(kind, out, Y, W)
    ref.backward()
    assert loss == pytest.approx(float(ref.detach()), rel=1e-12, abs=1e-12)
    assert weight == pytest.approx(n if W is None else float(W.sum()))
    assert active == int((state["a"] > 0).sum())
    expected = np.concatenate([p.grad.reshape(-1).numpy() for p in eng.params])
    np.testing.assert_allclose(grad, expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(rm, net.splits.bn.running_mean.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rv, net.splits.bn.running_var.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("optimizer", ["qhadam", "adam"])
def test_optimiser_steps_equal_torch(optimizer):
    from models.latent.train_loop import make_optimizer

    gen = torch.Generator().manual_seed(4)
    p = torch.randn(50, generator=gen, dtype=torch.float64, requires_grad=True)
    opt = make_optimizer(optimizer, [p], 0.01)
    theta = p.detach().numpy().copy()
    m1, m2 = np.zeros(50), np.zeros(50)
    hyper = (0.995, 0.998, 0.7, 1.0, 1e-8) if optimizer == "qhadam" else (0.9, 0.999, 1.0, 1.0, 1e-8)
    for step in range(1, 6):
        g = torch.randn(50, generator=gen, dtype=torch.float64)
        p.grad = g.clone()
        opt.step()
        E._optimiser(theta, g.numpy(), m1, m2, step, 0.01, *hyper)
        np.testing.assert_allclose(theta, p.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("readout", ["code", "paper"])
def test_evaluation_equals_the_modules(readout):
    gen = torch.Generator().manual_seed(5)
    X, _ = _data("ce", 300, 6, 3, gen)
    net = _net(4, 6, 3, "elu", "xz", readout)
    net.train()
    for _ in range(3):  # move BatchNorm's running statistics
        net(X[torch.randperm(300, generator=gen)[:64]])
    eng = Engine(net, "qhadam", 1e-2)
    out, a = eng.outputs(X.numpy(), strength_scale=300 / 64)
    a_ref = frozen_pruning(net, X, 64)
    np.testing.assert_allclose(a, a_ref.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, predict_outputs(net, X, a_ref).numpy(), rtol=1e-10, atol=1e-10)
    given = a_ref.clone()
    given[5] = 0.0  # a pruned subtree
    out2, _ = eng.outputs(X[:50].numpy(), a=given.numpy())
    np.testing.assert_allclose(out2, predict_outputs(net, X[:50], given).numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind,k", [("bce", 1), ("ce", 3), ("mse", 2)])
def test_a_fit_follows_the_autograd_loop(kind, k):
    """Whole fits (shuffling, a last batch of one row skipped, validation, early stopping, the
    learning-rate schedule) with the compiled step and with autograd, float64, same seeds."""
    gen = torch.Generator().manual_seed(6)
    X, Y = _data(kind, 129, 4, k, gen)  # 129 = 4 batches of 32 and one row
    Xv, Yv = _data(kind, 40, 4, k, gen)

    def loss(out, y, w):
        return _loss(kind, out, y, w)

    def score(out, y):
        return -float(_loss(kind, out, y, None))

    runs = []
    base = _net(2, 4, k, "linear", "xz", "code")
    for engine in (True, False):
        net = copy.deepcopy(base)
        history: list[dict] = []
        problem = Problem(X=X, Y=Y, loss=loss, score=score, X_val=Xv, Y_val=Yv, loss_kind=kind)
        a, best = fit_net(net, problem, batch_size=32, max_epochs=6, patience=3, lr_patience=1,
                          optimizer="qhadam", learning_rate=0.05, generator=torch.Generator().manual_seed(1),
                          record=lambda history=history, **v: history.append(v) or True, init_bias=True, engine=engine)
        runs.append((net, a, best, history))
    (net1, a1, best1, h1), (net2, a2, best2, h2) = runs
    assert best1 == best2 and len(h1) == len(h2)
    for r1, r2 in zip(h1, h2):
        for key in ("loss", "val_loss", "train_score", "a_norm", "batch_active_fraction", "lr"):
            assert r1[key] == pytest.approx(r2[key], rel=1e-6, abs=1e-8), key
        assert r1["n_active_nodes"] == r2["n_active_nodes"]
    for (name, t1), t2 in zip(net1.state_dict().items(), net2.state_dict().values()):
        torch.testing.assert_close(t1, t2, rtol=1e-7, atol=1e-9, msg=name)
    torch.testing.assert_close(a1, a2, rtol=1e-7, atol=1e-9)


def test_unsupported_configurations_use_autograd():
    net = LatentTreeNet(3, 1, 2, head="mlp")
    assert not supported(net, "qhadam", 32, torch.device("cpu"))
    net = LatentTreeNet(3, 1, 2, formulation="preprint")
    assert not supported(net, "qhadam", 32, torch.device("cpu"))
    net = LatentTreeNet(3, 1, 2)
    assert supported(net, "adam", 32, torch.device("cpu"))
    assert not supported(net, "adam", 1, torch.device("cpu"))
    X = torch.randn(20, 3)
    problem = Problem(X=X, Y=(X[:, 0] > 0).float(), loss=lambda o, y, w: _loss("bce", o, y, w),
                      score=lambda o, y: 0.0, loss_kind=None)
    with pytest.raises(ValueError, match="compiled latent-tree step does not apply"):
        fit_net(net, problem, batch_size=8, max_epochs=1, patience=0, lr_patience=0, optimizer="qhadam",
                learning_rate=0.01, generator=torch.Generator().manual_seed(0), record=lambda **v: True,
                init_bias=True, engine=True)


def test_estimators_train_with_the_compiled_step_by_default(monkeypatch):
    from sklearn.datasets import load_iris

    from models.latent.estimators import LatentTreeClassifier, LatentTreeRegressor

    calls = []
    original = Engine.train
    monkeypatch.setattr(Engine, "train", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    X, y = load_iris(return_X_y=True)
    model = LatentTreeClassifier(depth=2, max_epochs=30, learning_rate=0.05, device="cpu").fit(X, y)
    assert calls and model.score(X, y) > 0.8
    calls.clear()
    LatentTreeRegressor(depth=2, max_epochs=2, device="cpu").fit(X[:, :3], X[:, 3])
    assert calls
    calls.clear()
    LatentTreeClassifier(depth=2, max_epochs=2, head="mlp", device="cpu").fit(X, y)
    assert not calls  # an MLP predictor trains with autograd


def test_a_stop_between_calls_keeps_the_steps_taken():
    from models.latent import train_loop

    gen = torch.Generator().manual_seed(7)
    X, Y = _data("bce", 200, 3, 1, gen)
    net = _net(2, 3, 1)
    asked = []

    def stop():
        asked.append(1)
        return len(asked) >= 2  # after one call of the compiled step

    history: list[dict] = []
    problem = Problem(X=X, Y=Y, loss=lambda o, y, w: _loss("bce", o, y, w), score=lambda o, y: 0.0,
                      loss_kind="bce")
    before = net.head.weight.detach().clone()
    fit_net(net, problem, batch_size=4, max_epochs=3, patience=0, lr_patience=0, optimizer="qhadam",
            learning_rate=0.01, generator=torch.Generator().manual_seed(0),
            record=lambda **v: history.append(v) or True, init_bias=True, stop=stop, engine=True)
    assert history == []
    assert int(net.splits.bn.num_batches_tracked) == train_loop.STEPS_PER_CALL
    assert not torch.equal(net.head.weight, before)

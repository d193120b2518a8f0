"""The collapsed DGT path against autograd through the separate layers: exact gradients (float64,
1e-10), the whole training loop step for step, and the batched forest against its trees trained
one at a time with the same seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.dgt.estimators import DGTClassifier, DGTRegressor
from models.dgt.fast import (
    HAVE_NUMBA,
    CollapsedStack,
    FlatParameters,
    SingleTree,
    TreeData,
    TreeJob,
    augment,
    fit_stack,
    head_backward,
    head_forward,
    loss_and_grad,
    parameter_shapes,
    stack_parameters,
)
from models.dgt.forest import DGTForestClassifier, DGTForestRegressor, _bootstrap_tree
from models.dgt.network import DGTNetwork
from models.dgt.train import Data, TrainConfig, fit_network


def _net(d, h, k, layers, *, seed, biases=True, quantizer="scaled", multiplier=2):
    g = torch.Generator().manual_seed(seed)
    net = DGTNetwork(d, h, k, n_layers=layers, width_multiplier=multiplier, quantizer=quantizer, generator=g,
                     dtype=torch.float64)
    if biases:
        with torch.no_grad():
            for layer in net.layers:
                layer.bias.normal_(0.0, 0.3, generator=g)
    return net


def _collapsed_grads(net, x, y, w, loss, order):
    flat = FlatParameters(parameter_shapes(net), 1, torch.float64, "cpu")
    _, views = stack_parameters([net], flat)
    _, grads = flat.new()
    stack = CollapsedStack(views, order)
    xa = augment(x)[None]
    z = torch.bmm(xa, stack.forward().transpose(1, 2))
    out, leaf, p = head_forward(z, views[-1], net.A.T, net.quantizer)
    value, dout = loss_and_grad(loss, out, y[None], None if w is None else w[None])
    G, _ = head_backward(z, views[-1], net.A, dout, leaf, p, 2.0 if net.quantizer == "scaled" else 1.0, grads[-1])
    stack.backward(torch.bmm(G.transpose(1, 2), xa), grads)
    d = x.shape[1]
    mine = [grads[0][0][:, :d], grads[0][0][:, d], *(g[0] for g in grads[1:-1]), grads[-1][0]]
    return float(value[0]), mine


@pytest.mark.parametrize("h", [1, 3, 5])
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("biases", [True, False])
@pytest.mark.parametrize("order", ["r", "n"])
def test_collapsed_gradients_equal_autograd_through_the_layers(h, layers, biases, order):
    d, k, B = 6, 3, 70
    for loss in ("mse", "ce"):
        for quantizer in ("scaled", "plain"):
            for weighted in (False, True):
                seed = 31 * h + 7 * layers + biases
                net = _net(d, h, k, layers, seed=seed, biases=biases, quantizer=quantizer)
                g = torch.Generator().manual_seed(seed + 1)
                x = torch.randn(B, d, dtype=torch.float64, generator=g)
                y = (torch.randint(0, k, (B,), generator=g) if loss == "ce"
                     else torch.rand(B, k, dtype=torch.float64, generator=g))
                w = torch.rand(B, dtype=torch.float64, generator=g) + 0.1 if weighted else None
                out, _ = net(x)
                per_row = (torch.nn.functional.cross_entropy(out, y, reduction="none") if loss == "ce"
                           else (out - y).pow(2).mean(dim=1))
                ref = per_row.mean() if w is None else (per_row * w).sum() / w.sum()
                ref.backward()
                value, mine = _collapsed_grads(net, x, y, w, loss, order)
                theirs = [net.layers[0].weight.grad, net.layers[0].bias.grad,
                          *(p.grad for layer in net.layers[1:] for p in (layer.weight, layer.bias)), net.leaves.grad]
                assert value == pytest.approx(float(ref.detach()), abs=1e-12)
                assert any(t.abs().max() > 1e-3 for t in theirs[:-1])  # the window is open: a real test
                for a, b in zip(mine, theirs):
                    torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


@pytest.mark.parametrize("layers", [2, 3, 4])
def test_the_single_tree_products_give_the_collapsed_stacks_forward_and_gradients(layers):
    """The single-tree path (two-dimensional products on the transposed chain, into preallocated
    buffers) computes the same P̃ and layer gradients as the batched stack, in float64."""
    d, h, B = 7, 3, 50
    net = _net(d, h, 2, layers, seed=5 + layers)
    flat = FlatParameters(parameter_shapes(net), 1, torch.float64, "cpu")
    _, views = stack_parameters([net], flat)
    _, grads = flat.new()
    _, grads_single = flat.new()
    g = torch.Generator().manual_seed(layers)
    x = augment(torch.randn(B, d, dtype=torch.float64, generator=g))
    G = torch.randn(B, 2**h - 1, dtype=torch.float64, generator=g)
    stack, single = CollapsedStack(views, "r"), SingleTree(views, grads_single)
    P = stack.forward()
    torch.testing.assert_close(single.forward(), P[0].T, rtol=0, atol=1e-12)
    stack.backward(torch.bmm(G.T[None], x[None]), grads)
    single.backward(x, G)
    for a, b in zip(grads[:-1], grads_single[:-1]):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-12)
    with torch.no_grad():  # P̃ is recomputed only once the parameters are marked changed
        views[0].add_(1.0)
    torch.testing.assert_close(single.forward(), P[0].T, rtol=0, atol=1e-12)
    single.stale = True
    torch.testing.assert_close(single.forward(), stack.forward()[0].T, rtol=0, atol=1e-12)


@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("fused", [False, True] if HAVE_NUMBA else [False])
@pytest.mark.parametrize("setting", ["l1", "l2_momentum", "weighted_ce"])
def test_training_equals_the_autograd_loop_step_for_step(layers, fused, setting):
    """The whole loop (batches, penalty, clip, RMSprop, momentum, restarts, validation, best epoch)
    against the layer-by-layer autograd loop in float64."""
    d, h, k, n = 5, 3, 2, 150
    ce = setting == "weighted_ce"
    g = torch.Generator().manual_seed(3)
    X = torch.randn(n, d, dtype=torch.float64, generator=g)
    Y = torch.randint(0, k, (n,), generator=g) if ce else torch.rand(n, k, dtype=torch.float64, generator=g)
    W = torch.rand(n, dtype=torch.float64, generator=g) + 0.5 if ce else None
    config = TrainConfig(epochs=6, batch_size=32, l1_penalty=1e-3 if setting == "l1" else 0.0,
                         l2_penalty=1e-3 if setting == "l2_momentum" else 0.0,
                         momentum=0.5 if setting == "l2_momentum" else 0.0, grad_clip=0.05)
    if ce:
        def loss_fn(out, target, w):
            losses = torch.nn.functional.cross_entropy(out, target, reduction="none")
            return losses.mean() if w is None else (losses * w).sum() / w.sum()
    else:
        def loss_fn(out, target, w):
            return (out - target).pow(2).mean(dim=1).mean()

    def validation(out, target):
        if ce:
            return {"val_loss": float(torch.nn.functional.cross_entropy(out, target))}
        return {"val_loss": float((out - target).pow(2).mean())}

    ref_net, net = _net(d, h, k, layers, seed=1, biases=False), _net(d, h, k, layers, seed=1, biases=False)
    ref_records, records = [], []
    fit_network(ref_net, Data(X=X[:120], Y=Y[:120], W=None if W is None else W[:120], X_val=X[120:], Y_val=Y[120:]),
                loss_fn, config, generator=torch.Generator().manual_seed(9),
                record=lambda **r: ref_records.append(r) or True, validation=validation)
    info = fit_stack([net], [TreeData(X=X[:120], Y=Y[:120], W=None if W is None else W[:120], X_val=X[120:],
                                      Y_val=Y[120:])], "ce" if ce else "mse", config,
                     generators=[torch.Generator().manual_seed(9)], record=lambda r: records.append(r[0]) or True,
                     validation=validation, fused=fused)
    assert info[0]["best_epoch"] == ref_records[-1]["best_epoch"]
    for a, b in zip(records, ref_records):
        for key in ("loss", "val_loss", "ste_open", "lr"):
            assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12)
    for a, b in zip(net.parameters(), ref_net.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("batched", [True, False])
def test_the_forest_has_the_trees_of_one_at_a_time_training(batched, monkeypatch):
    """Trees with hidden layers train one after another on the CPU (the single-tree path, so each
    is exactly the tree fitted alone); forced into one batched program (the GPU's path), they are
    the same trees to float rounding."""
    if batched:
        monkeypatch.setattr(TreeJob, "trains_faster_alone", lambda self: False)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((240, 4))
    y = X[:, 0] - 2 * (X[:, 1] > 0) + 0.1 * rng.standard_normal(240)
    params = dict(depth=3, n_layers=2, width_multiplier=3, l1_penalty=1e-4, max_epochs=5, min_steps=0,
                  batch_size=32, learning_rate=0.02)
    forest = DGTForestRegressor(n_trees=3, random_state=4, **params).fit(X, y)
    seeds = [int(s) for s in np.random.default_rng(4).integers(2**31 - 1, size=3)]
    for seed, tree in zip(seeds, forest.estimators_):
        alone, idx = _bootstrap_tree(DGTRegressor, forest._tree_params(), X, y, 240, seed)
        alone.fit(X[idx], y[idx])
        if not batched:
            np.testing.assert_array_equal(tree.split_weight_, alone.split_weight_)
            np.testing.assert_array_equal(tree.leaves_, alone.leaves_)
            assert tree.history_ == [{**r, "epoch_s": t["epoch_s"]} for r, t in zip(alone.history_, tree.history_)]
        np.testing.assert_allclose(tree.split_weight_, alone.split_weight_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(tree.leaves_, alone.leaves_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(tree.predict(X), alone.predict(X), rtol=1e-4, atol=1e-4)
        assert tree.best_epoch_ == alone.best_epoch_
        assert [r["val_loss"] for r in tree.history_] == pytest.approx([r["val_loss"] for r in alone.history_],
                                                                       rel=1e-4)


def test_a_tree_trains_alone_on_the_cpu_when_it_has_hidden_layers():
    X = np.random.default_rng(0).standard_normal((60, 3))
    y = X[:, 0]

    def job(n_layers, device="cpu", depth=3):
        tree = DGTRegressor(depth=depth, n_layers=n_layers, width_multiplier=2, max_epochs=1, device=device)
        return tree._prepare(X, y, None, None, ["a", "b", "c"])

    assert job(2).trains_faster_alone() and job(3).trains_faster_alone()
    assert not job(1).trains_faster_alone()  # a plain tree: the batched program (no hidden layer)
    assert not job(2, depth=1).trains_faster_alone()  # n = 1 < r: the other multiplication order
    cuda = job(2)
    cuda.device = "cuda"
    assert not cuda.trains_faster_alone()


def test_the_batched_classification_forest_has_the_trees_of_one_at_a_time_training():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 3))
    y = np.where(X[:, 0] > 0.3, 2, (X[:, 1] > 0).astype(int))
    params = dict(depth=2, n_layers=1, l1_penalty=0.0, max_epochs=6, min_steps=0, batch_size=40, learning_rate=0.05)
    forest = DGTForestClassifier(n_trees=3, random_state=2, **params).fit(X, y)
    seeds = [int(s) for s in np.random.default_rng(2).integers(2**31 - 1, size=3)]
    for seed, tree in zip(seeds, forest.estimators_):
        alone, idx = _bootstrap_tree(DGTClassifier, forest._tree_params(), X, y, 200, seed)
        alone.fit(X[idx], y[idx])
        np.testing.assert_allclose(tree.split_weight_, alone.split_weight_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(tree.leaves_, alone.leaves_, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(tree.predict(X), alone.predict(X))

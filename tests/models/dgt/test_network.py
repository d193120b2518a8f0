"""The DGT network against the paper's formulas: the AND matrix, routing, the straight-through
gradients, the collapse of the linear stack and the regulariser's scope."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.dgt.network import DGTNetwork, and_matrix, hidden_widths, route, scaled_sign
from models.dgt.train import TrainConfig, penalty


def _net(d, h, k, *, layers=1, quantizer="scaled", seed=0, bias_std=0.3):
    g = torch.Generator().manual_seed(seed)
    net = DGTNetwork(d, h, k, n_layers=layers, width_multiplier=2, quantizer=quantizer, generator=g,
                     dtype=torch.float64)
    with torch.no_grad():
        for layer in net.layers:
            layer.bias.normal_(0.0, bias_std, generator=g)
    return net


def test_and_matrix_of_height_two_is_the_papers():
    expected = np.array([[-1, -1, 0], [-1, 1, 0], [1, 0, -1], [1, 0, 1]])
    np.testing.assert_array_equal(and_matrix(2), expected)


@pytest.mark.parametrize("h", range(1, 9))
def test_and_matrix_rows_pick_exactly_the_routed_leaf(h):
    A = and_matrix(h).astype(np.int64)
    assert (np.abs(A).sum(axis=1) == h).all()  # h non-zeros per row
    assert len({row.tobytes() for row in A}) == A.shape[0]  # rows distinct
    rng = np.random.default_rng(h)
    S = rng.choice([-1, 1], size=(200, A.shape[1]))
    q = S @ A.T
    assert (q.max(axis=1) == h).all()
    assert ((q == h).sum(axis=1) == 1).all()
    # the leaf attaining h is the one reached by routing on the signs (right iff s > 0)
    leaf = route(np.eye(A.shape[1]), np.zeros(A.shape[1]), S)
    np.testing.assert_array_equal(q.argmax(axis=1), leaf)


@pytest.mark.parametrize("h", [1, 2, 4, 6])
@pytest.mark.parametrize("layers", [1, 3])
def test_network_leaf_equals_the_extracted_tree(h, layers):
    net = _net(5, h, 3, layers=layers, seed=h + layers)
    X = torch.randn(2000, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    f, leaf = net(X)
    W, b = net.collapse()
    np.testing.assert_array_equal(route(W, b, X.numpy()), leaf.numpy())
    torch.testing.assert_close(f, net.leaves[leaf], rtol=0, atol=0)


@pytest.mark.parametrize("quantizer", ["scaled", "plain"])
def test_exact_zeros_go_left_in_the_network_and_the_tree(quantizer):
    """Zero biases and x = 0 make every split value exactly 0 (and the scale mean|z| = 0): the
    network and the tree both send every node's zero left, to leaf 0 — the Tree's convention."""
    net = _net(4, 3, 2, quantizer=quantizer, bias_std=0.0)
    x = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    f, leaf = net(x)
    assert (net.split_values(x) == 0).all()
    assert leaf.tolist() == [0, 0, 0]
    W, b = net.collapse()
    assert route(W, b, x.detach().numpy()).tolist() == [0, 0, 0]
    f.sum().backward()  # fac = 0 does not break the backward pass
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)


@pytest.mark.parametrize(("quantizer", "factor"), [("plain", 1.0), ("scaled", 2.0)])
def test_straight_through_sign_gradient(quantizer, factor):
    z = torch.tensor([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5], dtype=torch.float64, requires_grad=True)
    scaled_sign(z, quantizer).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), factor * np.array([0, 1, 1, 1, 1, 1, 0]))


def test_straight_through_sign_values():
    z = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64)
    np.testing.assert_array_equal(scaled_sign(z, "plain").numpy(), [-1, -1, 1])
    fac = z.abs().mean().item()
    np.testing.assert_allclose(scaled_sign(z, "scaled").numpy(), [-fac, -fac, fac])


def test_split_gradient_is_algorithm_two():
    """Paper mode, L = 1, K = 1, one x: ∂f/∂a_n = 1[|a_n| ≤ 1]·Σ_l p_l(θ_l − θ̄)A[l, n],
    ∂f/∂W = (∂f/∂a) xᵀ, ∂f/∂b = ∂f/∂a."""
    net = _net(6, 3, 1, quantizer="plain", seed=3, bias_std=0.5)
    x = torch.randn(1, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    f, _ = net(x)
    f.sum().backward()
    with torch.no_grad():
        a = net.split_values(x)[0]
        A = net.A
        s = torch.where(a > 0, 1.0, -1.0).to(a.dtype)
        p = torch.softmax(A @ s, dim=0)
        theta = net.leaves[:, 0]
        theta_bar = (p * theta).sum()
        df_da = (a.abs() <= 1).to(a.dtype) * ((p * (theta - theta_bar)) @ A)
    layer = net.layers[0]
    torch.testing.assert_close(layer.bias.grad, df_da, rtol=0, atol=1e-12)
    torch.testing.assert_close(layer.weight.grad, df_da[:, None] * x, rtol=0, atol=1e-12)
    assert (df_da != 0).sum() > 1  # dense: more than the path's nodes get a gradient


def test_leaf_gradient_is_one_hot_on_the_reached_leaf():
    net = _net(4, 3, 2, seed=5)
    x = torch.randn(1, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    f, leaf = net(x)
    f[0, 1].backward()
    expected = torch.zeros_like(net.leaves)
    expected[leaf.item(), 1] = 1.0
    torch.testing.assert_close(net.leaves.grad, expected, rtol=0, atol=0)


def test_collapsed_stack_equals_the_layers():
    net = _net(7, 4, 2, layers=3, seed=7)
    X = torch.randn(500, 7, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    W, b = net.collapse()
    z = net.split_values(X).detach().numpy()
    assert np.abs(z - (X.numpy() @ W.T + b)).max() < 1e-10


def test_penalty_reaches_every_split_parameter_and_nothing_else():
    net = _net(5, 3, 2, layers=3, seed=9)
    reg = penalty(net, TrainConfig(epochs=1, l1_penalty=1e-3))
    reg.backward()
    assert net.leaves.grad is None or (net.leaves.grad == 0).all()
    assert "A" in dict(net.named_buffers()) and "A" not in dict(net.named_parameters())
    for layer in net.layers:
        assert (layer.weight.grad != 0).all() and (layer.bias.grad != 0).all()
    assert penalty(net, TrainConfig(epochs=1)) is None


def test_hidden_widths_follow_table_12():
    assert hidden_widths(2, 3) == [240, 240]
    assert hidden_widths(4, 3) == [600, 600]
    assert hidden_widths(6, 3) == [1008, 1008]
    assert hidden_widths(8, 3) == [1530, 1530]
    assert hidden_widths(10, 3) == [2046, 2046]
    assert hidden_widths(6, 1) == []
    assert hidden_widths(3, 2, multiplier=2) == [14]

"""The soft tree ensemble: smooth-step, routing, leaf probabilities, the tensor program against a loop."""

import math

import numpy as np
import pytest
import torch

from models.ground.tree import smoothstep as tree_smoothstep
from models.skinny.ensemble import SoftTreeEnsemble, leaf_probabilities, smoothstep


def test_smoothstep_values_from_the_spec():
    t = torch.tensor([-0.6, -0.5, -0.25, 0.0, 0.25, 0.5, 0.6], dtype=torch.float64)
    assert smoothstep(t, 1.0).tolist() == [0.0, 0.0, 0.15625, 0.5, 0.84375, 1.0, 1.0]


def test_smoothstep_is_monotone_c1_and_equals_the_cubic():
    t = torch.linspace(-2, 2, 2001, dtype=torch.float64)
    assert torch.all(torch.diff(smoothstep(t, 1.3)) >= 0)
    points = torch.tensor([0.0, 0.65, -0.65, 2.0, -2.0], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(smoothstep(points, 1.3).sum(), points)
    assert grad.tolist() == pytest.approx([3 / (2 * 1.3), 0.0, 0.0, 0.0, 0.0], abs=1e-12)
    rng = np.random.default_rng(0)
    x = rng.uniform(-0.5, 0.5, 50) * 1.3  # inside the band, where S is the cubic
    u = x / 1.3 + 0.5
    np.testing.assert_allclose(smoothstep(torch.from_numpy(x), 1.3).numpy(), 3 * u**2 - 2 * u**3, rtol=1e-12)
    np.testing.assert_allclose(smoothstep(torch.from_numpy(x), 1.3).numpy(), tree_smoothstep(x, 1.3), rtol=1e-12)


def test_depth_two_hand_example():
    # one tree, W = 0, biases chosen so S(root) = 0.7, S(node 1) = 0.2, S(node 2) = 0.9
    model = SoftTreeEnsemble(3, 1, 1, 2, dtype=torch.float64)
    with torch.no_grad():
        model.kernel.zero_()
        model.bias.copy_(torch.tensor([math.log(0.7 / 0.3), math.log(0.2 / 0.8), math.log(0.9 / 0.1)]))
    with torch.no_grad():
        P = model.leaf_probabilities(torch.randn(5, 3, dtype=torch.float64))
    np.testing.assert_allclose(P[0, 0].numpy(), [0.14, 0.56, 0.27, 0.03], atol=1e-12)


@pytest.mark.parametrize("activation", ["sigmoid", "smoothstep"])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_leaf_probabilities_are_a_distribution_per_tree(activation, depth):
    g = torch.Generator().manual_seed(depth)
    model = SoftTreeEnsemble(6, 2, 4, depth, activation=activation, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.kernel.mul_(5)
    with torch.no_grad():
        P = model.leaf_probabilities(torch.randn(40, 6, generator=g, dtype=torch.float64))
    assert P.shape == (40, 4, 2**depth) and torch.all(P >= 0)
    np.testing.assert_allclose(P.sum(-1).numpy(), 1.0, atol=1e-12)


def naive_output(model: SoftTreeEnsemble, x: np.ndarray) -> np.ndarray:
    """Per tree, per leaf: the product of branch probabilities along the ancestors, times the leaf."""
    K, b, leaves = (t.detach().double().numpy() for t in (model.kernel, model.bias, model.leaves))
    n_nodes = 2**model.depth - 1
    out = np.zeros((x.shape[0], leaves.shape[2]))
    for j in range(model.n_trees):
        for leaf in range(2**model.depth):
            node, prob = n_nodes + leaf, np.ones(x.shape[0])
            while node > 0:
                parent = (node - 1) // 2
                z = x @ K[:, j * n_nodes + parent] + b[j * n_nodes + parent]
                s = 1 / (1 + np.exp(-z))
                prob *= s if node == 2 * parent + 1 else 1 - s
                node = parent
            out += prob[:, None] * leaves[j, leaf]
    return out


def test_the_tensor_program_equals_a_loop_over_trees_leaves_and_ancestors():
    g = torch.Generator().manual_seed(3)
    model = SoftTreeEnsemble(5, 3, 7, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.bias.normal_(generator=g)
    x = torch.randn(30, 5, generator=g, dtype=torch.float64)
    np.testing.assert_allclose(model(x).detach().numpy(), naive_output(model, x.numpy()), atol=1e-12)


def test_the_ensemble_sums_its_trees():
    g = torch.Generator().manual_seed(4)
    model = SoftTreeEnsemble(4, 2, 3, 2, generator=g, dtype=torch.float64)
    x = torch.randn(10, 4, generator=g, dtype=torch.float64)
    parts = []
    for j in range(3):
        single = SoftTreeEnsemble(4, 2, 1, 2, dtype=torch.float64)
        with torch.no_grad():
            single.kernel.copy_(model.kernel[:, 3 * j: 3 * j + 3])
            single.bias.copy_(model.bias[3 * j: 3 * j + 3])
            single.leaves.copy_(model.leaves[j: j + 1])
        parts.append(single(x))
    torch.testing.assert_close(model(x), sum(parts), rtol=0, atol=1e-14)


def test_hard_routing_with_the_smoothstep_picks_one_leaf_per_tree():
    g = torch.Generator().manual_seed(5)
    model = SoftTreeEnsemble(3, 2, 4, 3, activation="smoothstep", width=1.0, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.kernel.mul_(1000)  # every |z| far beyond the band
    x = torch.randn(200, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        z = torch.addmm(model.bias, x, model.kernel)
        x = x[(z.abs() >= 0.5).all(dim=1)]  # rows with every split value outside the band ±γ_ss/2
        assert x.shape[0] >= 25
        P = model.leaf_probabilities(x)
    assert torch.all((P == 0) | (P == 1)) and torch.all(P.sum(-1) == 1)
    chosen = P.argmax(-1)  # (rows, trees)
    expected = model.leaves.detach()[torch.arange(4), chosen].sum(1)
    torch.testing.assert_close(model(x).detach(), expected, rtol=0, atol=1e-13)  # up to summation order


def test_leaf_order_interleaves_children():
    left = torch.tensor([[[0.7, 0.2, 0.9]]], dtype=torch.float64)
    np.testing.assert_allclose(leaf_probabilities(left, 2)[0, 0].numpy(), [0.14, 0.56, 0.27, 0.03], atol=1e-15)


def test_glorot_initialisation_bounds():
    g = torch.Generator().manual_seed(0)
    model = SoftTreeEnsemble(30, 2, 20, 4, generator=g).requires_grad_(False)
    a = math.sqrt(6 / (30 + 20 * 15))
    assert model.kernel.shape == (30, 300) and float(model.kernel.abs().max()) <= a
    assert float(model.kernel.abs().max()) > 0.95 * a and torch.all(model.bias == 0)
    assert float(model.leaves.abs().max()) <= math.sqrt(6 / (2 + 20))
    # the expected row norm the threshold is compared with: √(m|I|·a²/3) ≈ 1.35 on breast_cancer's shape
    assert float(model.group_norms().mean()) == pytest.approx(math.sqrt(300 * a * a / 3), rel=0.05)

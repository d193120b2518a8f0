"""The group prox (hard thresholding, block soft thresholding, the guard), the λ0 ramp and the ridge."""

import itertools
import math

import numpy as np
import pytest
import torch

from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.prox import dense_to_sparse, group_soft_threshold, hard_threshold, kept_rows, l0_threshold
from models.skinny.train import Data, Schedule, fit_ensemble, prox_step


def rows_with_norms(norms, width=6, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(len(norms), width))
    return torch.from_numpy(rows / np.linalg.norm(rows, axis=1, keepdims=True) * np.asarray(norms)[:, None])


def test_threshold_case_from_the_spec_zeroes_below_and_keeps_above_bit_for_bit():
    threshold = l0_threshold(0.1, 5.0)
    assert threshold == pytest.approx(1.0)
    W = rows_with_norms([0.5, 0.99, 1.01, 2.0])
    before = W.clone()
    keep = hard_threshold(W, threshold)
    assert keep.tolist() == [False, False, True, True]
    assert torch.all(W[:2] == 0.0)
    assert torch.equal(W[2:], before[2:])  # kept rows bitwise unchanged: no shrinkage


def test_a_tie_is_zeroed_as_in_the_authors_code():
    W = torch.tensor([[3.0, 4.0], [6.0, 8.0]], dtype=torch.float64)  # norms 5 and 10
    assert hard_threshold(W, 5.0).tolist() == [False, True]


def test_the_prox_is_group_wise_not_elementwise():
    W = torch.tensor([[2.0, 1e-9, 0.0], [0.1, 0.1, 0.1]], dtype=torch.float64)
    hard_threshold(W, 1.0)
    assert W[0, 1] == 1e-9 and torch.all(W[1] == 0)


@pytest.mark.parametrize("seed", range(20))
def test_hard_thresholding_is_the_exact_minimiser_by_brute_force(seed):
    rng = np.random.default_rng(seed)
    eta, lam = rng.uniform(0.01, 1.0), rng.uniform(0.01, 5.0)
    Z = torch.from_numpy(rng.normal(scale=rng.uniform(0.2, 2.0), size=(4, 5)))
    W = Z.clone()
    hard_threshold(W, l0_threshold(eta, lam))

    def objective(candidate):
        nnz = int((candidate.norm(dim=1) > 0).sum())
        return float(((candidate - Z) ** 2).sum()) / (2 * eta) + lam * nnz

    best = min(objective(Z * torch.tensor(mask, dtype=Z.dtype)[:, None])
               for mask in itertools.product([0.0, 1.0], repeat=4))
    assert objective(W) <= best + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_block_soft_thresholding_is_the_group_lasso_minimiser(seed):
    # prox of τ Σ‖W_k‖: each row's minimiser is Z_k (1 − τ/‖Z_k‖)_+; check against a perturbation search
    rng = np.random.default_rng(seed)
    tau = rng.uniform(0.1, 1.5)
    Z = torch.from_numpy(rng.normal(size=(5, 4)))
    W = Z.clone()
    group_soft_threshold(W, tau)

    def objective(candidate):
        return 0.5 * float(((candidate - Z) ** 2).sum()) + tau * float(candidate.norm(dim=1).sum())

    for _ in range(200):
        assert objective(W) <= objective(W + 1e-3 * torch.from_numpy(rng.normal(size=(5, 4)))) + 1e-12
    norms = Z.norm(dim=1)
    expected = torch.clamp(1 - tau / norms, min=0)[:, None] * Z
    torch.testing.assert_close(W, expected, rtol=0, atol=1e-14)


def test_the_guard_keeps_the_largest_rows_unchanged():
    W = rows_with_norms([0.3, 0.8, 0.0, 0.5])
    before = W.clone()
    keep = hard_threshold(W, 10.0, min_keep=2)
    assert keep.tolist() == [False, True, False, True]
    assert torch.equal(W[[1, 3]], before[[1, 3]]) and torch.all(W[[0, 2]] == 0)
    assert kept_rows(torch.tensor([0.0, 0.0]), 1.0, min_keep=1).tolist() == [False, False]  # zero rows stay zero
    W = rows_with_norms([0.3, 0.8])
    assert group_soft_threshold(W, 10.0, min_keep=1).tolist() == [False, True]
    assert float(W[1].norm()) == pytest.approx(0.8)


def test_the_prox_never_touches_the_bias_or_the_leaves():
    model = SoftTreeEnsemble(4, 2, 3, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    bias, leaves = model.bias.detach().clone(), model.leaves.detach().clone()
    schedule = Schedule("l0", lambda0=1e6, dense_to_sparse=False, rate=0.0, ridge=0.0, lasso=0.0, min_keep=0)
    with torch.no_grad():
        prox_step(model.kernel, schedule, 1, 0.1)
    assert torch.all(model.kernel == 0)
    assert torch.equal(model.bias, bias) and torch.equal(model.leaves, leaves)


def test_lambda0_zero_is_a_no_op():
    W = rows_with_norms([1e-6, 0.5])
    before = W.clone()
    prox_step(W, Schedule("l0", 0.0, False, 0.0, 0.0, 0.0, 0), 7, 0.1)
    assert torch.equal(W, before)


def test_the_dense_to_sparse_ramp():
    gamma, s = 3.0, 0.01
    values = [dense_to_sparse(t, gamma, s) for t in range(0, 2000, 50)]
    assert values[0] == 0.0 and all(b > a for a, b in itertools.pairwise(values))
    assert dense_to_sparse(100, gamma, s) == pytest.approx(gamma * (1 - math.exp(-1)))
    assert dense_to_sparse(10**7, gamma, s) == pytest.approx(gamma)
    # the worked example of breast_cancer: 23 steps per epoch, γ = 100/30
    assert dense_to_sparse(23, 100 / 30, 0.01) == pytest.approx(0.68, abs=0.01)
    assert dense_to_sparse(230, 100 / 30, 0.01) == pytest.approx(3.00, abs=0.01)


def tiny_problem(n=40, p=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, p, generator=g, dtype=torch.float64)
    Y = (X[:, 0] > 0).long()
    return g, Data(X=X, Y=Y)


def ce(out, y, w):
    return torch.nn.functional.cross_entropy(out, y)


def test_the_step_counter_counts_optimiser_steps_across_epochs():
    g, data = tiny_problem(n=40)
    model = SoftTreeEnsemble(3, 2, 2, 2, generator=g, dtype=torch.float64)
    records = []
    schedule = Schedule("l0", 1.0, True, 0.01, 0.0, 0.0, 0)
    steps = fit_ensemble(model, data, ce, schedule, learning_rate=0.1, batch_size=16, max_epochs=5, generator=g,
                         record=lambda **r: records.append(r) or True, validation=lambda o, t: {})
    assert steps == 5 * 3  # ⌈40 / 16⌉ = 3 steps per epoch, never reset
    assert [r["step"] for r in records] == [3, 6, 9, 12, 15]
    assert records[-1]["lambda0"] == pytest.approx(dense_to_sparse(15, 1.0, 0.01))


def test_without_data_loss_one_step_shrinks_the_kernel_by_the_ridge_factor():
    g, data = tiny_problem()
    model = SoftTreeEnsemble(3, 2, 5, 2, generator=g, dtype=torch.float64)
    before = model.kernel.detach().clone()
    ridge, lr = 0.7 / (5 * 3), 0.1
    fit_ensemble(model, data, lambda out, y, w: out.sum() * 0.0, Schedule("l0", 0.0, False, 0.0, ridge, 0.0, 0),
                 learning_rate=lr, batch_size=100, max_epochs=1, generator=g, record=lambda **r: True,
                 validation=lambda o, t: {})
    torch.testing.assert_close(model.kernel.detach(), before * (1 - 2 * lr * ridge), rtol=1e-15, atol=0)


def test_a_constant_zero_feature_dies_at_the_predicted_step():
    """An all-zero column gets no loss gradient, so its row shrinks as (1 − 2ηλ2/(m|I|))^t under the
    ridge alone, and the prox removes it at the first step where that falls below √(2ηλ0(t))."""
    g, data = tiny_problem(n=32, p=3, seed=1)
    data.X[:, 2] = 0.0
    model = SoftTreeEnsemble(3, 2, 4, 2, generator=g, dtype=torch.float64)
    w0 = float(model.kernel.detach()[2].norm())
    lr, ridge, gamma, s = 0.2, 0.5 / 12, 2.0, 0.05
    factor = 1 - 2 * lr * ridge
    expected = next(t for t in range(1, 100_000)
                    if w0 * factor**t <= l0_threshold(lr, dense_to_sparse(t, gamma, s)))
    norms = []

    def record(**r):
        norms.append(float(model.kernel.detach()[2].norm()))
        return True

    schedule = Schedule("l0", gamma, True, s, ridge, 0.0, 0)
    fit_ensemble(model, data, ce, schedule, learning_rate=lr, batch_size=32, max_epochs=expected + 3, generator=g,
                 record=record, validation=lambda o, t: {})  # one step per epoch
    assert norms[expected - 2] == pytest.approx(w0 * factor ** (expected - 1), rel=1e-12)
    assert norms[expected - 1] == 0.0 and norms[expected] == 0.0

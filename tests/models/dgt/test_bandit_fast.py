"""The bandit learners' hand-written rounds (``TreeRounds`` for the tree, ``LinearRounds`` for the
linear baseline): the same learner as autograd through the module and the estimator's surrogate,
and the default stream length."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from models.dgt.bandit import (
    DEFAULT_PASSES,
    DEFAULT_ROUNDS,
    MAX_DEFAULT_ROUNDS,
    ClassificationOracle,
    DGTBanditClassifier,
    DGTBanditRegressor,
    EpsilonGreedy,
    LinearBanditClassifier,
    LinearBanditRegressor,
    LinearRounds,
    OnePoint,
    RegressionOracle,
    TreeRounds,
    TwoPoint,
    default_rounds,
    hand_rounds,
    hand_written,
    learn,
    row_forward,
    stream_order,
)
from models.dgt.network import DGTNetwork
from models.dgt.synthetic import oblique_tree_data


def _run(start: DGTNetwork, X: np.ndarray, make_oracle, est, draws, order, *, tree: bool, eval_every: int):
    net = copy.deepcopy(start)
    records: list[dict] = []
    info = learn(lambda x, net=net: row_forward(net, x), net.parameters(), torch.tensor(X, dtype=torch.float64),
                 order, make_oracle(), est, draws, learning_rate=1e-2, accumulate=4, eval_every=eval_every,
                 record=lambda **r: records.append(r) or True, hand=net if tree else None)
    return net, records, info


@pytest.mark.parametrize("quantizer", ["scaled", "plain"])
@pytest.mark.parametrize("eval_every", [96, 6])  # 6: records split the 4-round steps
def test_hand_written_rounds_equal_autograd_for_classification(quantizer, eval_every):
    X, y = oblique_tree_data(48, seed=4)
    start = DGTNetwork(6, 3, 4, quantizer=quantizer, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    est = EpsilonGreedy(0.3, 4)
    order = torch.as_tensor(stream_order(48, 96, np.random.default_rng(0)))
    draws = list(est.draws(96, torch.Generator().manual_seed(1)))
    labels = torch.as_tensor(y)
    runs = [_run(start, X, lambda: ClassificationOracle(labels, order), est, draws, order, tree=tree,
                 eval_every=eval_every) for tree in (False, True)]
    (auto, auto_records, auto_info), (fast, fast_records, fast_info) = runs
    assert auto_info == fast_info and fast_info["steps"] == 24
    moved = max(float((a - b).detach().abs().max()) for a, b in zip(fast.parameters(), start.parameters()))
    assert moved > 0.1  # the stream trained the tree
    for a, b in zip(fast.parameters(), auto.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    strip = [[{k: v for k, v in r.items() if k != "elapsed_s"} for r in rs] for rs in (auto_records, fast_records)]
    assert strip[0] == strip[1]


@pytest.mark.parametrize("cls", [OnePoint, TwoPoint])
def test_hand_written_rounds_equal_autograd_for_regression_with_two_outputs(cls):
    X, y = oblique_tree_data(48, task="regression", seed=4)
    Y = np.column_stack([y, 1 - y])
    start = DGTNetwork(6, 3, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    est = cls(0.5)
    order = torch.as_tensor(stream_order(48, 96, np.random.default_rng(0)))
    draws = list(est.draws(96, torch.Generator().manual_seed(1), 2))
    runs = [_run(start, X, lambda: RegressionOracle(Y, order, budget=est.budget), est, draws, order, tree=tree,
                 eval_every=10) for tree in (False, True)]
    for a, b in zip(runs[1][0].parameters(), runs[0][0].parameters()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    assert [r["avg_loss"] for r in runs[0][1]] == pytest.approx([r["avg_loss"] for r in runs[1][1]], abs=1e-12)


def test_the_closed_form_gradient_is_the_surrogate_s_autograd_gradient():
    torch.manual_seed(0)
    theta = 2 * torch.randn(8, 3, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 1, 0, 2, 1, 0])
    est = EpsilonGreedy(0.3, 3)
    draws = est.draws(8, torch.Generator().manual_seed(2))
    order = torch.arange(8)
    auto = theta.clone().requires_grad_()
    surrogate, lost = est(auto, 0, draws, ClassificationOracle(labels, order))
    surrogate.backward()
    grad, lost_np = est.gradient(theta.numpy(), 0, [d.numpy() for d in draws], ClassificationOracle(labels, order))
    np.testing.assert_allclose(grad, auto.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert np.array_equal(lost_np, lost.numpy())
    assert np.count_nonzero(grad) <= 8  # one played score per round


def _linear(n_features: int, n_outputs: int) -> torch.nn.Linear:
    layer = torch.nn.Linear(n_features, n_outputs, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(n_outputs, n_features, generator=torch.Generator().manual_seed(3)))
    return layer


def _run_linear(start: torch.nn.Linear, X: np.ndarray, make_oracle, est, draws, order, *, hand: bool,
                eval_every: int):
    layer = copy.deepcopy(start)
    records: list[dict] = []
    info = learn(layer, layer.parameters(), torch.tensor(X, dtype=torch.float64), order, make_oracle(), est, draws,
                 learning_rate=1e-2, accumulate=4, eval_every=eval_every,
                 record=lambda **r: records.append(r) or True, hand=layer if hand else None)
    return layer, records, info


@pytest.mark.parametrize("eval_every", [96, 6])
def test_hand_written_linear_rounds_equal_autograd_for_classification(eval_every):
    X, y = oblique_tree_data(48, seed=4)
    start = _linear(6, 4)
    est = EpsilonGreedy(0.3, 4)
    order = torch.as_tensor(stream_order(48, 96, np.random.default_rng(0)))
    draws = list(est.draws(96, torch.Generator().manual_seed(1)))
    labels = torch.as_tensor(y)
    (auto, auto_records, auto_info), (fast, fast_records, fast_info) = [
        _run_linear(start, X, lambda: ClassificationOracle(labels, order), est, draws, order, hand=hand,
                    eval_every=eval_every) for hand in (False, True)]
    assert auto_info == fast_info and fast_info["steps"] == 24
    assert float((fast.weight - start.weight).detach().abs().max()) > 0.1  # the stream trained the layer
    for a, b in zip(fast.parameters(), auto.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    strip = [[{k: v for k, v in r.items() if k != "elapsed_s"} for r in rs] for rs in (auto_records, fast_records)]
    assert [r.keys() for r in strip[0]] == [r.keys() for r in strip[1]]
    for a, b in zip(*strip):
        assert a == pytest.approx(b, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("cls", [OnePoint, TwoPoint])
def test_hand_written_linear_rounds_equal_autograd_for_regression_with_two_outputs(cls):
    X, y = oblique_tree_data(48, task="regression", seed=4)
    Y = np.column_stack([y, 1 - y])
    start = _linear(6, 2)
    est = cls(0.5)
    order = torch.as_tensor(stream_order(48, 96, np.random.default_rng(0)))
    draws = list(est.draws(96, torch.Generator().manual_seed(1), 2))
    runs = [_run_linear(start, X, lambda: RegressionOracle(Y, order, budget=est.budget), est, draws, order,
                        hand=hand, eval_every=10) for hand in (False, True)]
    assert float((runs[1][0].bias - start.bias).detach().abs().max()) > 0.05
    for a, b in zip(runs[1][0].parameters(), runs[0][0].parameters()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    assert [r["avg_loss"] for r in runs[0][1]] == pytest.approx([r["avg_loss"] for r in runs[1][1]], abs=1e-12)


def test_the_fit_runs_its_tree_by_hand_written_rounds_and_a_stacked_tree_by_autograd():
    X, y = oblique_tree_data(300, seed=1)
    assert hand_written(DGTNetwork(6, 3, 4)) and hand_written(torch.nn.Linear(6, 4))
    assert not hand_written(DGTNetwork(6, 3, 4, n_layers=2)) and not hand_written(torch.nn.Conv1d(1, 1, 1))
    assert isinstance(hand_rounds(torch.nn.Linear(6, 1), learning_rate=1e-3, accumulate=4), LinearRounds)
    assert isinstance(hand_rounds(DGTNetwork(6, 3, 4), learning_rate=1e-3, accumulate=4), TreeRounds)
    with pytest.raises(ValueError, match="one-layer"):
        TreeRounds(DGTNetwork(6, 3, 4, n_layers=2), learning_rate=1e-3, accumulate=4)
    with pytest.raises(ValueError, match="linear layer"):
        hand_rounds(DGTNetwork(6, 3, 4, n_layers=2), learning_rate=1e-3, accumulate=4)
    for linear in (LinearBanditClassifier(n_rounds=400, device="cpu").fit(X, y),
                   LinearBanditRegressor(n_rounds=400, device="cpu").fit(X, X[:, 0])):
        assert linear.n_queries_ in (400, 800) and np.all(np.isfinite(linear.coef_))
    for layers in (1, 2):
        model = DGTBanditClassifier(depth=3, n_layers=layers, n_rounds=400, device="cpu").fit(X, y)
        assert model.n_queries_ == 400 and model.predict(X).shape == (300,)
    regression = DGTBanditRegressor(depth=2, n_rounds=400, device="cpu").fit(X, X[:, 0])
    assert np.all(np.isfinite(regression.predict(X)))


@pytest.mark.parametrize(("n_rows", "rounds"), [(50, DEFAULT_ROUNDS), (1_258, DEFAULT_ROUNDS),
                                                 (14_000, DEFAULT_PASSES * 14_000),
                                                 (140_000, MAX_DEFAULT_ROUNDS),
                                                 (5 * MAX_DEFAULT_ROUNDS, 5 * MAX_DEFAULT_ROUNDS)])
def test_the_default_stream_is_passes_over_the_rows_within_bounds(n_rows, rounds):
    assert default_rounds(n_rows) == rounds
    assert DGTBanditClassifier()._stream_length(n_rows) == rounds
    assert DGTBanditClassifier(n_rounds=7)._stream_length(n_rows) == 7

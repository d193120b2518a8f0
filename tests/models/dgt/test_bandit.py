"""DGT-Bandit: the oracles, the gradient estimates, the online learner and its estimators.

T11-T14 check the estimates and the query accounting exactly; T16 and the comparisons with the
online linear baseline check that learning from bandit feedback works on the synthetic oblique-tree
problem (one seed each, 20 000 rounds: a few seconds per fit on a busy 2-core machine).
"""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch

from models.base import Callback
from models.dgt.bandit import (
    BanditProtocolError,
    ClassificationOracle,
    DGTBanditClassifier,
    DGTBanditRegressor,
    EpsilonGreedy,
    LinearBanditClassifier,
    LinearBanditRegressor,
    OnePoint,
    RegressionOracle,
    TwoPoint,
    bandit_loss,
    learn,
    regret_curve,
    row_forward,
    stream_order,
)
from models.dgt.network import DGTNetwork
from models.dgt.synthetic import oblique_tree, oblique_tree_data
from models.ground.errors import TrainingCancelled
from models.persist import load_model, save_model

N_TRAIN, N_TEST = 20_000, 5_000


def order_of(n_rounds: int) -> torch.Tensor:
    return torch.arange(n_rounds)


def split(task: str = "classification", seed: int = 0):
    X, y = oblique_tree_data(N_TRAIN + N_TEST, task=task, seed=seed)
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


# ------------------------------------------------------------------ the synthetic generator
def test_the_synthetic_tree_labels_the_data_and_a_longer_draw_only_appends_rows():
    X, y = oblique_tree_data(500, seed=3)
    tree = oblique_tree(seed=3)
    assert X.shape == (500, 6) and y.dtype == np.int64 and set(np.unique(y)) <= {0, 1, 2, 3}
    assert np.array_equal(tree.predict(X), y)
    X2, y2 = oblique_tree_data(800, seed=3)
    assert np.array_equal(X2[:500], X) and np.array_equal(y2[:500], y)
    assert sorted(np.bincount(tree.leaf_value, minlength=4)) == [2, 2, 2, 2]  # every class owns leaves
    Xr, yr = oblique_tree_data(4000, task="regression", noise=0.05, seed=3)
    residual = yr - oblique_tree(task="regression", seed=3).predict(Xr)
    assert abs(residual.std() - 0.05) < 0.005 and np.all(tree.leaf_value >= 0)


# ------------------------------------------------------------------ T11: the classification estimate
def test_t11_the_sigmoid_surrogate_has_the_gradient_of_eq_8_on_the_played_score_only():
    torch.manual_seed(0)
    K, delta = 4, 0.3
    theta = (2 * torch.randn(6, K, dtype=torch.float64)).requires_grad_()
    labels = torch.tensor([0, 1, 2, 3, 0, 1])
    uniform = torch.tensor([0.05, 0.9, 0.2, 0.5, 0.29, 0.31])  # < δ explores
    arm = torch.tensor([1, 2, 3, 0, int(theta[4].argmax()), 3])  # round 4 explores onto the greedy label
    oracle = ClassificationOracle(labels, order_of(6))
    est = EpsilonGreedy(delta, K)
    surrogate, lost = est(theta, 0, (uniform, arm), oracle)
    surrogate.backward()

    best = theta.detach().argmax(dim=1)
    played = torch.where(uniform < delta, arm, best)
    p = torch.where(played == best, torch.tensor(1 - delta + delta / K, dtype=torch.float64),
                    torch.tensor(delta / K, dtype=torch.float64))  # in θ's dtype
    r = (played == labels).double()
    assert torch.equal(lost, 1 - r.float())
    s = torch.sigmoid(theta.detach()[torch.arange(6), played])
    expected = torch.zeros_like(theta)
    expected[torch.arange(6), played] = 2 / p * (s - r) * s * (1 - s)  # eq. 8 with ℓ = 1 − r
    # eq. 8 as the paper writes it: 2/p·(ℓ − (1 − σ))·σ(1 − σ)
    assert torch.allclose(expected[torch.arange(6), played], 2 / p * ((1 - r) - (1 - s)) * s * (1 - s))
    torch.testing.assert_close(theta.grad, expected, rtol=1e-12, atol=1e-15)
    assert p[4] == pytest.approx(0.775) and p[1] == pytest.approx(0.775) and p[0] == pytest.approx(0.075)


def test_the_played_label_is_drawn_from_the_p_of_the_importance_weight():
    K, delta, n = 4, 0.3, 200_000
    gen = torch.Generator().manual_seed(1)
    est = EpsilonGreedy(delta, K)
    theta = torch.tensor([[0.1, 2.0, -1.0, 0.5]]).expand(n, K)
    played, prob = est.play(theta, est.draws(n, gen))
    freq = torch.bincount(played, minlength=K).double() / n
    expected = torch.tensor([delta / K, 1 - delta + delta / K, delta / K, delta / K], dtype=torch.float64)
    assert torch.allclose(freq, expected, atol=0.004)
    assert torch.allclose(prob.double(), expected[played])


# ------------------------------------------------------------------ T12, T13: the regression estimates
@pytest.mark.parametrize("delta", [0.01, 0.5, 1.0])
def test_t12_the_two_point_estimate_of_the_squared_loss_is_exactly_its_derivative(delta):
    y = torch.tensor([[0.3]])
    oracle = RegressionOracle(y.numpy(), torch.zeros(3, dtype=torch.long), loss="squared", budget=2, target_min=0.0,
                              target_range=1.0)  # three rounds showing the one row
    y32 = float(np.float32(0.3))
    for t, u in enumerate((1.0, -1.0, 1.0)):
        theta = torch.tensor([[0.8]], dtype=torch.float64, requires_grad=True)
        surrogate, incurred = TwoPoint(delta)(theta, t, (torch.tensor([[u]], dtype=torch.float64),), oracle)
        surrogate.backward()
        assert theta.grad.item() == pytest.approx(2 * (0.8 - y32), rel=1e-12, abs=1e-12)
        assert incurred.item() == pytest.approx((0.8 - y32) ** 2 + delta**2, rel=1e-12)  # both points are played
    assert oracle.queries == 6


def test_t13_the_one_point_estimate_is_unbiased_for_the_two_point_value():
    n, delta = 100_000, 0.5
    gen = torch.Generator().manual_seed(0)
    oracle = RegressionOracle(np.full((n, 1), 0.3), order_of(n), loss="squared", budget=1, target_min=0.0,
                              target_range=1.0)
    est = OnePoint(delta)
    (u,) = est.draws(n, gen)
    assert set(u.unique().tolist()) == {-1.0, 1.0}  # Rademacher, not Gaussian
    theta = torch.full((n, 1), 0.8, dtype=torch.float64, requires_grad=True)
    surrogate, incurred = est(theta, 0, (u.double(),), oracle)
    surrogate.backward()
    g = theta.grad[:, 0]
    two_point = 2 * (0.8 - float(np.float32(0.3)))
    assert abs(g.mean().item() - two_point) < 3 * g.std().item() / np.sqrt(n)
    played = 0.8 + delta * u[:, 0].double()  # the regret is charged at the played point
    assert torch.allclose(incurred, (played - float(np.float32(0.3))) ** 2)


def test_the_huber_loss_has_xi_0_2_on_the_scaled_target():
    d = torch.tensor([[0.0], [0.1], [-0.2], [0.5], [-1.0]], dtype=torch.float64)
    expected = [0.0, 0.005, 0.02, 0.2 * 0.5 - 0.02, 0.2 - 0.02]
    assert torch.allclose(bandit_loss(d, "huber"), torch.tensor(expected, dtype=torch.float64))
    assert torch.allclose(bandit_loss(d, "squared"), d[:, 0] ** 2)


# ------------------------------------------------------------------ T14: oracle accounting
def test_t14_a_round_asked_beyond_its_budget_raises():
    oracle = ClassificationOracle(torch.tensor([0, 1, 2]), order_of(3))
    oracle.loss(0, torch.tensor([0, 1]))
    with pytest.raises(BanditProtocolError, match="round 1"):
        oracle.loss(1, torch.tensor([1]))
    oracle.loss(2, torch.tensor([0]))
    assert oracle.queries == 3
    two = RegressionOracle(np.zeros((2, 1)), order_of(2), budget=2)
    two.loss(0, torch.zeros(2, 1))
    two.loss(0, torch.zeros(2, 1))
    with pytest.raises(BanditProtocolError):
        two.loss(1, torch.zeros(1, 1))
    with pytest.raises(BanditProtocolError):
        two.loss(2, torch.zeros(1, 1))  # past the stream


@pytest.mark.parametrize(("cls", "params", "per_round"), [
    (DGTBanditClassifier, {}, 1),
    (DGTBanditRegressor, {"estimator": "one_point"}, 1),
    (DGTBanditRegressor, {"estimator": "two_point"}, 2),
])
def test_t14_queries_are_counted_per_round_and_passes_count_again(cls, params, per_round):
    task = "classification" if cls is DGTBanditClassifier else "regression"
    X, y = oblique_tree_data(100, task=task, seed=1)
    model = cls(depth=2, n_rounds=350, eval_every=50, device="cpu", **params).fit(X, y)
    assert model.n_rounds_ == 350 and model.n_queries_ == per_round * 350
    assert [r["queries"] for r in model.history_] == [per_round * t for t in range(50, 351, 50)]
    assert [r["round"] for r in model.history_] == list(range(50, 351, 50))
    counts = np.bincount(model.stream_, minlength=100)
    assert np.all(counts[model.stream_[:300]] >= 3)  # three full passes, each a fresh permutation
    for p in range(3):
        assert sorted(model.stream_[100 * p: 100 * (p + 1)]) == list(range(100))
    assert not np.array_equal(model.stream_[:100], model.stream_[100:200])


def test_t14_the_learner_gets_no_labels_only_loss_answers():
    parameters = inspect.signature(learn).parameters
    assert not {"y", "labels", "targets", "Y"} & set(parameters)
    oracle = ClassificationOracle(torch.tensor([0, 1, 2]), order_of(3))
    assert {a for a in vars(oracle) if not a.startswith("_")} == {"budget", "queries"}

    class Blind:
        """An oracle the learner can only ask: it holds no labels, just a function answering losses."""

        def __init__(self, answer):
            self._answer = answer
            self.queries = 0

        def loss(self, start, played):
            self.queries += played.shape[0]
            return self._answer(start, played)

    X, y = oblique_tree_data(64, seed=2)
    runs = []
    for blind in (False, True):
        torch.manual_seed(0)
        net = DGTNetwork(6, 2, 4, generator=torch.Generator().manual_seed(0))
        real = ClassificationOracle(torch.as_tensor(y), order_of(64))
        est = EpsilonGreedy(0.3, 4)
        draws = est.draws(64, torch.Generator().manual_seed(5))
        learn(lambda x, net=net: row_forward(net, x), net.parameters(), torch.tensor(X, dtype=torch.float32),
              order_of(64), Blind(real.loss) if blind else real, est, draws, learning_rate=1e-2, accumulate=4,
              eval_every=16, record=lambda **_: True)
        runs.append([p.detach().clone() for p in net.parameters()])
    for a, b in zip(*runs):
        assert torch.equal(a, b)


# ------------------------------------------------------------------ the learner's batching is exact
@pytest.mark.parametrize("quantizer", ["scaled", "plain"])
def test_four_rounds_as_one_batch_give_the_gradient_of_four_single_round_passes(quantizer):
    gen = torch.Generator().manual_seed(0)
    net = DGTNetwork(5, 3, 3, quantizer=quantizer, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        net.layers[0].bias.normal_(0, 0.3, generator=gen)
    X = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    est = EpsilonGreedy(0.3, 3)
    draws = est.draws(4, gen)
    labels = torch.tensor([0, 1, 2, 1])
    batched = copy.deepcopy(net)
    surrogate, _ = est(row_forward(batched, X), 0, draws, ClassificationOracle(labels, order_of(4)))
    (surrogate / 4).backward()
    oracle = ClassificationOracle(labels, order_of(4))
    for t in range(4):  # the paper's batch 1: the network's own forward, one backward per round
        theta, _ = net(X[t:t + 1])
        surrogate, _ = est(theta, t, [d[t:t + 1] for d in draws], oracle)
        (surrogate / 4).backward()
    for a, b in zip(batched.parameters(), net.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-14)


def test_the_learner_equals_a_round_by_round_loop_and_records_inside_a_step_change_nothing():
    X, y = oblique_tree_data(48, seed=4)
    Xt = torch.tensor(X, dtype=torch.float64)
    start = DGTNetwork(6, 3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    est = EpsilonGreedy(0.3, 4)
    order = torch.as_tensor(stream_order(48, 96, np.random.default_rng(0)))
    draws = list(est.draws(96, torch.Generator().manual_seed(1)))
    labels = torch.as_tensor(y)

    reference = copy.deepcopy(start)
    optimizer = torch.optim.RMSprop(reference.parameters(), lr=1e-2, alpha=0.99, eps=1e-5)
    oracle = ClassificationOracle(labels, order)
    for t in range(96):
        theta, _ = reference(Xt[order[t:t + 1]])
        surrogate, _ = est(theta, t, [d[t:t + 1] for d in draws], oracle)
        (surrogate / 4).backward()
        if (t + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
    for eval_every in (96, 6):  # 6: records split the 4-round steps
        net = copy.deepcopy(start)
        records: list[dict] = []
        info = learn(lambda x, net=net: row_forward(net, x), net.parameters(), Xt, order,
                     ClassificationOracle(labels, order), est, draws, learning_rate=1e-2, accumulate=4,
                     eval_every=eval_every, record=lambda records=records, **r: records.append(r) or True)
        assert info["steps"] == 24 and records[-1]["round"] == 96
        for a, b in zip(net.parameters(), reference.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)


# ------------------------------------------------------------------ T16 and the comparisons
@pytest.fixture(scope="module")
def classification():
    return split("classification")


@pytest.fixture(scope="module")
def t16(classification):
    """DGT-Bandit at the paper's settings (h = 4, lr 1e-3, δ = 0.3, 4-round steps), 20k rounds,
    with the generating tree as the regret comparator."""
    X, y, X_test, y_test = classification
    model = DGTBanditClassifier(depth=4, n_rounds=N_TRAIN, eval_every=1000, device="cpu", random_state=0)
    return model.fit(X, y, eval_set=(X_test, y_test), comparator=oblique_tree(seed=0))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_t16_bandit_feedback_teaches_the_tree(t16):
    history = t16.history_
    assert len(history) == 20 and history[0]["round"] == 1000 and history[-1]["round"] == N_TRAIN
    assert t16.n_queries_ == N_TRAIN
    assert history[-1]["val_score"] >= history[0]["val_score"] + 0.10
    assert history[-1]["reward"] >= history[0]["reward"] + 0.10
    assert history[-1]["reward"] <= 0.775 + 0.03  # the ceiling under δ = 0.3 exploration with K = 4


def test_regret_against_the_generating_tree_decreases_and_matches_regret_curve(t16, classification):
    X, y, _, _ = classification
    history = t16.history_
    assert history[-1]["regret"] < history[0]["regret"] - 0.05
    assert all(r["regret"] == pytest.approx(r["avg_loss"], abs=1e-12) for r in history)  # the comparator is exact
    wrong = (oblique_tree(seed=0).predict(X) != y).astype(float)
    assert np.allclose(regret_curve(history, wrong[t16.stream_]), [r["regret"] for r in history])
    shifted = np.full(N_TRAIN, 0.25)
    assert np.allclose(regret_curve(history, shifted), [r["avg_loss"] - 0.25 for r in history])


def test_the_fitted_tree_is_the_network_of_the_last_record(t16, classification):
    _, _, X_test, y_test = classification
    accuracy = float(np.mean(t16.predict(X_test) == y_test))
    assert accuracy == pytest.approx(t16.history_[-1]["val_score"], abs=1e-3)
    proba = t16.predict_proba(X_test)
    assert np.allclose(proba.sum(axis=1), 1) and np.array_equal(t16.classes_[proba.argmax(axis=1)], t16.predict(X_test))
    tree = t16.to_tree()
    assert tree.meta["feedback"] == "bandit" and tree.family == "dgt_bandit"
    assert any("20000 loss queries" in note for note in tree.meta["notes"])


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_tree_beats_the_linear_baseline_on_the_same_query_budget(classification):
    """Same protocol, estimator, optimiser and 20k queries; lr 1e-2 for both (at the paper's 1e-3 the
    tree is still learning at 20k rounds)."""
    X, y, X_test, y_test = classification
    common = dict(learning_rate=1e-2, n_rounds=N_TRAIN, device="cpu", random_state=0)
    tree = DGTBanditClassifier(depth=4, **common).fit(X, y, eval_set=(X_test, y_test))
    linear = LinearBanditClassifier(**common).fit(X, y, eval_set=(X_test, y_test))
    assert tree.n_queries_ == linear.n_queries_ == N_TRAIN
    assert tree.history_[-1]["val_score"] >= linear.history_[-1]["val_score"] + 0.05
    assert np.mean(linear.predict(X_test) == y_test) == pytest.approx(linear.history_[-1]["val_score"], abs=1e-3)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_two_point_regression_beats_the_linear_baseline_and_reports_rmse_in_data_units():
    X, y, X_test, y_test = split("regression")
    y, y_test = 10 * y + 3, 10 * y_test + 3  # data units other than [0, 1]
    common = dict(estimator="two_point", learning_rate=1e-2, n_rounds=N_TRAIN, device="cpu", random_state=0)
    tree = DGTBanditRegressor(depth=3, **common).fit(X, y, eval_set=(X_test, y_test))
    linear = LinearBanditRegressor(**common).fit(X, y, eval_set=(X_test, y_test))
    assert tree.n_queries_ == linear.n_queries_ == 2 * N_TRAIN
    last = tree.history_[-1]
    assert last["val_rmse"] <= linear.history_[-1]["val_rmse"] - 0.3  # data units: 10× the scaled RMSE
    assert last["val_rmse"] == pytest.approx(np.sqrt(last["val_loss"]) * tree.target_range_[0], rel=1e-5)
    rmse = float(np.sqrt(np.mean((tree.predict(X_test) - y_test) ** 2)))
    assert rmse == pytest.approx(last["val_rmse"], rel=1e-3)
    assert {"played_loss", "avg_loss", "val_score", "val_rmse", "val_loss", "queries"} <= set(last)
    assert "reward" not in last


# ------------------------------------------------------------------ determinism, cancel, model files
@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("cls", [DGTBanditClassifier, DGTBanditRegressor, LinearBanditRegressor])
def test_the_same_seed_gives_identical_records_and_models(cls):
    task = "classification" if cls is DGTBanditClassifier else "regression"
    X, y = oblique_tree_data(600, task=task, seed=5)
    fits = [cls(n_rounds=800, device="cpu", random_state=7).fit(X[:500], y[:500], eval_set=(X[500:], y[500:]))
            for _ in range(2)]
    strip = [[{k: v for k, v in r.items() if k != "elapsed_s"} for r in f.history_] for f in fits]
    assert strip[0] == strip[1] and len(strip[0]) == 50
    assert np.array_equal(fits[0].predict(X), fits[1].predict(X))
    other = cls(n_rounds=800, device="cpu", random_state=8).fit(X[:500], y[:500])
    assert not np.array_equal(other.stream_, fits[0].stream_)


class StopAt(Callback):
    def __init__(self, n):
        self.n, self.seen = n, 0

    def on_epoch_end(self, estimator, **kwargs):
        self.seen += 1
        if self.seen == self.n:
            raise TrainingCancelled()


def test_a_cancelled_fit_leaves_a_usable_model_that_saves_and_loads(tmp_path):
    X, y = oblique_tree_data(400, task="regression", seed=6)
    model = DGTBanditRegressor(n_rounds=4000, eval_every=100, device="cpu").fit(X, y, callbacks=[StopAt(3)])
    assert model.stopped_early_ and len(model.history_) == 3 and model.n_rounds_ == 300
    assert model.n_queries_ == 600
    pred = model.predict(X)
    assert pred.shape == (400,) and np.all(np.isfinite(pred))
    loaded = load_model(save_model(model, tmp_path / "m"))
    assert np.array_equal(loaded.predict(X), pred) and loaded.n_queries_ == 600
    assert loaded.to_tree().meta["notes"] == model.to_tree().meta["notes"]


def test_parameters_are_checked_and_multi_output_regression_works():
    X, y = oblique_tree_data(200, task="regression", seed=7)
    Y = np.column_stack([y, 2 * y])
    for est in ("two_point", "one_point"):
        model = DGTBanditRegressor(depth=2, estimator=est, loss="huber", n_rounds=200, device="cpu").fit(X, Y)
        assert model.predict(X).shape == (200, 2) and model.n_queries_ == (2 if est == "two_point" else 1) * 200
    with pytest.raises(Exception, match="estimator"):
        DGTBanditRegressor(estimator="three_point").fit(X, y)
    with pytest.raises(ValueError, match="estimator"):
        LinearBanditRegressor(estimator="three_point").fit(X, y)
